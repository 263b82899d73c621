// PostgresRunStore's FleetStore and CommitFeed: the routers' leases (the `routers` table, run
// owners and epochs) and the LISTEN connection that passes on other routers' commits.
#include <poll.h>
#include <postgresql/libpq-fe.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/random/random.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "rein/v1/types.pb.h"
#include "router_service/store/pg_session.h"
#include "router_service/store/postgres_run_store.h"
#include "router_service/store/postgres_schema.h"
#include "router_service/store/store_codec.h"

namespace rein {

using postgres_schema::kChannel;
using postgres_schema::kLive;
using postgres_schema::kRunColumns;

std::string PostgresRunStore::router_id() const {
  absl::MutexLock lock(&mu_);
  return router_id_;
}

absl::Status PostgresRunStore::JoinFleet(const std::string& router_id, absl::Duration ttl) {
  RETURN_IF_ERROR(CheckRouterLease(router_id, ttl));
  std::string incarnation;
  {
    static absl::Mutex gen_mu(absl::kConstInit);
    static absl::BitGen* gen = new absl::BitGen();
    absl::MutexLock lock(&gen_mu);
    incarnation = absl::StrFormat("%016x", absl::Uniform<uint64_t>(*gen));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<PgTransaction> tx, PgTransaction::Begin(pool_.get(), false));
  // Rows of routers gone for a day that own no unfinished run are of no use to anyone.
  RETURN_IF_ERROR(tx->Exec("DELETE FROM routers WHERE heartbeat < clock_timestamp() - "
                           "interval '1 day' AND NOT EXISTS (SELECT 1 FROM runs WHERE owner = "
                           "routers.router_id AND stage NOT IN (7, 8, 9))",
                           PgParams(), "forgetting old routers")
                      .status());
  // Taking the id is allowed only when no live router holds it.
  ASSIGN_OR_RETURN(
      PgResult joined,
      tx->Exec(
          std::string("INSERT INTO routers AS r (router_id, incarnation, heartbeat, ttl_us) "
                      "VALUES ($1, $2, clock_timestamp(), $3) ON CONFLICT (router_id) DO "
                      "UPDATE SET incarnation = EXCLUDED.incarnation, heartbeat = "
                      "EXCLUDED.heartbeat, ttl_us = EXCLUDED.ttl_us WHERE r.heartbeat + r.ttl_us * "
                      "interval '1 microsecond' <= clock_timestamp()"),
          PgParams().Text(router_id).Text(incarnation).Int(absl::ToInt64Microseconds(ttl)),
          "joining the routers"));
  if (absl::string_view(PQcmdTuples(joined.get())) != "1") {
    return absl::FailedPreconditionError(absl::StrCat(
        "router_id ", router_id, ": a live router already uses this id on PostgreSQL ", target(),
        " (two routers with one --router_id are refused; give each its own, or wait for the "
        "other's lease to expire)"));
  }
  RETURN_IF_ERROR(tx->Commit());
  absl::MutexLock lock(&mu_);
  router_id_ = router_id;
  incarnation_ = incarnation;
  return absl::OkStatus();
}

absl::Status PostgresRunStore::RenewLease() {
  std::string me, incarnation;
  {
    absl::MutexLock lock(&mu_);
    me = router_id_;
    incarnation = incarnation_;
  }
  if (me.empty()) return absl::FailedPreconditionError("RenewLease before JoinFleet");
  ASSIGN_OR_RETURN(std::unique_ptr<PgTransaction> tx, PgTransaction::Autocommit(lease_pool_.get()));
  ASSIGN_OR_RETURN(PgResult renewed,
                   tx->Exec("UPDATE routers SET heartbeat = clock_timestamp() "
                            "WHERE router_id = $1 AND incarnation = $2",
                            PgParams().Text(me).Text(incarnation), "renewing the lease"));
  if (absl::string_view(PQcmdTuples(renewed.get())) != "1") {
    return absl::FailedPreconditionError(
        absl::StrCat("router_id ", me,
                     ": another router has joined under this id since this "
                     "router's lease expired; this router cannot renew"));
  }
  return absl::OkStatus();
}

absl::Status PostgresRunStore::LeaveFleet() {
  std::string me, incarnation;
  {
    absl::MutexLock lock(&mu_);
    me = router_id_;
    incarnation = incarnation_;
  }
  if (me.empty()) return absl::OkStatus();
  ASSIGN_OR_RETURN(std::unique_ptr<PgTransaction> tx, PgTransaction::Autocommit(lease_pool_.get()));
  return tx
      ->Exec(
          "UPDATE routers SET heartbeat = '-infinity' "
          "WHERE router_id = $1 AND incarnation = $2",
          PgParams().Text(me).Text(incarnation), "leaving the routers")
      .status();
}

absl::StatusOr<std::vector<rein::v1::Run>> PostgresRunStore::ClaimRuns(bool include_mine) {
  const std::string me = router_id();
  if (me.empty()) return absl::FailedPreconditionError("ClaimRuns before JoinFleet");
  ASSIGN_OR_RETURN(std::unique_ptr<PgTransaction> tx,
                   PgTransaction::Begin(lease_pool_.get(), false));
  std::vector<rein::v1::Run> claimed;
  const std::string returning = absl::StrCat(" RETURNING ", kRunColumns, ", created_us");
  if (include_mine) {
    ASSIGN_OR_RETURN(PgResult mine,
                     tx->Exec(absl::StrCat("UPDATE runs SET lease_epoch = lease_epoch + 1 "
                                           "WHERE owner = $1 AND stage NOT IN (7, 8, 9)",
                                           returning),
                              PgParams().Text(me), "claiming this router's runs"));
    RETURN_IF_ERROR(PgCheckColumns(mine.get(), {REIN_RUN_COLUMN_TYPES, kInt8Oid}, target(),
                                   "claiming this router's runs"));
    ASSIGN_OR_RETURN(claimed, ParseRunRows(mine.get(), "claiming this router's runs"));
  }
  // The runs whose owner is not live, shared out: ceil(orphans / live routers) each.
  const std::string orphaned = absl::StrCat(
      "stage NOT IN (7, 8, 9) AND (owner IS NULL OR NOT EXISTS (SELECT 1 FROM routers WHERE "
      "router_id = runs.owner AND ",
      kLive, "))");
  ASSIGN_OR_RETURN(PgResult counts,
                   tx->Exec(absl::StrCat("SELECT (SELECT count(*) FROM runs WHERE ", orphaned,
                                         "), (SELECT count(*) FROM routers WHERE ", kLive, ")"),
                            PgParams(), "counting orphaned runs"));
  RETURN_IF_ERROR(
      PgCheckColumns(counts.get(), {kInt8Oid, kInt8Oid}, target(), "counting orphaned runs"));
  const int64_t orphans = PgInt(counts.get(), 0, 0);
  const int64_t live = std::max<int64_t>(1, PgInt(counts.get(), 0, 1));
  if (orphans > 0) {
    const int64_t quota = (orphans + live - 1) / live;
    const std::string what = "claiming orphaned runs";
    ASSIGN_OR_RETURN(
        PgResult taken,
        tx->Exec(
            absl::StrCat("UPDATE runs SET owner = $1, lease_epoch = lease_epoch + 1 "
                         "WHERE run_id IN (SELECT run_id FROM runs WHERE ",
                         orphaned, " ORDER BY created_us, run_id LIMIT $2 FOR UPDATE SKIP LOCKED)",
                         returning),
            PgParams().Text(me).Int(quota), what));
    RETURN_IF_ERROR(PgCheckColumns(taken.get(), {REIN_RUN_COLUMN_TYPES, kInt8Oid}, target(), what));
    ASSIGN_OR_RETURN(std::vector<rein::v1::Run> runs, ParseRunRows(taken.get(), what));
    for (auto& run : runs) claimed.push_back(std::move(run));
  }
  RETURN_IF_ERROR(tx->Commit());
  std::sort(claimed.begin(), claimed.end(), [](const rein::v1::Run& a, const rein::v1::Run& b) {
    return std::make_pair(a.created_at().seconds(), a.created_at().nanos()) <
           std::make_pair(b.created_at().seconds(), b.created_at().nanos());
  });
  return claimed;
}

absl::StatusOr<std::map<std::string, int64_t>> PostgresRunStore::OwnedRunVersions() {
  const std::string me = router_id();
  std::map<std::string, int64_t> versions;
  if (me.empty()) return versions;
  ASSIGN_OR_RETURN(std::unique_ptr<PgTransaction> tx, PgTransaction::Autocommit(lease_pool_.get()));
  ASSIGN_OR_RETURN(PgResult result, tx->Exec("SELECT run_id, version FROM runs "
                                             "WHERE owner = $1 AND stage NOT IN (7, 8, 9)",
                                             PgParams().Text(me), "listing owned runs"));
  RETURN_IF_ERROR(
      PgCheckColumns(result.get(), {kTextOid, kInt8Oid}, target(), "listing owned runs"));
  for (int row = 0; row < PQntuples(result.get()); ++row) {
    versions[PgBytes(result.get(), row, 0)] = PgInt(result.get(), row, 1);
  }
  return versions;
}

void PostgresRunStore::SubscribeCommits(std::function<void(const CommitNotice&)> on_commit) {
  if (listener_.joinable()) return;
  on_commit_ = std::move(on_commit);
  listener_ = std::thread([this] { ListenLoop(); });
}

namespace {

// "<last_seq> <ended 0|1> <router_id> <run_id>" (run_id last: it may hold spaces).
std::optional<CommitNotice> ParseNotice(absl::string_view payload) {
  std::vector<absl::string_view> parts = absl::StrSplit(payload, absl::MaxSplits(' ', 3));
  CommitNotice notice;
  if (parts.size() != 4 || !absl::SimpleAtoi(parts[0], &notice.last_seq) ||
      (parts[1] != "0" && parts[1] != "1") || parts[3].empty()) {
    return std::nullopt;
  }
  notice.ended = parts[1] == "1";
  notice.router_id = parts[2] == "-" ? "" : std::string(parts[2]);
  notice.run_id = std::string(parts[3]);
  return notice;
}

}  // namespace

void PostgresRunStore::ListenLoop() {
  const std::string me = router_id();
  auto stopping = [this] {
    absl::MutexLock lock(&mu_);
    return stop_listening_;
  };
  // Waits up to `d` or until the store closes; returns whether it is closing.
  auto pause = [this](absl::Duration d) {
    absl::MutexLock lock(&mu_);
    mu_.AwaitWithTimeout(absl::Condition(&stop_listening_), d);
    return stop_listening_;
  };
  bool logged = false;
  while (!stopping()) {
    absl::StatusOr<PGconn*> opened = pool_->Connect();
    if (!opened.ok()) {
      if (!logged) LogError("LISTEN connection lost", {{"error", opened.status().ToString()}});
      logged = true;
      if (pause(absl::Seconds(1))) return;
      continue;
    }
    PGconn* conn = *opened;
    PgResult listening(PQexec(conn, absl::StrCat("LISTEN ", kChannel).c_str()));
    if (listening == nullptr || PQresultStatus(listening.get()) != PGRES_COMMAND_OK) {
      PQfinish(conn);
      if (pause(absl::Seconds(1))) return;
      continue;
    }
    if (logged) LogInfo("LISTEN connection back", {{"store", target()}});
    logged = false;
    while (!stopping()) {
      pollfd fd{PQsocket(conn), POLLIN, 0};
      const int ready = poll(&fd, 1, /*timeout=*/200);
      if (ready < 0 && errno != EINTR) break;
      if (ready > 0 && PQconsumeInput(conn) == 0) break;  // the connection is gone
      while (PGnotify* notify = PQnotifies(conn)) {
        std::optional<CommitNotice> notice = ParseNotice(notify->extra);
        PQfreemem(notify);
        if (notice.has_value() && (me.empty() || notice->router_id != me)) on_commit_(*notice);
      }
      if (PQstatus(conn) == CONNECTION_BAD) break;
    }
    PQfinish(conn);
    if (!stopping()) {
      LogError("LISTEN connection lost", {{"store", target()}});
      logged = true;
      if (pause(absl::Milliseconds(500))) return;
    }
  }
}

}  // namespace rein
