// SqliteDb: one SQLite connection, its cache of prepared statements, and transactions on it.
#ifndef REIN_ROUTER_SERVICE_STORE_SQLITE_DB_H_
#define REIN_ROUTER_SERVICE_STORE_SQLITE_DB_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

struct sqlite3;
struct sqlite3_stmt;

namespace rein {

// The Abseil code for an SQLite result code (primary or extended): UNAVAILABLE for a busy or
// locked database or an I/O error (the call may be retried), DATA_LOSS for a corrupt file,
// FAILED_PRECONDITION for a file that is not a database or cannot be opened or written,
// RESOURCE_EXHAUSTED for a full disk or no memory, INTERNAL otherwise.
absl::StatusCode CodeForSqlite(int rc);

// An open SQLite connection (extended result codes on) and the statements prepared on it,
// which stay prepared until the connection is closed. Errors name the database's path.
//
// Not thread-safe: one thread at a time (SqliteRunStore holds its mutex around every use).
class SqliteDb {
 public:
  // A cached prepared statement on loan: its bindings and state are reset when it goes out of
  // scope. At most one loan of one SQL text at a time.
  class Statement {
   public:
    explicit Statement(sqlite3_stmt* stmt) : stmt_(stmt) {}
    Statement(Statement&& other) noexcept;
    Statement& operator=(Statement&&) = delete;
    ~Statement();

    // Parameters are numbered from 1. A failed bind is reported by the next Step().
    void BindInt(int index, int64_t value);
    void BindText(int index, absl::string_view value);
    void BindBlob(int index, absl::string_view value);
    void BindNull(int index);

    // SQLITE_ROW, SQLITE_DONE or an error code (including a failed bind).
    int Step();

    // Columns are numbered from 0.
    int64_t ColumnInt(int index) const;
    std::string ColumnBytes(int index) const;

   private:
    void Keep(int rc);

    sqlite3_stmt* stmt_;
    int bind_rc_ = 0;  // SQLITE_OK
  };

  // One transaction; rolled back when destroyed without a successful Commit().
  class Transaction {
   public:
    // `write`: BEGIN IMMEDIATE (takes the write lock now, waiting up to the busy timeout);
    // else a deferred (read) transaction.
    static absl::StatusOr<Transaction> Begin(SqliteDb* db, bool write);
    Transaction(Transaction&& other) noexcept;
    Transaction& operator=(Transaction&&) = delete;
    ~Transaction();

    absl::Status Commit();

   private:
    explicit Transaction(SqliteDb* db) : db_(db) {}

    SqliteDb* db_;
  };

  // Opens the database at `path` (creating the file when missing if `create`). A path that
  // cannot be opened, or a file that is not a database, is FAILED_PRECONDITION (or the code of
  // the error, see CodeForSqlite) naming the path.
  static absl::StatusOr<std::unique_ptr<SqliteDb>> Open(const std::string& path, bool create);

  // Finalizes the statements and closes the connection.
  ~SqliteDb();
  SqliteDb(const SqliteDb&) = delete;
  SqliteDb& operator=(const SqliteDb&) = delete;

  const std::string& path() const { return path_; }

  // How long a statement waits for another connection's lock before failing (SQLITE_BUSY).
  absl::Status SetBusyTimeout(absl::Duration timeout);

  // The prepared statement for `sql` (one statement), from the cache or prepared now.
  absl::StatusOr<Statement> Prepare(const std::string& sql);

  // Runs `sql` (one statement, no parameters; rows are skipped), e.g. BEGIN or a pragma.
  absl::Status Exec(const std::string& sql);

  // Runs `sql`, which may hold several statements (a schema), without caching it.
  absl::Status ExecScript(const char* sql, absl::string_view what);

  // Whether the connection is outside a transaction (SQLite's autocommit mode).
  bool autocommit() const;

  // A PASSIVE checkpoint: copies what it can of the WAL into the database without blocking
  // the writer or readers. Returns how many of the WAL's frames are in the database after it
  // (0 on an error: the next one tries again). The connection must have read the database
  // since it was opened (a new one does not know yet that the file is in WAL mode, and then
  // checks nothing and copies nothing).
  int64_t CheckpointPassive();

  // Calls `hook` with the WAL's frame count after each transaction this connection commits
  // in WAL mode, on the committing thread, instead of SQLite's automatic checkpoint: whoever
  // sets it decides when the WAL is checkpointed (the hook may call CheckpointPassive). Set it
  // once, before the connection is used.
  void SetWalHook(std::function<void(int frames)> hook);

  // The status for a failed call: code by CodeForSqlite(rc), message "SQLite database PATH:
  // `what`: " and SQLite's message for the connection's last error.
  absl::Status Error(int rc, absl::string_view what) const;

 private:
  SqliteDb(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}

  sqlite3* const db_;
  const std::string path_;
  std::unordered_map<std::string, sqlite3_stmt*> statements_;
  std::function<void(int)> wal_hook_;
};

}  // namespace rein

#endif  // REIN_ROUTER_SERVICE_STORE_SQLITE_DB_H_
