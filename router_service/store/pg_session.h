// PostgreSQL sessions for PostgresRunStore: a pool of libpq connections, transactions on a
// borrowed connection, binary parameters and results, and SQLSTATE-to-status mapping.
#ifndef REIN_ROUTER_SERVICE_STORE_PG_SESSION_H_
#define REIN_ROUTER_SERVICE_STORE_PG_SESSION_H_

#include <postgresql/libpq-fe.h>

#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace rein {

// Type OIDs of the parameters and result columns (pg_type.oid, fixed since PostgreSQL 7).
inline constexpr Oid kByteaOid = 17;
inline constexpr Oid kInt8Oid = 20;
inline constexpr Oid kTextOid = 25;
inline constexpr Oid kByteaArrayOid = 1001;  // bytea[]

struct PgResultDeleter {
  void operator()(PGresult* result) const { PQclear(result); }
};
using PgResult = std::unique_ptr<PGresult, PgResultDeleter>;

// Query parameters, all sent in binary format with their types declared.
class PgParams {
 public:
  PgParams& Int(int64_t value);
  PgParams& Text(absl::string_view value);
  PgParams& Bytes(absl::string_view value);
  // A one-dimensional bytea[] (empty when `values` is), in the array's binary format.
  PgParams& BytesArray(const std::vector<std::string>& values);
  PgParams& Null(Oid type);

  int size() const { return static_cast<int>(types_.size()); }
  const Oid* types() const { return types_.data(); }

  // Pointer arrays for PQexecParams; valid while this object is unchanged.
  void Arrays(std::vector<const char*>* values, std::vector<int>* lengths,
              std::vector<int>* formats) const;

 private:
  PgParams& Add(Oid type, std::string value, bool null);

  std::vector<Oid> types_;
  std::vector<std::string> values_;
  std::vector<bool> nulls_;
};

// The Abseil code for a PostgreSQL error (SQLSTATE, appendix A of its manual): ABORTED for a
// serialization failure or deadlock, ALREADY_EXISTS for a unique violation, UNAVAILABLE for a
// connection or server failure, PERMISSION_DENIED for refused credentials, INVALID_ARGUMENT for
// bad data, FAILED_PRECONDITION for a missing table or column, INTERNAL otherwise.
absl::StatusCode CodeForSqlState(absl::string_view state);

// The status for a failed statement: by SQLSTATE when the server answered, else UNAVAILABLE
// (the connection is gone; the server then rolls the transaction back). Names `target`.
absl::Status PgError(PGconn* conn, const PGresult* result, const std::string& target,
                     absl::string_view what);

// Checks that `result` has exactly the columns `types`, in binary format, none NULL (and 8
// bytes for kInt8Oid), so PgInt/PgBytes are safe on them; else INTERNAL naming `target`.
absl::Status PgCheckColumns(const PGresult* result, std::initializer_list<Oid> types,
                            const std::string& target, absl::string_view what);

// A binary int8 column's value, and a column's bytes (after PgCheckColumns).
int64_t PgInt(const PGresult* result, int row, int column);
std::string PgBytes(const PGresult* result, int row, int column);

// `url` with the password of its user part, if any, replaced by "****".
std::string RedactPostgresUrl(absl::string_view url);

// A pool of connections to one database, opened on demand up to Options::max_connections.
// Thread-safe.
class PgPool {
 public:
  struct Options {
    // Connections kept open at most; Acquire waits for a free one beyond that.
    int max_connections = 4;
    // How long opening one connection may take, unless the URL sets connect_timeout.
    absl::Duration connect_timeout = absl::Seconds(10);
  };

  // A pool for `url` (postgres://user:password@host:port/database?options, or postgresql://);
  // connects nothing yet. A malformed URL or bad options are INVALID_ARGUMENT (the URL's
  // password never appears in messages).
  static absl::StatusOr<std::unique_ptr<PgPool>> Create(const std::string& url,
                                                        const Options& options);

