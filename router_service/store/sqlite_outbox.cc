// SqliteRunStore's outbox (notification_outbox.h): the notices its commits write, claimed and
// updated by the one router that uses the file.
#include <sqlite3.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/status_macros.h"
#include "google/protobuf/timestamp.pb.h"
#include "router_service/store/sqlite_db.h"
#include "router_service/store/sqlite_run_store.h"
#include "router_service/store/store_codec.h"

namespace rein {
namespace {

// The columns ReadNotifications reads, in its order.
constexpr char kColumns[] =
    "notice_id, run_id, seq, event, state, committed_us, status, attempts, next_attempt_us, "
    "last_error, delivered_to";

absl::StatusOr<int64_t> Micros(absl::Time t, absl::string_view field) {
  ASSIGN_OR_RETURN(const google::protobuf::Timestamp ts, ToTimestamp(t, field));
  return TimestampMicros(ts, field);
}

}  // namespace

absl::Status SqliteRunStore::InsertNotifications(const std::string& run_id,
                                                 const std::vector<rein::v1::RunEvent>& events,
                                                 const std::string& state_tail, int64_t now_us) {
  for (const rein::v1::RunEvent& stored : events) {
    if (!IsNotifyingEvent(stored)) continue;
    rein::v1::RunEvent event = stored;
    event.clear_run_id();
    event.clear_seq();
    ASSIGN_OR_RETURN(SqliteDb::Statement stmt,
                     db_->Prepare("INSERT INTO notifications (notice_id, run_id, seq, event, "
                                  "state, committed_us, next_attempt_us) "
                                  "VALUES (?, ?, ?, ?, ?, ?, ?)"));
    stmt.BindText(1, NoticeId(run_id, stored.seq()));
    stmt.BindText(2, run_id);
    stmt.BindInt(3, stored.seq());
    stmt.BindBlob(4, event.SerializeAsString());
    stmt.BindBlob(5, state_tail);
    stmt.BindInt(6, now_us);
    stmt.BindInt(7, now_us);
    const int rc = stmt.Step();
    if (rc != SQLITE_DONE) {
      return db_->Error(
          rc, absl::StrCat("writing the notice of event ", stored.seq(), " of run ", run_id));
    }
  }
  return absl::OkStatus();
}

namespace {

// The rows of a statement that selects kColumns.
absl::StatusOr<std::vector<Notification>> ReadNotifications(SqliteDb* db, SqliteDb::Statement& stmt,
                                                            const std::string& router_id) {
  std::vector<Notification> notices;
  int rc;
  while ((rc = stmt.Step()) == SQLITE_ROW) {
    Notification& n = notices.emplace_back();
    n.notice_id = stmt.ColumnBytes(0);
    n.run_id = stmt.ColumnBytes(1);
    n.seq = stmt.ColumnInt(2);
    RETURN_IF_ERROR(DecodeNotification(stmt.ColumnBytes(3), stmt.ColumnBytes(4),
                                       absl::StrCat("SQLite database ", db->path()), &n));
    n.committed = absl::FromUnixMicros(stmt.ColumnInt(5));
    n.status = static_cast<NotificationStatus>(stmt.ColumnInt(6));
    n.attempts = static_cast<int32_t>(stmt.ColumnInt(7));
    n.next_attempt = absl::FromUnixMicros(stmt.ColumnInt(8));
    n.last_error = stmt.ColumnBytes(9);
    n.delivered_to = SplitEndpoints(stmt.ColumnBytes(10));
    n.owner = router_id;
    n.lease_epoch = 1;
  }
  if (rc != SQLITE_DONE) return db->Error(rc, "reading notices");
  return notices;
}

}  // namespace

absl::StatusOr<std::vector<Notification>> SqliteRunStore::ClaimNotifications(absl::Time now,
                                                                             absl::Time hold_until,
                                                                             int limit) {
  if (limit <= 0) return absl::InvalidArgumentError("limit must be positive");
  ASSIGN_OR_RETURN(const int64_t now_us, Micros(now, "now"));
  ASSIGN_OR_RETURN(const int64_t hold_us, Micros(hold_until, "hold_until"));
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(SqliteDb::Transaction tx,
                   SqliteDb::Transaction::Begin(db_.get(), /*write=*/true));
  std::vector<Notification> notices;
  {
    ASSIGN_OR_RETURN(SqliteDb::Statement stmt,
                     db_->Prepare(absl::StrCat("SELECT ", kColumns,
                                               " FROM notifications WHERE status = 0 AND "
                                               "next_attempt_us <= ? "
                                               "ORDER BY next_attempt_us, notice_id LIMIT ?")));
    stmt.BindInt(1, now_us);
    stmt.BindInt(2, limit);
    ASSIGN_OR_RETURN(notices, ReadNotifications(db_.get(), stmt, router_id_));
  }
  for (Notification& n : notices) {
    ASSIGN_OR_RETURN(SqliteDb::Statement stmt,
                     db_->Prepare("UPDATE notifications SET next_attempt_us = ? "
                                  "WHERE notice_id = ?"));
    stmt.BindInt(1, hold_us);
    stmt.BindText(2, n.notice_id);
    const int rc = stmt.Step();
    if (rc != SQLITE_DONE) return db_->Error(rc, absl::StrCat("claiming notice ", n.notice_id));
    n.next_attempt = absl::FromUnixMicros(hold_us);
  }
  RETURN_IF_ERROR(tx.Commit());
  return notices;
}

absl::Status SqliteRunStore::UpdateNotification(const NotificationUpdate& update) {
  ASSIGN_OR_RETURN(const int64_t next_us, Micros(update.next_attempt, "next_attempt"));
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(SqliteDb::Statement stmt,
                   db_->Prepare("UPDATE notifications SET status = ?, attempts = ?, "
                                "next_attempt_us = ?, last_error = ?, delivered_to = ? "
                                "WHERE notice_id = ?"));
  stmt.BindInt(1, static_cast<int64_t>(update.status));
  stmt.BindInt(2, update.attempts);
  stmt.BindInt(3, next_us);
  stmt.BindText(4, update.last_error);
  stmt.BindText(5, JoinEndpoints(update.delivered_to));
  stmt.BindText(6, update.notice_id);
  const int rc = stmt.Step();
  if (rc != SQLITE_DONE) {
    return db_->Error(rc, absl::StrCat("updating notice ", update.notice_id));
  }
  ASSIGN_OR_RETURN(SqliteDb::Statement changes, db_->Prepare("SELECT changes()"));
  if (changes.Step() != SQLITE_ROW || changes.ColumnInt(0) == 0) {
    return absl::NotFoundError(absl::StrCat("no notice ", update.notice_id));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Notification>> SqliteRunStore::ListNotifications(
    NotificationStatus status, bool any, const std::string& namespace_name, int limit) {
  if (limit <= 0) return absl::InvalidArgumentError("limit must be positive");
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(
      SqliteDb::Statement stmt,
      db_->Prepare(absl::StrCat(
          "SELECT ", kColumns, " FROM notifications WHERE 1 = 1", any ? "" : " AND status = ?",
          namespace_name.empty() ? ""
                                 : " AND run_id IN (SELECT run_id FROM runs WHERE namespace = ?)",
          " ORDER BY committed_us DESC, notice_id DESC LIMIT ?")));
  int index = 1;
  if (!any) stmt.BindInt(index++, static_cast<int64_t>(status));
  if (!namespace_name.empty()) stmt.BindText(index++, namespace_name);
  stmt.BindInt(index, limit);
  return ReadNotifications(db_.get(), stmt, router_id_);
}

absl::StatusOr<NotificationCounts> SqliteRunStore::CountNotifications() {
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(SqliteDb::Statement stmt,
                   db_->Prepare("SELECT status, count(*) FROM notifications GROUP BY status"));
  NotificationCounts counts;
  int rc;
  while ((rc = stmt.Step()) == SQLITE_ROW) {
    const int64_t n = stmt.ColumnInt(1);
    switch (static_cast<NotificationStatus>(stmt.ColumnInt(0))) {
      case NotificationStatus::kPending: counts.pending = n; break;
      case NotificationStatus::kDelivered: counts.delivered = n; break;
      case NotificationStatus::kFailed: counts.failed = n; break;
    }
  }
  if (rc != SQLITE_DONE) return db_->Error(rc, "counting notices");
  return counts;
}

}  // namespace rein
