// PostgreSQL sessions for PostgresRunStore: a pool of libpq connections, transactions on a
// borrowed connection, binary parameters and results, and SQLSTATE-to-status mapping.
#include "router_service/store/pg_session.h"

#include <poll.h>
#include <postgresql/libpq-fe.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace rein {
namespace {

std::string OneLine(absl::string_view text) {
  std::string line =
      absl::StrReplaceAll(absl::StripTrailingAsciiWhitespace(text), {{"\n", " "}, {"\t", " "}});
  return line;
}

struct ConninfoDeleter {
  void operator()(PQconninfoOption* options) const { PQconninfoFree(options); }
};

}  // namespace

PgParams& PgParams::Int(int64_t value) {
  std::string bytes(8, '\0');
  const uint64_t v = static_cast<uint64_t>(value);
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((v >> (56 - 8 * i)) & 0xff);
  return Add(kInt8Oid, std::move(bytes), /*null=*/false);
}

PgParams& PgParams::Text(absl::string_view value) {
  return Add(kTextOid, std::string(value), /*null=*/false);
}

PgParams& PgParams::Bytes(absl::string_view value) {
  return Add(kByteaOid, std::string(value), /*null=*/false);
}

PgParams& PgParams::BytesArray(const std::vector<std::string>& values) {
  // array_recv's format: ndim, has-nulls flag, element type, then per dimension its length
  // and lower bound, then each element as a length and its bytes; all integers big-endian.
  std::string bytes;
  auto put = [&bytes](uint32_t v) {
    for (int i = 3; i >= 0; --i) bytes.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  };
  size_t total = 20;
  for (const std::string& value : values) total += 4 + value.size();
  bytes.reserve(total);
  put(values.empty() ? 0 : 1);
  put(0);
  put(kByteaOid);
  if (!values.empty()) {
    put(static_cast<uint32_t>(values.size()));
    put(1);
  }
  for (const std::string& value : values) {
    put(static_cast<uint32_t>(value.size()));
    bytes.append(value);
  }
  return Add(kByteaArrayOid, std::move(bytes), /*null=*/false);
}

PgParams& PgParams::Null(Oid type) { return Add(type, std::string(), /*null=*/true); }

void PgParams::Arrays(std::vector<const char*>* values, std::vector<int>* lengths,
                      std::vector<int>* formats) const {
  for (size_t i = 0; i < values_.size(); ++i) {
    values->push_back(nulls_[i] ? nullptr : values_[i].data());
    lengths->push_back(static_cast<int>(values_[i].size()));
    formats->push_back(1);
  }
}

PgParams& PgParams::Add(Oid type, std::string value, bool null) {
  types_.push_back(type);
  values_.push_back(std::move(value));
  nulls_.push_back(null);
  return *this;
}

absl::StatusCode CodeForSqlState(absl::string_view state) {
  if (state == "40001" || state == "40P01") return absl::StatusCode::kAborted;
  if (state == "23505") return absl::StatusCode::kAlreadyExists;
  if (state == "57014") return absl::StatusCode::kDeadlineExceeded;  // query_canceled
  if (state == "42P01" || state == "42703") return absl::StatusCode::kFailedPrecondition;
  const absl::string_view cls = state.substr(0, 2);
  if (cls == "08" || cls == "57" || cls == "58") return absl::StatusCode::kUnavailable;
  if (cls == "53" || cls == "54") return absl::StatusCode::kResourceExhausted;
  if (cls == "22") return absl::StatusCode::kInvalidArgument;
  if (cls == "28" || state == "42501") return absl::StatusCode::kPermissionDenied;
  if (cls == "25") return absl::StatusCode::kFailedPrecondition;  // read-only transaction etc.
  return absl::StatusCode::kInternal;
}

absl::Status PgError(PGconn* conn, const PGresult* result, const std::string& target,
                     absl::string_view what) {
  const char* state = result != nullptr ? PQresultErrorField(result, PG_DIAG_SQLSTATE) : nullptr;
  if (state == nullptr) {
    return absl::UnavailableError(absl::StrCat(
        "PostgreSQL ", target, ": ", what, ": connection lost: ", OneLine(PQerrorMessage(conn))));
  }
  const char* primary = PQresultErrorField(result, PG_DIAG_MESSAGE_PRIMARY);
  return absl::Status(CodeForSqlState(state), absl::StrCat("PostgreSQL ", target, ": ", what, ": ",
                                                           primary != nullptr ? primary : "error",
                                                           " (SQLSTATE ", state, ")"));
}