  // Closes the idle connections; every borrowed one must have been released.
  ~PgPool();
  PgPool(const PgPool&) = delete;
  PgPool& operator=(const PgPool&) = delete;

  // host:port/database of the server, for logs and messages (never the password).
  const std::string& target() const { return target_; }

  // Borrows a connection (opening one when below max_connections). A server that cannot be
  // reached is UNAVAILABLE naming the target; refused credentials are PERMISSION_DENIED; a
  // missing database is FAILED_PRECONDITION.
  absl::StatusOr<PGconn*> Acquire();
  // Returns a borrowed connection; one that is broken or inside a transaction is closed.
  void Release(PGconn* conn);

  // A new connection outside the pool (e.g. one that LISTENs); the caller PQfinish()es it.
  // Errors as Acquire's.
  absl::StatusOr<PGconn*> Connect() const;

  // Which named statements `conn` has prepared (see PgTransaction::ExecPrepared). Forgotten
  // when the connection is closed or reset.
  bool IsPrepared(PGconn* conn, const std::string& name) const;
  void NotePrepared(PGconn* conn, const std::string& name);
  void ForgetPrepared(PGconn* conn);

 private:
  PgPool(std::string url, std::string target, const Options& options)
      : url_(std::move(url)), target_(std::move(target)), options_(options) {}

  bool CanAcquire() const ABSL_SHARED_LOCKS_REQUIRED(mu_);

  const std::string url_;
  const std::string target_;
  const Options options_;

  mutable absl::Mutex mu_;
  std::vector<PGconn*> idle_ ABSL_GUARDED_BY(mu_);
  int open_ ABSL_GUARDED_BY(mu_) = 0;  // idle + borrowed + being opened
  std::map<PGconn*, std::set<std::string>> prepared_ ABSL_GUARDED_BY(mu_);
};

// One transaction on a connection borrowed from a pool. Rolled back (and the connection
// returned) when destroyed without a successful Commit(). Used by one thread at a time.
class PgTransaction {
 public:
  // `read_only`: a REPEATABLE READ READ ONLY transaction, so a call's reads agree. A connection
  // found broken at BEGIN (the server closed it while idle) is reconnected once.
  static absl::StatusOr<std::unique_ptr<PgTransaction>> Begin(PgPool* pool, bool read_only);
  // No BEGIN: each Exec is a transaction of its own, one round trip (e.g. a lease renewal).
  // Commit() is then not to be called. A connection the server closed while idle is replaced
  // first.
  static absl::StatusOr<std::unique_ptr<PgTransaction>> Autocommit(PgPool* pool);

  ~PgTransaction();
  PgTransaction(const PgTransaction&) = delete;
  PgTransaction& operator=(const PgTransaction&) = delete;

  // Runs one statement with binary parameters and binary results.
  absl::StatusOr<PgResult> Exec(const std::string& sql, const PgParams& params,
                                absl::string_view what);

  // Exec of a statement the connection prepares once under `name` (which must always stand
  // for the same `sql`), so the server parses and plans it once per connection rather than on
  // every call. A connection that lost it (reset, or a pooler in between) prepares it again:
  // outside a transaction the call is retried once; inside one the error is returned (the
  // transaction is aborted) and the next use prepares it.
  absl::StatusOr<PgResult> ExecPrepared(const std::string& name, const std::string& sql,
                                        const PgParams& params, absl::string_view what);

  // Runs statements without parameters (e.g. the schema), no rows expected.
  absl::Status Run(const char* sql, absl::string_view what);

  // COMMIT. An unanswered COMMIT is UNAVAILABLE with "outcome unknown"; a transaction the
  // server rolled back instead is ABORTED.
  absl::Status Commit();

 private:
  PgTransaction(PgPool* pool, PGconn* conn) : pool_(pool), conn_(conn) {}

  PgPool* const pool_;
  PGconn* const conn_;
  bool open_ = false;
};

}  // namespace rein

#endif  // REIN_ROUTER_SERVICE_STORE_PG_SESSION_H_
