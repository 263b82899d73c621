// PostgresRunStore: the RunStore in a PostgreSQL database, for one or several routers (its
// FleetStore and CommitFeed are postgres_fleet.cc).
#include "router_service/store/postgres_run_store.h"

#include <postgresql/libpq-fe.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/limits.h"
#include "common/status_macros.h"
#include "common/status_reason.h"
#include "google/protobuf/timestamp.pb.h"
#include "rein/v1/types.pb.h"
#include "router_service/store/pg_session.h"
#include "router_service/store/postgres_schema.h"
#include "router_service/store/store_codec.h"

namespace rein {

using postgres_schema::kChannel;
using postgres_schema::kRunColumns;
using postgres_schema::kRunColumnTypes;
using postgres_schema::kSchema;
using postgres_schema::kSchemaLockKey;
using postgres_schema::kStep4;

namespace {

constexpr int kDefaultPageSize = 50;
constexpr int kMaxPageSize = 1000;
constexpr size_t kMaxPageBytes = 3 << 20;

}  // namespace

PostgresRunStore::PostgresRunStore(std::unique_ptr<PgPool> pool, std::unique_ptr<PgPool> lease_pool)
    : pool_(std::move(pool)), lease_pool_(std::move(lease_pool)) {}

PostgresRunStore::~PostgresRunStore() {
  {
    absl::MutexLock lock(&mu_);
    stop_listening_ = true;
  }
  if (listener_.joinable()) listener_.join();
}

absl::StatusOr<std::unique_ptr<PostgresRunStore>> PostgresRunStore::Open(const std::string& url,
                                                                         const Options& options) {
  PgPool::Options pool_options;
  pool_options.max_connections = options.max_connections;
  pool_options.connect_timeout = options.connect_timeout;
  ASSIGN_OR_RETURN(std::unique_ptr<PgPool> pool, PgPool::Create(url, pool_options));
  pool_options.max_connections = 1;
  ASSIGN_OR_RETURN(std::unique_ptr<PgPool> lease_pool, PgPool::Create(url, pool_options));
  std::unique_ptr<PostgresRunStore> store(
      new PostgresRunStore(std::move(pool), std::move(lease_pool)));
  RETURN_IF_ERROR(store->Initialize());
  return store;
}

const std::string& PostgresRunStore::target() const { return pool_->target(); }

absl::Status PostgresRunStore::Initialize() {
  ASSIGN_OR_RETURN(std::unique_ptr<PgTransaction> tx, PgTransaction::Begin(pool_.get(), false));
  // Routers starting together would race on CREATE TABLE IF NOT EXISTS; one at a time.
  RETURN_IF_ERROR(tx->Exec("SELECT pg_advisory_xact_lock($1)", PgParams().Int(kSchemaLockKey),
                           "locking the schema")
                      .status());
  RETURN_IF_ERROR(
      tx->Run("CREATE TABLE IF NOT EXISTS schema_version ("
              "id BIGINT PRIMARY KEY CHECK (id = 1), version BIGINT NOT NULL)",
              "creating schema_version"));
  int64_t version = 0;
  {
    ASSIGN_OR_RETURN(PgResult result, tx->Exec("SELECT version FROM schema_version WHERE id = 1",
                                               PgParams(), "reading schema_version"));
    RETURN_IF_ERROR(PgCheckColumns(result.get(), {kInt8Oid}, target(), "reading schema_version"));
    if (PQntuples(result.get()) == 1) version = PgInt(result.get(), 0, 0);
  }
  // Version 1 (no leases) is migrated in place by kSchema's ALTERs below, the later versions
  // step by step, each step on its own.
  if (version < 0 || version > kSchemaVersion) {
    return absl::FailedPreconditionError(
        absl::StrCat("PostgreSQL database ", target(), " has schema version ", version,
                     "; this binary writes version ", kSchemaVersion,
                     " and does not migrate (use another database)"));
  }
  RETURN_IF_ERROR(tx->Run(kSchema, "creating tables"));
  const int64_t stored = version;
  if (version < 2) version = 2;  // kSchema is layout 2
  if (version < 4) {
    RETURN_IF_ERROR(tx->Run(postgres_schema::kStep4, "migrating the layout to version 4"));
    version = 4;
  }
  if (version < 5) {
    RETURN_IF_ERROR(tx->Run(postgres_schema::kStep5Outbox, "applying schema step 5"));
    version = 5;
  }
  if (version != stored) {
    RETURN_IF_ERROR(tx->Exec("INSERT INTO schema_version (id, version) VALUES (1, $1) "
                             "ON CONFLICT (id) DO UPDATE SET version = EXCLUDED.version",
                             PgParams().Int(version), "writing schema_version")
                        .status());
  }
  return tx->Commit();
}

absl::Status PostgresRunStore::ParseStoredRun(const std::string& base, const std::string& tail,
                                              const std::string& run_id, rein::v1::Run* run) const {
  // `base` is the run without its state and updated_at; `tail` holds just those two.
  if (!run->ParseFromString(base) || !run->MergeFromString(tail) || run->run_id() != run_id) {
    return absl::DataLossError(
        absl::StrCat("PostgreSQL database ", target(), ": the stored run ", run_id, " is corrupt"));
  }
  return absl::OkStatus();
}

namespace {

// The events' bodies without run_id and seq, which are columns of their own (ReadEvents sets
// them from those): a commit writes a body before the statement knows its seq.
absl::StatusOr<std::vector<std::string>> EventBodies(const std::string& run_id,
                                                     std::vector<rein::v1::RunEvent>& events) {
  std::vector<std::string> bodies;
  bodies.reserve(events.size());
  for (size_t i = 0; i < events.size(); ++i) {
    events[i].clear_run_id();
    events[i].clear_seq();
    if (!events[i].SerializeToString(&bodies.emplace_back())) {
      return absl::InvalidArgumentError(
          absl::StrCat("event ", i, " of run ", run_id, " cannot be serialized (too large)"));
    }
  }
  return bodies;
}

// Gives `events` (as stored) their run_id and seq first_seq, first_seq+1, ...
void NumberEvents(const std::string& run_id, int64_t first_seq,
                  std::vector<rein::v1::RunEvent>& events) {
  for (size_t i = 0; i < events.size(); ++i) {
    events[i].set_run_id(run_id);
    events[i].set_seq(first_seq + static_cast<int64_t>(i));
  }
}

// The commit statement (see CommitChecked), one text per lease and snapshot, so each is
// prepared once per connection under its name. Parameters: $1 stage, $2 reason, $3 version,
// $4 event count, $5 updated_us, $6 state, $7 run_id, $8 expected version, $9 event bodies,
// $10 channel, $11 the notice after last_seq; with a lease $12 owner, $13 epoch; with a
// snapshot then its version, iteration and state.
struct CommitStatement {
  std::string name;
  std::string sql;
};

const CommitStatement& CommitSql(bool lease, bool snapshot) {
  static const auto* const statements = [] {
    auto* all = new std::vector<CommitStatement>();
    for (int i = 0; i < 4; ++i) {
      const bool with_lease = (i & 1) != 0;
      const bool with_snapshot = (i & 2) != 0;
      int n = 11;
      std::string sql =
          "WITH u AS (UPDATE runs SET stage = $1, reason = $2, version = $3, "
          "last_seq = last_seq + $4, updated_us = $5, state = $6 WHERE run_id = $7 AND "
          "version = $8";
      if (with_lease) {
        absl::StrAppend(&sql, " AND owner = $", n + 1, " AND lease_epoch = $", n + 2);
        n += 2;
      }
      absl::StrAppend(&sql,
                      " RETURNING last_seq), "
                      "e AS (INSERT INTO events (run_id, seq, body) "
                      "SELECT $7, u.last_seq - $4 + b.ord, b.body "
                      "FROM u, unnest($9::bytea[]) WITH ORDINALITY AS b (body, ord)), ");
      if (with_snapshot) {
        // No ON CONFLICT: a second snapshot of a version fails the statement.
        absl::StrAppend(&sql, "s AS (INSERT INTO snapshots (run_id, version, iteration, state) ",
                        "SELECT $7, $", n + 1, ", $", n + 2, ", $", n + 3, " FROM u), ");
      }
      absl::StrAppend(&sql,
                      "n AS (SELECT pg_notify($10, u.last_seq::text || $11) FROM u) "
                      "SELECT u.last_seq FROM u, n");
      all->push_back({absl::StrCat("rein_commit_", with_lease ? "l" : "", with_snapshot ? "s" : ""),
                      std::move(sql)});
    }
    return all;
  }();
  return (*statements)[(lease ? 1 : 0) | (snapshot ? 2 : 0)];
}

}  // namespace

absl::StatusOr<CreateResult> PostgresRunStore::CreateRun(const rein::v1::Run& run,
                                                         std::vector<rein::v1::RunEvent> events) {
  if (run.run_id().empty()) return absl::InvalidArgumentError("run.run_id is empty");
  ASSIGN_OR_RETURN(StoredRunParts parts, SplitRun(run));
  const int64_t created_us = parts.created_us;
  const int64_t updated_us = parts.updated_us;
  const std::string& blob = parts.base;
  const std::string& tail_blob = parts.tail;

  const std::string namespace_name(NamespaceOrDefault(run.spec().namespace_()));
  ASSIGN_OR_RETURN(std::unique_ptr<PgTransaction> tx, PgTransaction::Begin(pool_.get(), false));
  PgParams params;
  params.Text(run.run_id());
  if (run.request_id().empty()) {
    params.Null(kTextOid);
  } else {
    params.Text(run.request_id());
  }
  params.Int(run.state().stage())
      .Int(run.state().outcome().reason())
      .Int(run.state().version())
      .Int(static_cast<int64_t>(events.size()))
      .Int(created_us)
      .Int(updated_us)
      .Bytes(blob)
      .Bytes(tail_blob);
  if (run.owner().empty()) {
    params.Null(kTextOid).Int(0);
  } else {
    params.Text(run.owner()).Int(1);
  }
  params.Text(namespace_name);
  // DO NOTHING on either unique key: a concurrent creator with the same key is waited for.
  ASSIGN_OR_RETURN(PgResult inserted,
                   tx->Exec("INSERT INTO runs (run_id, request_id, stage, reason, version, "
                            "last_seq, created_us, updated_us, run, state, owner, lease_epoch, "
                            "namespace) "
                            "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) "
                            "ON CONFLICT DO NOTHING",
                            params, absl::StrCat("writing run ", run.run_id())));
  if (absl::string_view(PQcmdTuples(inserted.get())) == "1") {
    ASSIGN_OR_RETURN(std::vector<std::string> bodies, EventBodies(run.run_id(), events));
    if (!bodies.empty()) {
      RETURN_IF_ERROR(tx->Exec("INSERT INTO events (run_id, seq, body) SELECT $1, b.ord, b.body "
                               "FROM unnest($2::bytea[]) WITH ORDINALITY AS b (body, ord)",
                               PgParams().Text(run.run_id()).BytesArray(bodies),
                               absl::StrCat("writing events of run ", run.run_id()))
                          .status());
    }
    RETURN_IF_ERROR(tx->Commit());
    CreateResult result{run, /*created=*/true};
    result.run.set_lease_epoch(run.owner().empty() ? 0 : 1);
    return result;
  }

  // Nothing inserted: the request_id names a run (return it) or the run_id is taken.
  if (!run.request_id().empty()) {
    ASSIGN_OR_RETURN(
        PgResult existing,
        tx->Exec(absl::StrCat("SELECT ", kRunColumns,
                              " FROM runs WHERE namespace = $1 AND request_id = $2"),
                 PgParams().Text(namespace_name).Text(run.request_id()), "looking up request_id"));
    RETURN_IF_ERROR(
        PgCheckColumns(existing.get(), kRunColumnTypes, target(), "looking up request_id"));
    ASSIGN_OR_RETURN(std::vector<rein::v1::Run> runs,
                     ParseRunRows(existing.get(), "looking up request_id"));
    if (runs.size() == 1) {
      RETURN_IF_ERROR(tx->Commit());
      return CreateResult{std::move(runs[0]), /*created=*/false};
    }
  }
  return absl::AlreadyExistsError(absl::StrCat("run ", run.run_id(), " already exists"));
}

absl::StatusOr<rein::v1::Run> PostgresRunStore::GetRun(const std::string& run_id) {
  const std::string what = absl::StrCat("reading run ", run_id);
  // One statement reads one consistent row: no transaction around it, one round trip. A read
  // changes nothing, so one that lost its connection (the server closed it just then) is
  // tried again once, on another.
  absl::StatusOr<PgResult> result;
  for (int attempt = 0; attempt < 2; ++attempt) {
    ASSIGN_OR_RETURN(std::unique_ptr<PgTransaction> tx, PgTransaction::Autocommit(pool_.get()));
    result = tx->Exec(absl::StrCat("SELECT ", kRunColumns, " FROM runs WHERE run_id = $1"),
                      PgParams().Text(run_id), what);
    if (!absl::IsUnavailable(result.status())) break;
  }
  if (!result.ok()) return result.status();
  RETURN_IF_ERROR(PgCheckColumns(result->get(), kRunColumnTypes, target(), what));
  ASSIGN_OR_RETURN(std::vector<rein::v1::Run> runs, ParseRunRows(result->get(), what));
  if (runs.empty()) return absl::NotFoundError(absl::StrCat("no run ", run_id));
  return std::move(runs[0]);
}

absl::StatusOr<rein::v1::Run> PostgresRunStore::FindRunByRequestId(
    const std::string& namespace_name, const std::string& request_id) {
  const std::string what = "looking up request_id";
  ASSIGN_OR_RETURN(std::unique_ptr<PgTransaction> tx, PgTransaction::Autocommit(pool_.get()));
  ASSIGN_OR_RETURN(
      PgResult result,
      tx->Exec(absl::StrCat("SELECT ", kRunColumns,
                            " FROM runs WHERE namespace = $1 AND request_id = $2"),
               PgParams().Text(std::string(NamespaceOrDefault(namespace_name))).Text(request_id),
               what));
  RETURN_IF_ERROR(PgCheckColumns(result.get(), kRunColumnTypes, target(), what));
  ASSIGN_OR_RETURN(std::vector<rein::v1::Run> runs, ParseRunRows(result.get(), what));
  if (runs.empty()) return absl::NotFoundError(absl::StrCat("no run with request_id ", request_id));
  return std::move(runs[0]);
}

absl::StatusOr<std::vector<rein::v1::RunEvent>> PostgresRunStore::Commit(
    const std::string& run_id, int64_t expected_version, const rein::v1::RunState& new_state,
    std::vector<rein::v1::RunEvent> events, const std::optional<Snapshot>& snapshot,
    absl::Time now) {
  return CommitChecked(run_id, std::nullopt, expected_version, new_state, std::move(events),
                       snapshot, now);
}

absl::StatusOr<std::vector<rein::v1::RunEvent>> PostgresRunStore::CommitOwned(
    const std::string& run_id, int64_t lease_epoch, int64_t expected_version,
    const rein::v1::RunState& new_state, std::vector<rein::v1::RunEvent> events,
    const std::optional<Snapshot>& snapshot, absl::Time now) {
  return CommitChecked(run_id, lease_epoch, expected_version, new_state, std::move(events),
                       snapshot, now);
}

absl::StatusOr<std::vector<rein::v1::RunEvent>> PostgresRunStore::CommitChecked(
    const std::string& run_id, std::optional<int64_t> lease_epoch, int64_t expected_version,
    const rein::v1::RunState& new_state, std::vector<rein::v1::RunEvent> events,
    const std::optional<Snapshot>& snapshot, absl::Time now, PgTransaction* batch) {
  const std::string me = router_id();
  if (lease_epoch.has_value() && me.empty()) {
    return absl::FailedPreconditionError("CommitOwned before JoinFleet");
  }
  if (new_state.version() != expected_version + 1) {
    return absl::InvalidArgumentError(absl::StrCat("new_state.version is ", new_state.version(),
                                                   "; a commit on version ", expected_version,
                                                   " must store version ", expected_version + 1));
  }
  ASSIGN_OR_RETURN(const google::protobuf::Timestamp updated_at, ToTimestamp(now, "now"));
  ASSIGN_OR_RETURN(const int64_t updated_us, TimestampMicros(updated_at, "now"));
  // Only the state part of the row changes: the rest of the run was written once.
  ASSIGN_OR_RETURN(const std::string blob, StateTail(new_state, updated_at));
  const int64_t count = static_cast<int64_t>(events.size());

  ASSIGN_OR_RETURN(std::vector<std::string> bodies, EventBodies(run_id, events));
  const bool ended = new_state.stage() == rein::v1::FINISHED ||
                     new_state.stage() == rein::v1::FAILED ||
                     new_state.stage() == rein::v1::CANCELLED;

  // One statement, so one round trip: the row's update (checked against the expected version
  // and, with a lease epoch, the fencing token, both ordered by the row lock), its events, the
  // snapshot if any, and the notice to the listeners, delivered when (and only if) the
  // transaction commits. A version or lease mismatch updates no row, and then nothing else is
  // written either (every other part reads the update's row). Outside a batch the statement is
  // a transaction of its own.
  const CommitStatement& statement = CommitSql(lease_epoch.has_value(), snapshot.has_value());
  PgParams params;
  params.Int(new_state.stage())
      .Int(new_state.outcome().reason())
      .Int(new_state.version())
      .Int(count)
      .Int(updated_us)
      .Bytes(blob)
      .Text(run_id)
      .Int(expected_version)
      .BytesArray(bodies)
      .Text(kChannel)
      .Text(absl::StrCat(" ", ended ? 1 : 0, " ", me.empty() ? "-" : me, " ", run_id));
  if (lease_epoch.has_value()) params.Text(me).Int(*lease_epoch);
  if (snapshot.has_value()) {
    params.Int(snapshot->version).Int(snapshot->iteration).Bytes(snapshot->state);
  }

  // A commit that leaves a notice (a pause or an end, notification_outbox.h) writes it in a
  // second statement of the same transaction: such a commit is a transaction of its own.
  const bool notifies = std::any_of(events.begin(), events.end(), [](const rein::v1::RunEvent& e) {
    return IsNotifyingEvent(e);
  });
  std::unique_ptr<PgTransaction> own;
  if (batch == nullptr && notifies) {
    ASSIGN_OR_RETURN(own, PgTransaction::Begin(pool_.get(), false));
  } else if (batch == nullptr) {
    ASSIGN_OR_RETURN(own, PgTransaction::Autocommit(pool_.get()));
  }
  PgTransaction* const tx = batch != nullptr ? batch : own.get();
  const std::string what = absl::StrCat("updating run ", run_id);
  absl::StatusOr<PgResult> updated = tx->ExecPrepared(statement.name, statement.sql, params, what);
  if (!updated.ok()) {
    if (snapshot.has_value() && absl::IsAlreadyExists(updated.status()) &&
        absl::StrContains(updated.status().message(), "snapshots_pkey")) {
      return absl::AlreadyExistsError(absl::StrCat("run ", run_id, " has a snapshot of version ",
                                                   snapshot->version, " already"));
    }
    return updated.status();
  }
  RETURN_IF_ERROR(PgCheckColumns(updated->get(), {kInt8Oid}, target(), what));
  if (PQntuples(updated->get()) == 0) {
    ASSIGN_OR_RETURN(PgResult current,
                     tx->Exec("SELECT version, COALESCE(owner, ''), lease_epoch FROM runs "
                              "WHERE run_id = $1",
                              PgParams().Text(run_id), what));
    RETURN_IF_ERROR(PgCheckColumns(current.get(), {kInt8Oid, kTextOid, kInt8Oid}, target(), what));
    if (PQntuples(current.get()) == 0) {
      return absl::NotFoundError(absl::StrCat("no run ", run_id));
    }
    const std::string owner = PgBytes(current.get(), 0, 1);
    const int64_t epoch = PgInt(current.get(), 0, 2);
    if (lease_epoch.has_value() && (owner != me || epoch != *lease_epoch)) {
      return WithReason(
          absl::AbortedError(absl::StrCat("lease lost: run ", run_id, " is owned by ",
                                          owner.empty() ? "no router" : owner, " at epoch ", epoch,
                                          "; router ", me, " held epoch ", *lease_epoch)),
          reason::kLeaseLost);
    }
    return absl::FailedPreconditionError(absl::StrCat("run ", run_id, " is at version ",
                                                      PgInt(current.get(), 0, 0),
                                                      ", not expected_version ", expected_version));
  }
  NumberEvents(run_id, PgInt(updated->get(), 0, 0) - count + 1, events);
  if (notifies) {
    RETURN_IF_ERROR(InsertNotifications(tx, run_id, events, blob, updated_us));
    if (own != nullptr) RETURN_IF_ERROR(own->Commit());
  }
  return events;
}

namespace {

// SET LOCAL statement_timeout for a request's statements: its timeout in whole milliseconds,
// at least 1 (0 would mean none), or 0 without a timeout.
std::string StatementTimeout(const CommitRequest& r) {
  int64_t ms = 0;
  if (r.timeout != absl::InfiniteDuration()) {
    ms = std::max<int64_t>(1,
                           absl::ToInt64Milliseconds(absl::Ceil(r.timeout, absl::Milliseconds(1))));
  }
  return absl::StrCat("SET LOCAL statement_timeout = ", ms);
}

}  // namespace

std::vector<absl::StatusOr<std::vector<rein::v1::RunEvent>>> PostgresRunStore::CommitBatch(
    std::vector<CommitRequest>& requests) {
  // A request with a timeout is bounded by statement_timeout, set in a transaction (SET LOCAL):
  // then every request of the batch sets its own (0, none, for those without).
  const bool bounded = std::any_of(requests.begin(), requests.end(), [](const CommitRequest& r) {
    return r.timeout != absl::InfiniteDuration();
  });
  if (requests.size() == 1 && !bounded) return RunStore::CommitBatch(requests);
  std::vector<absl::StatusOr<std::vector<rein::v1::RunEvent>>> results;
  results.reserve(requests.size());
  absl::StatusOr<std::unique_ptr<PgTransaction>> tx = PgTransaction::Begin(pool_.get(), false);
  if (!tx.ok()) {
    results.assign(requests.size(), tx.status());
    return results;
  }
  for (CommitRequest& r : requests) {
    if (bounded) {
      absl::Status set =
          (*tx)->Run(StatementTimeout(r).c_str(), "bounding a commit by its caller's deadline");
      if (!set.ok()) {
        results.push_back(set);
        continue;
      }
    }
    // One savepoint per request: a request that fails leaves nothing behind, and the others of
    // the batch are kept.
    absl::Status status = (*tx)->Run("SAVEPOINT batch_item", "starting a batch item");
    if (!status.ok()) {
      results.push_back(status);
      continue;
    }
    absl::StatusOr<std::vector<rein::v1::RunEvent>> stored =
        CommitChecked(r.run_id, r.lease_epoch, r.expected_version, *r.new_state,
                      std::move(r.events), r.snapshot, r.now, tx->get());
    if (!stored.ok()) {
      (*tx)->Run("ROLLBACK TO SAVEPOINT batch_item", "undoing a batch item").IgnoreError();
    }
    status = (*tx)->Run("RELEASE SAVEPOINT batch_item", "ending a batch item");
    if (stored.ok() && !status.ok()) stored = status;
    results.push_back(std::move(stored));
  }
  // The batch's COMMIT is not cut short by the last request's timeout: that would undo the
  // requests that had none.
  if (bounded) {
    if (absl::Status set = (*tx)->Run("SET LOCAL statement_timeout = 0", "ending a bounded batch");
        !set.ok()) {
      results.assign(requests.size(), set);
      return results;
    }
  }
  if (absl::Status committed = (*tx)->Commit(); !committed.ok()) {
    results.assign(requests.size(), committed);
  }
  return results;
}

absl::StatusOr<std::vector<rein::v1::RunEvent>> PostgresRunStore::ReadEvents(
    const std::string& run_id, int64_t after_seq, int limit) {
  ASSIGN_OR_RETURN(std::unique_ptr<PgTransaction> tx, PgTransaction::Begin(pool_.get(), true));
  const std::string what = absl::StrCat("reading events of run ", run_id);
  {
    ASSIGN_OR_RETURN(PgResult exists, tx->Exec("SELECT 1 FROM runs WHERE run_id = $1",
                                               PgParams().Text(run_id), what));
    if (PQntuples(exists.get()) == 0) return absl::NotFoundError(absl::StrCat("no run ", run_id));
  }
  PgParams params;
  params.Text(run_id).Int(after_seq);
  if (limit > 0) {
    params.Int(limit);
  } else {
    params.Null(kInt8Oid);  // LIMIT NULL: no limit
  }
  ASSIGN_OR_RETURN(PgResult result, tx->Exec("SELECT seq, body FROM events WHERE run_id = $1 "
                                             "AND seq > $2 ORDER BY seq LIMIT $3",
                                             params, what));
  RETURN_IF_ERROR(PgCheckColumns(result.get(), {kInt8Oid, kByteaOid}, target(), what));
  std::vector<rein::v1::RunEvent> events;
  const int rows = PQntuples(result.get());
  events.reserve(static_cast<size_t>(rows));
  for (int row = 0; row < rows; ++row) {
    const int64_t seq = PgInt(result.get(), row, 0);
    rein::v1::RunEvent& event = events.emplace_back();
    if (!event.ParseFromArray(PQgetvalue(result.get(), row, 1),
                              PQgetlength(result.get(), row, 1))) {
      return absl::DataLossError(absl::StrCat("PostgreSQL database ", target(), ": event ", seq,
                                              " of run ", run_id, " is corrupt"));
    }
    event.set_run_id(run_id);
    event.set_seq(seq);
  }
  RETURN_IF_ERROR(tx->Commit());
  return events;
}

absl::StatusOr<RunPage> PostgresRunStore::ListRuns(const RunFilter& filter, int page_size,
                                                   const std::string& page_token) {
  if (page_size <= 0) page_size = kDefaultPageSize;
  page_size = std::min(page_size, kMaxPageSize);
  std::optional<Cursor> cursor;
  if (!page_token.empty()) {
    ASSIGN_OR_RETURN(cursor, ParsePageToken(filter, page_token));
  }

  // The SQL text holds placeholders only; the values are parameters.
  std::string sql = absl::StrCat("SELECT ", kRunColumns, ", created_us FROM runs WHERE TRUE");
  PgParams params;
  if (filter.stage != rein::v1::STAGE_UNSPECIFIED) {
    params.Int(filter.stage);
    absl::StrAppend(&sql, " AND stage = $", params.size());
  }
  if (filter.outcome != rein::v1::TERMINATION_REASON_UNSPECIFIED) {
    params.Int(filter.outcome);
    absl::StrAppend(&sql, " AND reason = $", params.size());
  }
  if (!filter.namespace_name.empty()) {
    params.Text(filter.namespace_name);
    absl::StrAppend(&sql, " AND namespace = $", params.size());
  }
  if (cursor.has_value()) {
    params.Int(cursor->created_us).Text(cursor->run_id);
    absl::StrAppend(&sql, " AND (created_us, run_id) < ($", params.size() - 1, ", $", params.size(),
                    ")");
  }
  params.Int(page_size + 1);  // one more tells whether there is a next page
  absl::StrAppend(&sql, " ORDER BY created_us DESC, run_id DESC LIMIT $", params.size());

  ASSIGN_OR_RETURN(std::unique_ptr<PgTransaction> tx, PgTransaction::Begin(pool_.get(), true));
  ASSIGN_OR_RETURN(PgResult result, tx->Exec(sql, params, "listing runs"));
  RETURN_IF_ERROR(
      PgCheckColumns(result.get(), {REIN_RUN_COLUMN_TYPES, kInt8Oid}, target(), "listing runs"));
  ASSIGN_OR_RETURN(std::vector<rein::v1::Run> runs, ParseRunRows(result.get(), "listing runs"));
  RunPage page;
  Cursor last;
  size_t page_bytes = 0;
  for (size_t row = 0; row < runs.size(); ++row) {
    // A page ends at page_size runs, or sooner once it holds kMaxPageBytes, so that a reply
    // stays under gRPC's default 4 MiB receive limit.
    if (static_cast<int>(page.runs.size()) == page_size || page_bytes >= kMaxPageBytes) {
      page.next_page_token = MakePageToken(filter, last);
      break;
    }
    last.run_id = runs[row].run_id();
    last.created_us = PgInt(result.get(), static_cast<int>(row), 5);
    page_bytes += runs[row].ByteSizeLong();
    page.runs.push_back(std::move(runs[row]));
  }
  RETURN_IF_ERROR(tx->Commit());
  return page;
}

absl::StatusOr<std::vector<Snapshot>> PostgresRunStore::ListSnapshotsAfter(
    const std::string& run_id, int64_t after_version, int limit) {
  ASSIGN_OR_RETURN(std::unique_ptr<PgTransaction> tx, PgTransaction::Begin(pool_.get(), true));
  const std::string what = absl::StrCat("reading snapshots of run ", run_id);
  {
    ASSIGN_OR_RETURN(PgResult exists, tx->Exec("SELECT 1 FROM runs WHERE run_id = $1",
                                               PgParams().Text(run_id), what));
    if (PQntuples(exists.get()) == 0) return absl::NotFoundError(absl::StrCat("no run ", run_id));
  }
  ASSIGN_OR_RETURN(
      PgResult result,
      tx->Exec("SELECT version, iteration, state FROM snapshots "
               "WHERE run_id = $1 AND version > $2 ORDER BY version LIMIT $3",
               PgParams().Text(run_id).Int(after_version).Int(limit > 0 ? limit : INT64_MAX),
               what));
  RETURN_IF_ERROR(PgCheckColumns(result.get(), {kInt8Oid, kInt8Oid, kByteaOid}, target(), what));
  std::vector<Snapshot> snapshots;
  for (int row = 0; row < PQntuples(result.get()); ++row) {
    Snapshot& snapshot = snapshots.emplace_back();
    snapshot.version = PgInt(result.get(), row, 0);
    snapshot.iteration = static_cast<int32_t>(PgInt(result.get(), row, 1));
    snapshot.state = PgBytes(result.get(), row, 2);
  }
  RETURN_IF_ERROR(tx->Commit());
  return snapshots;
}

absl::StatusOr<std::vector<std::string>> PostgresRunStore::ListUnfinishedRunIds() {
  static_assert(rein::v1::FINISHED == 7 && rein::v1::FAILED == 8 && rein::v1::CANCELLED == 9,
                "the query and the runs_unfinished index name the terminal stages by number");
  ASSIGN_OR_RETURN(std::unique_ptr<PgTransaction> tx, PgTransaction::Begin(pool_.get(), true));
  ASSIGN_OR_RETURN(PgResult result, tx->Exec("SELECT run_id FROM runs WHERE stage NOT IN "
                                             "(7, 8, 9) ORDER BY created_us, run_id",
                                             PgParams(), "listing unfinished runs"));
  RETURN_IF_ERROR(PgCheckColumns(result.get(), {kTextOid}, target(), "listing unfinished runs"));
  std::vector<std::string> ids;
  for (int row = 0; row < PQntuples(result.get()); ++row) {
    ids.push_back(PgBytes(result.get(), row, 0));
  }
  RETURN_IF_ERROR(tx->Commit());
  return ids;
}

absl::StatusOr<NamespaceUsage> PostgresRunStore::GetNamespaceUsage(
    const std::string& namespace_name, absl::Time since) {
  const std::string ns(NamespaceOrDefault(namespace_name));
  const std::string what = absl::StrCat("reading the usage of namespace ", ns);
  NamespaceUsage usage;
  ASSIGN_OR_RETURN(std::unique_ptr<PgTransaction> tx, PgTransaction::Begin(pool_.get(), true));
  {
    ASSIGN_OR_RETURN(PgResult result,
                     tx->Exec("SELECT count(*) FROM runs WHERE namespace = $1 AND stage NOT IN "
                              "(7, 8, 9)",
                              PgParams().Text(ns), what));
    RETURN_IF_ERROR(PgCheckColumns(result.get(), {kInt8Oid}, target(), what));
    usage.unfinished_runs = PgInt(result.get(), 0, 0);
  }
  ASSIGN_OR_RETURN(PgResult result,
                   tx->Exec("SELECT run_id, state FROM runs WHERE namespace = $1 AND "
                            "created_us >= $2",
                            PgParams().Text(ns).Int(absl::ToUnixMicros(since)), what));
  RETURN_IF_ERROR(PgCheckColumns(result.get(), {kTextOid, kByteaOid}, target(), what));
  for (int row = 0; row < PQntuples(result.get()); ++row) {
    rein::v1::Run tail;  // the stored tail: the state and updated_at
    if (!tail.ParseFromString(PgBytes(result.get(), row, 1))) {
      return absl::DataLossError(absl::StrCat("PostgreSQL database ", target(), ": the stored run ",
                                              PgBytes(result.get(), row, 0), " is corrupt"));
    }
    usage.tokens += OwnTokens(tail.state());
    usage.cost_usd += OwnCostUsd(tail.state());
  }
  RETURN_IF_ERROR(tx->Commit());
  return usage;
}

absl::StatusOr<std::vector<rein::v1::Run>> PostgresRunStore::ParseRunRows(
    const PGresult* result, const std::string& what) const {
  std::vector<rein::v1::Run> runs;
  for (int row = 0; row < PQntuples(result); ++row) {
    rein::v1::Run& run = runs.emplace_back();
    const std::string run_id = PgBytes(result, row, 0);
    RETURN_IF_ERROR(ParseStoredRun(PgBytes(result, row, 1), PgBytes(result, row, 2), run_id, &run));
    run.set_owner(PgBytes(result, row, 3));
    run.set_lease_epoch(PgInt(result, row, 4));
  }
  (void)what;
  return runs;
}

}  // namespace rein