absl::Status PgCheckColumns(const PGresult* result, std::initializer_list<Oid> types,
                            const std::string& target, absl::string_view what) {
  const absl::Status mismatch = absl::InternalError(
      absl::StrCat("PostgreSQL ", target, ": ", what, ": unexpected result columns"));
  if (PQnfields(result) != static_cast<int>(types.size())) return mismatch;
  int column = 0;
  for (Oid type : types) {
    if (PQftype(result, column) != type || PQfformat(result, column) != 1) return mismatch;
    for (int row = 0; row < PQntuples(result); ++row) {
      if (PQgetisnull(result, row, column) ||
          (type == kInt8Oid && PQgetlength(result, row, column) != 8)) {
        return mismatch;
      }
    }
    ++column;
  }
  return absl::OkStatus();
}

int64_t PgInt(const PGresult* result, int row, int column) {
  const auto* p = reinterpret_cast<const unsigned char*>(PQgetvalue(result, row, column));
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | p[i];
  return static_cast<int64_t>(v);
}

std::string PgBytes(const PGresult* result, int row, int column) {
  return std::string(PQgetvalue(result, row, column),
                     static_cast<size_t>(PQgetlength(result, row, column)));
}

std::string RedactPostgresUrl(absl::string_view url) {
  const size_t scheme = url.find("://");
  if (scheme == absl::string_view::npos) return std::string(url);
  const size_t start = scheme + 3;
  const size_t end = std::min(url.find_first_of("/?", start), url.size());
  const size_t at = url.rfind('@', end);
  if (at == absl::string_view::npos || at < start) return std::string(url);
  const size_t colon = url.find(':', start);
  if (colon == absl::string_view::npos || colon > at) return std::string(url);
  return absl::StrCat(url.substr(0, colon + 1), "****", url.substr(at));
}

absl::StatusOr<std::unique_ptr<PgPool>> PgPool::Create(const std::string& url,
                                                       const Options& options) {
  if (!absl::StartsWith(url, "postgres://") && !absl::StartsWith(url, "postgresql://")) {
    return absl::InvalidArgumentError(
        "PostgreSQL URL must start with postgres:// or postgresql:// "
        "(postgres://user:password@host:port/database)");
  }
  if (options.max_connections < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_connections must be at least 1, got ", options.max_connections));
  }
  if (options.connect_timeout < absl::Seconds(1)) {
    return absl::InvalidArgumentError("connect_timeout must be at least 1 second");
  }
  char* error = nullptr;
  std::unique_ptr<PQconninfoOption, ConninfoDeleter> parsed(PQconninfoParse(url.c_str(), &error));
  if (parsed == nullptr) {
    std::string message = error != nullptr ? OneLine(error) : "out of memory";
    PQfreemem(error);
    return absl::InvalidArgumentError(absl::StrCat(
        "invalid PostgreSQL URL: ", absl::StrReplaceAll(message, {{url, RedactPostgresUrl(url)}})));
  }
  std::string host, hostaddr, port, dbname, user;
  for (const PQconninfoOption* option = parsed.get(); option->keyword != nullptr; ++option) {
    if (option->val == nullptr) continue;
    const absl::string_view keyword = option->keyword;
    if (keyword == "host") host = option->val;
    if (keyword == "hostaddr") hostaddr = option->val;
    if (keyword == "port") port = option->val;
    if (keyword == "dbname") dbname = option->val;
    if (keyword == "user") user = option->val;
  }
  // libpq checks ports only when connecting, and would then call a typo unreachable.
  for (absl::string_view one : absl::StrSplit(port, ',', absl::SkipEmpty())) {
    int number = 0;
    if (!absl::SimpleAtoi(one, &number) || number < 1 || number > 65535) {
      return absl::InvalidArgumentError(
          absl::StrCat("invalid PostgreSQL URL: port \"", one, "\" is not a number in 1..65535"));
    }
  }
  std::string target =
      absl::StrCat(!host.empty() ? host : (!hostaddr.empty() ? hostaddr : "localhost(socket)"), ":",
                   port.empty() ? "5432" : port, "/", !dbname.empty() ? dbname : user);
  return std::unique_ptr<PgPool>(new PgPool(url, std::move(target), options));
}

PgPool::~PgPool() {
  absl::MutexLock lock(&mu_);
  for (PGconn* conn : idle_) PQfinish(conn);
  idle_.clear();
  prepared_.clear();
}

bool PgPool::IsPrepared(PGconn* conn, const std::string& name) const {
  absl::MutexLock lock(&mu_);
  auto it = prepared_.find(conn);
  return it != prepared_.end() && it->second.count(name) > 0;
}

