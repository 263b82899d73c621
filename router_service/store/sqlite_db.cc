// SqliteDb: one SQLite connection, its cache of prepared statements, and transactions on it.
#include "router_service/store/sqlite_db.h"

#include <sqlite3.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/status_macros.h"

namespace rein {

absl::StatusCode CodeForSqlite(int rc) {
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_IOERR:
    case SQLITE_PROTOCOL: return absl::StatusCode::kUnavailable;
    case SQLITE_CORRUPT: return absl::StatusCode::kDataLoss;
    case SQLITE_NOTADB:
    case SQLITE_CANTOPEN:
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_AUTH: return absl::StatusCode::kFailedPrecondition;
    case SQLITE_FULL:
    case SQLITE_NOMEM:
    case SQLITE_TOOBIG: return absl::StatusCode::kResourceExhausted;
    default: return absl::StatusCode::kInternal;
  }
}

SqliteDb::Statement::Statement(Statement&& other) noexcept
    : stmt_(std::exchange(other.stmt_, nullptr)), bind_rc_(other.bind_rc_) {}

SqliteDb::Statement::~Statement() {
  if (stmt_ != nullptr) {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
}

void SqliteDb::Statement::BindInt(int index, int64_t value) {
  Keep(sqlite3_bind_int64(stmt_, index, value));
}

void SqliteDb::Statement::BindText(int index, absl::string_view value) {
  Keep(
      sqlite3_bind_text64(stmt_, index, value.data(), value.size(), SQLITE_TRANSIENT, SQLITE_UTF8));
}

void SqliteDb::Statement::BindBlob(int index, absl::string_view value) {
  Keep(sqlite3_bind_blob64(stmt_, index, value.data(), value.size(), SQLITE_TRANSIENT));
}

void SqliteDb::Statement::BindNull(int index) { Keep(sqlite3_bind_null(stmt_, index)); }

int SqliteDb::Statement::Step() {
  if (bind_rc_ != SQLITE_OK) return bind_rc_;
  return sqlite3_step(stmt_);
}

int64_t SqliteDb::Statement::ColumnInt(int index) const {
  return sqlite3_column_int64(stmt_, index);
}

std::string SqliteDb::Statement::ColumnBytes(int index) const {
  const void* data = sqlite3_column_blob(stmt_, index);
  const int size = sqlite3_column_bytes(stmt_, index);
  if (data == nullptr || size <= 0) return std::string();
  return std::string(static_cast<const char*>(data), static_cast<size_t>(size));
}

void SqliteDb::Statement::Keep(int rc) {
  if (bind_rc_ == SQLITE_OK) bind_rc_ = rc;
}

absl::StatusOr<SqliteDb::Transaction> SqliteDb::Transaction::Begin(SqliteDb* db, bool write) {
  RETURN_IF_ERROR(db->Exec(write ? "BEGIN IMMEDIATE" : "BEGIN"));
  return Transaction(db);
}

SqliteDb::Transaction::Transaction(Transaction&& other) noexcept
    : db_(std::exchange(other.db_, nullptr)) {}

SqliteDb::Transaction::~Transaction() {
  // Some errors (SQLITE_FULL, SQLITE_IOERR, ...) end the transaction on their own.
  if (db_ != nullptr && !db_->autocommit()) db_->Exec("ROLLBACK").IgnoreError();
}

absl::Status SqliteDb::Transaction::Commit() {
  RETURN_IF_ERROR(db_->Exec("COMMIT"));
  db_ = nullptr;
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<SqliteDb>> SqliteDb::Open(const std::string& path, bool create) {
  sqlite3* db = nullptr;
  const int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | (create ? SQLITE_OPEN_CREATE : 0);
  const int rc = sqlite3_open_v2(path.c_str(), &db, flags, /*zVfs=*/nullptr);
  if (rc != SQLITE_OK) {
    const std::string message = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close(db);
    return absl::Status(CodeForSqlite(rc) == absl::StatusCode::kInternal
                            ? absl::StatusCode::kFailedPrecondition
                            : CodeForSqlite(rc),
                        absl::StrCat("cannot open SQLite database ", path, ": ", message));
  }
  sqlite3_extended_result_codes(db, 1);
  return std::unique_ptr<SqliteDb>(new SqliteDb(db, path));
}

SqliteDb::~SqliteDb() {
  for (auto& [sql, stmt] : statements_) sqlite3_finalize(stmt);
  statements_.clear();
  sqlite3_close(db_);
}

absl::Status SqliteDb::SetBusyTimeout(absl::Duration timeout) {
  const int rc = sqlite3_busy_timeout(
      db_, static_cast<int>(std::min<int64_t>(absl::ToInt64Milliseconds(timeout), INT32_MAX)));
  if (rc != SQLITE_OK) return Error(rc, "setting busy_timeout");
  return absl::OkStatus();
}

absl::StatusOr<SqliteDb::Statement> SqliteDb::Prepare(const std::string& sql) {
  auto it = statements_.find(sql);
  if (it != statements_.end()) return Statement(it->second);
  sqlite3_stmt* stmt = nullptr;
  const int rc = sqlite3_prepare_v3(db_, sql.data(), static_cast<int>(sql.size()),
                                    SQLITE_PREPARE_PERSISTENT, &stmt, /*pzTail=*/nullptr);
  if (rc != SQLITE_OK) return Error(rc, absl::StrCat("preparing `", sql, "`"));
  statements_.emplace(sql, stmt);
  return Statement(stmt);
}

absl::Status SqliteDb::Exec(const std::string& sql) {
  ASSIGN_OR_RETURN(Statement stmt, Prepare(sql));
  int rc;
  while ((rc = stmt.Step()) == SQLITE_ROW) {
  }
  if (rc != SQLITE_DONE) return Error(rc, sql);
  return absl::OkStatus();
}

absl::Status SqliteDb::ExecScript(const char* sql, absl::string_view what) {
  const int rc = sqlite3_exec(db_, sql, /*callback=*/nullptr, /*arg=*/nullptr,
                              /*errmsg=*/nullptr);
  if (rc != SQLITE_OK) return Error(rc, what);
  return absl::OkStatus();
}

bool SqliteDb::autocommit() const { return sqlite3_get_autocommit(db_) != 0; }

int64_t SqliteDb::CheckpointPassive() {
  // The WAL's frames, and how many of them are in the database now (each -1 when no
  // checkpoint could run).
  int log_frames = -1, checkpointed_frames = -1;
  const int rc = sqlite3_wal_checkpoint_v2(db_, /*zDb=*/nullptr, SQLITE_CHECKPOINT_PASSIVE,
                                           &log_frames, &checkpointed_frames);
  return rc == SQLITE_OK ? std::max(checkpointed_frames, 0) : 0;
}

void SqliteDb::SetWalHook(std::function<void(int frames)> hook) {
  wal_hook_ = std::move(hook);
  sqlite3_wal_hook(
      db_,
      [](void* self, sqlite3*, const char*, int frames) {
        static_cast<SqliteDb*>(self)->wal_hook_(frames);
        return SQLITE_OK;
      },
      this);
}

absl::Status SqliteDb::Error(int rc, absl::string_view what) const {
  return absl::Status(CodeForSqlite(rc), absl::StrCat("SQLite database ", path_, ": ", what, ": ",
                                                      sqlite3_errmsg(db_)));
}

}  // namespace rein
