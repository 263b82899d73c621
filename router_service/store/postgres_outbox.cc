// PostgresRunStore's outbox (notification_outbox.h): the notices its commits write, claimed by
// one live router at a time and fenced by owner and lease epoch as runs are.
#include <postgresql/libpq-fe.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/status_macros.h"
#include "common/status_reason.h"
#include "google/protobuf/timestamp.pb.h"
#include "router_service/store/pg_session.h"
#include "router_service/store/postgres_run_store.h"
#include "router_service/store/postgres_schema.h"
#include "router_service/store/store_codec.h"

namespace rein {
namespace {

using postgres_schema::kLive;

// The columns ParseNotificationRows reads, in its order.
constexpr char kColumns[] =
    "notice_id, run_id, seq, event, state, committed_us, status, attempts, next_attempt_us, "
    "last_error, delivered_to, COALESCE(owner, ''), lease_epoch";
// The same, of the table aliased `n`.
constexpr char kReturnedColumns[] =
    "n.notice_id, n.run_id, n.seq, n.event, n.state, n.committed_us, n.status, n.attempts, "
    "n.next_attempt_us, n.last_error, n.delivered_to, COALESCE(n.owner, ''), n.lease_epoch";
constexpr std::initializer_list<Oid> kColumnTypes = {
    kTextOid, kTextOid, kInt8Oid, kByteaOid, kByteaOid, kInt8Oid, kInt8Oid,
    kInt8Oid, kInt8Oid, kTextOid, kTextOid,  kTextOid,  kInt8Oid};

absl::StatusOr<int64_t> Micros(absl::Time t, absl::string_view field) {
  ASSIGN_OR_RETURN(const google::protobuf::Timestamp ts, ToTimestamp(t, field));
  return TimestampMicros(ts, field);
}

}  // namespace

absl::Status PostgresRunStore::InsertNotifications(PgTransaction* tx, const std::string& run_id,
                                                   const std::vector<rein::v1::RunEvent>& events,
                                                   const std::string& state_tail, int64_t now_us) {
  const std::string me = router_id();
  for (const rein::v1::RunEvent& stored : events) {
    if (!IsNotifyingEvent(stored)) continue;
    rein::v1::RunEvent event = stored;
    event.clear_run_id();
    event.clear_seq();
    PgParams params;
    params.Text(NoticeId(run_id, stored.seq()))
        .Text(run_id)
        .Int(stored.seq())
        .Bytes(event.SerializeAsString())
        .Bytes(state_tail)
        .Int(now_us);
    if (me.empty()) {
      params.Null(kTextOid);
    } else {
      params.Text(me);
    }
    RETURN_IF_ERROR(
        tx->Exec("INSERT INTO notifications (notice_id, run_id, seq, event, state, "
                 "committed_us, next_attempt_us, owner) "
                 "VALUES ($1, $2, $3, $4, $5, $6, $6, $7)",
                 params,
                 absl::StrCat("writing the notice of event ", stored.seq(), " of run ", run_id))
            .status());
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Notification>> PostgresRunStore::ParseNotificationRows(
    const PGresult* result, const std::string& what) const {
  RETURN_IF_ERROR(PgCheckColumns(result, kColumnTypes, target(), what));
  std::vector<Notification> notices;
  for (int row = 0; row < PQntuples(result); ++row) {
    Notification& n = notices.emplace_back();
    n.notice_id = PgBytes(result, row, 0);
    n.run_id = PgBytes(result, row, 1);
    n.seq = PgInt(result, row, 2);
    RETURN_IF_ERROR(DecodeNotification(PgBytes(result, row, 3), PgBytes(result, row, 4),
                                       absl::StrCat("PostgreSQL database ", target()), &n));
    n.committed = absl::FromUnixMicros(PgInt(result, row, 5));
    n.status = static_cast<NotificationStatus>(PgInt(result, row, 6));
    n.attempts = static_cast<int32_t>(PgInt(result, row, 7));
    n.next_attempt = absl::FromUnixMicros(PgInt(result, row, 8));
    n.last_error = PgBytes(result, row, 9);
    n.delivered_to = SplitEndpoints(PgBytes(result, row, 10));
    n.owner = PgBytes(result, row, 11);
    n.lease_epoch = PgInt(result, row, 12);
  }
  return notices;
}

absl::StatusOr<std::vector<Notification>> PostgresRunStore::ClaimNotifications(
    absl::Time now, absl::Time hold_until, int limit) {
  if (limit <= 0) return absl::InvalidArgumentError("limit must be positive");
  ASSIGN_OR_RETURN(const int64_t now_us, Micros(now, "now"));
  ASSIGN_OR_RETURN(const int64_t hold_us, Micros(hold_until, "hold_until"));
  std::string me, incarnation;
  {
    absl::MutexLock lock(&mu_);
    me = router_id_;
    incarnation = incarnation_;
  }
  if (me.empty()) return absl::FailedPreconditionError("ClaimNotifications before JoinFleet");
  // This router's own notices and those of routers whose lease expired (or of none), only
  // while this router's own lease is valid; SKIP LOCKED so that two routers claiming at once
  // never take the same notice. A notice taken from another owner moves to epoch + 1.
  const std::string sql = absl::StrCat(
      "WITH c AS (SELECT notice_id FROM notifications n WHERE status = 0 AND "
      "next_attempt_us <= $2 AND EXISTS (SELECT 1 FROM routers WHERE router_id = $1 AND "
      "incarnation = $3 AND ",
      kLive,
      ") AND (n.owner = $1 OR n.owner IS NULL OR NOT EXISTS (SELECT 1 FROM routers WHERE "
      "router_id = n.owner AND ",
      kLive,
      ")) ORDER BY next_attempt_us, notice_id LIMIT $4 FOR UPDATE SKIP LOCKED) "
      "UPDATE notifications AS n SET next_attempt_us = $5, lease_epoch = CASE WHEN n.owner = $1 "
      "THEN n.lease_epoch ELSE n.lease_epoch + 1 END, owner = $1 FROM c "
      "WHERE n.notice_id = c.notice_id RETURNING ",
      kReturnedColumns);
  const std::string what = "claiming notices";
  ASSIGN_OR_RETURN(std::unique_ptr<PgTransaction> tx, PgTransaction::Autocommit(pool_.get()));
  ASSIGN_OR_RETURN(
      PgResult result,
      tx->Exec(sql, PgParams().Text(me).Int(now_us).Text(incarnation).Int(limit).Int(hold_us),
               what));
  ASSIGN_OR_RETURN(std::vector<Notification> notices, ParseNotificationRows(result.get(), what));
  std::sort(notices.begin(), notices.end(), [](const Notification& a, const Notification& b) {
    return std::make_pair(a.committed, a.notice_id) < std::make_pair(b.committed, b.notice_id);
  });
  return notices;
}

absl::Status PostgresRunStore::UpdateNotification(const NotificationUpdate& update) {
  ASSIGN_OR_RETURN(const int64_t next_us, Micros(update.next_attempt, "next_attempt"));
  const std::string me = router_id();
  if (me.empty()) return absl::FailedPreconditionError("UpdateNotification before JoinFleet");
  const std::string what = absl::StrCat("updating notice ", update.notice_id);
  ASSIGN_OR_RETURN(std::unique_ptr<PgTransaction> tx, PgTransaction::Autocommit(pool_.get()));
  // The fencing token: only the owner at the claimed epoch writes.
  ASSIGN_OR_RETURN(
      PgResult updated,
      tx->Exec("WITH u AS (UPDATE notifications SET status = $1, attempts = $2, "
               "next_attempt_us = $3, last_error = $4, delivered_to = $5 WHERE notice_id = $6 "
               "AND owner = $7 AND lease_epoch = $8 RETURNING 1) "
               "SELECT (SELECT count(*) FROM u), COALESCE(owner, ''), lease_epoch "
               "FROM notifications WHERE notice_id = $6",
               PgParams()
                   .Int(static_cast<int64_t>(update.status))
                   .Int(update.attempts)
                   .Int(next_us)
                   .Text(update.last_error)
                   .Text(JoinEndpoints(update.delivered_to))
                   .Text(update.notice_id)
                   .Text(me)
                   .Int(update.lease_epoch),
               what));
  RETURN_IF_ERROR(PgCheckColumns(updated.get(), {kInt8Oid, kTextOid, kInt8Oid}, target(), what));
  if (PQntuples(updated.get()) == 0) {
    return absl::NotFoundError(absl::StrCat("no notice ", update.notice_id));
  }
  if (PgInt(updated.get(), 0, 0) == 0) {
    const std::string owner = PgBytes(updated.get(), 0, 1);
    return WithReason(
        absl::AbortedError(absl::StrCat("lease lost: notice ", update.notice_id, " is owned by ",
                                        owner.empty() ? "no router" : owner, " at epoch ",
                                        PgInt(updated.get(), 0, 2), "; router ", me, " held epoch ",
                                        update.lease_epoch)),
        reason::kLeaseLost);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Notification>> PostgresRunStore::ListNotifications(
    NotificationStatus status, bool any, const std::string& namespace_name, int limit) {
  if (limit <= 0) return absl::InvalidArgumentError("limit must be positive");
  const std::string what = "listing notices";
  ASSIGN_OR_RETURN(std::unique_ptr<PgTransaction> tx, PgTransaction::Autocommit(pool_.get()));
  PgParams params;
  params.Int(limit);
  std::string where = " WHERE TRUE";
  if (!any) {
    params.Int(static_cast<int64_t>(status));
    absl::StrAppend(&where, " AND status = $", params.size());
  }
  if (!namespace_name.empty()) {
    params.Text(namespace_name);
    absl::StrAppend(&where, " AND run_id IN (SELECT run_id FROM runs WHERE namespace = $",
                    params.size(), ")");
  }
  ASSIGN_OR_RETURN(PgResult result,
                   tx->Exec(absl::StrCat("SELECT ", kColumns, " FROM notifications", where,
                                         " ORDER BY committed_us DESC, notice_id DESC LIMIT $1"),
                            params, what));
  return ParseNotificationRows(result.get(), what);
}

absl::StatusOr<NotificationCounts> PostgresRunStore::CountNotifications() {
  const std::string what = "counting notices";
  ASSIGN_OR_RETURN(std::unique_ptr<PgTransaction> tx, PgTransaction::Autocommit(pool_.get()));
  ASSIGN_OR_RETURN(
      PgResult result,
      tx->Exec("SELECT status, count(*) FROM notifications GROUP BY status", PgParams(), what));
  RETURN_IF_ERROR(PgCheckColumns(result.get(), {kInt8Oid, kInt8Oid}, target(), what));
  NotificationCounts counts;
  for (int row = 0; row < PQntuples(result.get()); ++row) {
    const int64_t n = PgInt(result.get(), row, 1);
    switch (static_cast<NotificationStatus>(PgInt(result.get(), row, 0))) {
      case NotificationStatus::kPending: counts.pending = n; break;
      case NotificationStatus::kDelivered: counts.delivered = n; break;
      case NotificationStatus::kFailed: counts.failed = n; break;
    }
  }
  return counts;
}

}  // namespace rein