void PgPool::NotePrepared(PGconn* conn, const std::string& name) {
  absl::MutexLock lock(&mu_);
  prepared_[conn].insert(name);
}

void PgPool::ForgetPrepared(PGconn* conn) {
  absl::MutexLock lock(&mu_);
  prepared_.erase(conn);
}

absl::StatusOr<PGconn*> PgPool::Connect() const {
  // Defaults first: values in the URL (expanded from dbname) override them.
  const std::string timeout =
      absl::StrCat(std::max<int64_t>(1, absl::ToInt64Seconds(options_.connect_timeout)));
  // TCP keepalives and a user timeout: a server that vanished without closing the connection
  // (a cut link) fails the call within seconds instead of after the kernel's retransmissions,
  // so the router's lease loop notices and the calls say UNAVAILABLE.
  const char* const keywords[] = {"connect_timeout",
                                  "application_name",
                                  "keepalives",
                                  "keepalives_idle",
                                  "keepalives_interval",
                                  "keepalives_count",
                                  "tcp_user_timeout",
                                  "dbname",
                                  nullptr};
  const char* const values[] = {timeout.c_str(), "rein-router", "1",    "5", "2", "3",
                                "10000",         url_.c_str(),  nullptr};
  PGconn* conn = PQconnectdbParams(keywords, values, /*expand_dbname=*/1);
  if (conn == nullptr) return absl::ResourceExhaustedError("libpq: out of memory");
  if (PQstatus(conn) == CONNECTION_OK) return conn;
  const std::string message = OneLine(PQerrorMessage(conn));
  PQfinish(conn);
  absl::StatusCode code = absl::StatusCode::kUnavailable;
  if (absl::StrContains(message, "authentication failed") ||
      absl::StrContains(message, "no pg_hba.conf entry") ||
      absl::StrContains(message, "password is required")) {
    code = absl::StatusCode::kPermissionDenied;
  } else if (absl::StrContains(message, "does not exist")) {
    code = absl::StatusCode::kFailedPrecondition;
  }
  return absl::Status(
      code, absl::StrCat("cannot connect to PostgreSQL at ", target_, ": ",
                         absl::StrReplaceAll(message, {{url_, RedactPostgresUrl(url_)}})));
}

bool PgPool::CanAcquire() const { return !idle_.empty() || open_ < options_.max_connections; }

absl::StatusOr<PGconn*> PgPool::Acquire() {
  {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(this, &PgPool::CanAcquire));
    if (!idle_.empty()) {
      PGconn* conn = idle_.back();
      idle_.pop_back();
      return conn;
    }
    ++open_;
  }
  absl::StatusOr<PGconn*> conn = Connect();
  if (!conn.ok()) {
    absl::MutexLock lock(&mu_);
    --open_;
  }
  return conn;
}

void PgPool::Release(PGconn* conn) {
  const bool keep = PQstatus(conn) == CONNECTION_OK && PQtransactionStatus(conn) == PQTRANS_IDLE;
  {
    absl::MutexLock lock(&mu_);
    if (keep) {
      idle_.push_back(conn);
      return;
    }
    // Forgotten before the close: a later connection may get the same address.
    prepared_.erase(conn);
  }
  PQfinish(conn);
  absl::MutexLock lock(&mu_);
  --open_;
}

absl::StatusOr<std::unique_ptr<PgTransaction>> PgTransaction::Begin(PgPool* pool, bool read_only) {
  absl::StatusOr<PGconn*> conn = pool->Acquire();
  if (!conn.ok()) return conn.status();
  std::unique_ptr<PgTransaction> tx(new PgTransaction(pool, *conn));
  const char* begin = read_only ? "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY" : "BEGIN";
  absl::Status status = tx->Run(begin, "BEGIN");
  if (!status.ok() && PQstatus(*conn) == CONNECTION_BAD) {
    // The server closed an idle connection (restart, idle timeout): nothing was done yet,
    // so reconnect once and begin again.
    PQreset(*conn);
    pool->ForgetPrepared(*conn);
    if (PQstatus(*conn) == CONNECTION_OK) status = tx->Run(begin, "BEGIN");
  }
  if (!status.ok()) return status;
  tx->open_ = true;
  return tx;
}

namespace {

// False when the server closed an idle connection: its last words (a FATAL message) and the
// end of the stream are already on the socket. Reads only what is there; never waits.
bool StillOpen(PGconn* conn) {
  for (int i = 0; i < 4 && PQstatus(conn) == CONNECTION_OK; ++i) {
    pollfd p{PQsocket(conn), POLLIN, 0};
    if (p.fd < 0 || poll(&p, 1, 0) <= 0) break;   // nothing arrived: open
    if (PQconsumeInput(conn) == 0) return false;  // end of stream or a socket error
  }
  return PQstatus(conn) == CONNECTION_OK;
}

}  // namespace

absl::StatusOr<std::unique_ptr<PgTransaction>> PgTransaction::Autocommit(PgPool* pool) {
  absl::StatusOr<PGconn*> conn = pool->Acquire();
  if (!conn.ok()) return conn.status();
  // A server that closed the connection while it was idle (restart, idle timeout) has said
  // so on the socket: reading what is there, without waiting, finds that before a statement
  // is sent on it, so the statement goes on a new connection instead of failing.
  if (!StillOpen(*conn)) {
    PQreset(*conn);
    pool->ForgetPrepared(*conn);
  }
  return std::unique_ptr<PgTransaction>(new PgTransaction(pool, *conn));
}

PgTransaction::~PgTransaction() {
  if (open_) PQclear(PQexec(conn_, "ROLLBACK"));
  pool_->Release(conn_);
}

absl::StatusOr<PgResult> PgTransaction::Exec(const std::string& sql, const PgParams& params,
                                             absl::string_view what) {
  std::vector<const char*> values;
  std::vector<int> lengths;
  std::vector<int> formats;
  params.Arrays(&values, &lengths, &formats);
  PgResult result(PQexecParams(conn_, sql.c_str(), params.size(), params.types(), values.data(),
                               lengths.data(), formats.data(), /*resultFormat=*/1));
  const ExecStatusType status =
      result != nullptr ? PQresultStatus(result.get()) : PGRES_FATAL_ERROR;
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
    return PgError(conn_, result.get(), pool_->target(), what);
  }
  return result;
}

absl::StatusOr<PgResult> PgTransaction::ExecPrepared(const std::string& name,
                                                     const std::string& sql, const PgParams& params,
                                                     absl::string_view what) {
  std::vector<const char*> values;
  std::vector<int> lengths;
  std::vector<int> formats;
  params.Arrays(&values, &lengths, &formats);
  for (int attempt = 0;; ++attempt) {
    if (!pool_->IsPrepared(conn_, name)) {
      PgResult prepared(PQprepare(conn_, name.c_str(), sql.c_str(), params.size(), params.types()));
      const bool ok = prepared != nullptr && PQresultStatus(prepared.get()) == PGRES_COMMAND_OK;
      const char* state =
          prepared != nullptr ? PQresultErrorField(prepared.get(), PG_DIAG_SQLSTATE) : nullptr;
      // 42P05: prepared already (by this connection before a reset we did not see, or on the
      // server connection a pooler handed us); the name always stands for the same SQL.
      if (!ok && !(state != nullptr && absl::string_view(state) == "42P05")) {
        return PgError(conn_, prepared.get(), pool_->target(),
                       absl::StrCat(what, " (preparing the statement)"));
      }
      pool_->NotePrepared(conn_, name);
    }
    PgResult result(PQexecPrepared(conn_, name.c_str(), params.size(), values.data(),
                                   lengths.data(), formats.data(), /*resultFormat=*/1));
    const ExecStatusType status =
        result != nullptr ? PQresultStatus(result.get()) : PGRES_FATAL_ERROR;
    if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) return result;
    const char* state =
        result != nullptr ? PQresultErrorField(result.get(), PG_DIAG_SQLSTATE) : nullptr;
    if (state != nullptr && absl::string_view(state) == "26000") {  // no such statement
      pool_->ForgetPrepared(conn_);
      if (!open_ && attempt == 0) continue;
    }
    return PgError(conn_, result.get(), pool_->target(), what);
  }
}

absl::Status PgTransaction::Run(const char* sql, absl::string_view what) {
  PgResult result(PQexec(conn_, sql));
  if (result == nullptr || PQresultStatus(result.get()) != PGRES_COMMAND_OK) {
    return PgError(conn_, result.get(), pool_->target(), what);
  }
  return absl::OkStatus();
}

absl::Status PgTransaction::Commit() {
  PgResult result(PQexec(conn_, "COMMIT"));
  open_ = false;
  if (result == nullptr || PQresultStatus(result.get()) != PGRES_COMMAND_OK) {
    // Sent but unanswered: the outcome is unknown to us.
    return PgError(conn_, result.get(), pool_->target(), "COMMIT (outcome unknown)");
  }
  if (absl::string_view(PQcmdStatus(result.get())) != "COMMIT") {
    return absl::AbortedError(
        absl::StrCat("PostgreSQL ", pool_->target(), ": the transaction was rolled back"));
  }
  return absl::OkStatus();
}

}  // namespace rein
