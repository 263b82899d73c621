// PostgresRunStore: the RunStore in a PostgreSQL database, for one or several routers.
#include "router_service/store/postgres_run_store.h"

#include <postgresql/libpq-fe.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/status_macros.h"
#include "router_service/store/store_codec.h"
#include "google/protobuf/timestamp.pb.h"
#include "rein/v1/types.pb.h"

namespace rein {
namespace {

constexpr int kDefaultPageSize = 50;
constexpr int kMaxPageSize = 1000;
constexpr size_t kMaxPageBytes = 3 << 20;
// Events per INSERT statement (3 parameters each, under PostgreSQL's 65535).
constexpr size_t kEventsPerInsert = 1000;
// pg_advisory_xact_lock key that serializes schema creation between routers ("rein").
constexpr int64_t kSchemaLockKey = 0x7265696e;


// Type OIDs of the parameters (pg_type.oid, fixed since PostgreSQL 7).
constexpr Oid kByteaOid = 17;
constexpr Oid kInt8Oid = 20;
constexpr Oid kTextOid = 25;

// run_id is compared byte by byte ("C"), as in SQLite, so page order and cursors never depend
// on the database's locale.
constexpr char kSchema[] = R"sql(
CREATE TABLE IF NOT EXISTS runs (
  run_id TEXT COLLATE "C" PRIMARY KEY,
  request_id TEXT COLLATE "C" UNIQUE,
  stage BIGINT NOT NULL,
  reason BIGINT NOT NULL,
  version BIGINT NOT NULL,
  last_seq BIGINT NOT NULL,
  created_us BIGINT NOT NULL,
  updated_us BIGINT NOT NULL,
  run BYTEA NOT NULL,
  state BYTEA NOT NULL
);
CREATE INDEX IF NOT EXISTS runs_by_created ON runs (created_us DESC, run_id DESC);
CREATE INDEX IF NOT EXISTS runs_by_stage ON runs (stage, created_us DESC, run_id DESC);
CREATE INDEX IF NOT EXISTS runs_by_reason ON runs (reason, created_us DESC, run_id DESC);
CREATE INDEX IF NOT EXISTS runs_unfinished ON runs (created_us, run_id)
  WHERE stage NOT IN (7, 8, 9);
CREATE TABLE IF NOT EXISTS events (
  run_id TEXT COLLATE "C" NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
  seq BIGINT NOT NULL,
  body BYTEA NOT NULL,
  PRIMARY KEY (run_id, seq)
);
CREATE TABLE IF NOT EXISTS snapshots (
  run_id TEXT COLLATE "C" NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
  version BIGINT NOT NULL,
  iteration BIGINT NOT NULL,
  state BYTEA NOT NULL,
  PRIMARY KEY (run_id, version)
);
)sql";

struct ResultDeleter {
  void operator()(PGresult* result) const { PQclear(result); }
};
using Result = std::unique_ptr<PGresult, ResultDeleter>;

// Query parameters, all sent in binary format with their types declared.
class Params {
 public:
  Params& Int(int64_t value) {
    std::string bytes(8, '\0');
    const uint64_t v = static_cast<uint64_t>(value);
    for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((v >> (56 - 8 * i)) & 0xff);
    return Add(kInt8Oid, std::move(bytes), /*null=*/false);
  }
  Params& Text(absl::string_view value) { return Add(kTextOid, std::string(value), false); }
  Params& Bytes(absl::string_view value) { return Add(kByteaOid, std::string(value), false); }
  Params& Null(Oid type) { return Add(type, std::string(), /*null=*/true); }

  int size() const { return static_cast<int>(types_.size()); }
  const Oid* types() const { return types_.data(); }

  // Pointer arrays for PQexecParams; valid while this object is unchanged.
  void Arrays(std::vector<const char*>* values, std::vector<int>* lengths,
              std::vector<int>* formats) const {
    for (size_t i = 0; i < values_.size(); ++i) {
      values->push_back(nulls_[i] ? nullptr : values_[i].data());
      lengths->push_back(static_cast<int>(values_[i].size()));
      formats->push_back(1);
    }
  }

 private:
  Params& Add(Oid type, std::string value, bool null) {
    types_.push_back(type);
    values_.push_back(std::move(value));
    nulls_.push_back(null);
    return *this;
  }

  std::vector<Oid> types_;
  std::vector<std::string> values_;
  std::vector<bool> nulls_;
};

// The Abseil code for a PostgreSQL error class (SQLSTATE, appendix A of its manual).
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

std::string OneLine(absl::string_view text) {
  std::string line = absl::StrReplaceAll(absl::StripTrailingAsciiWhitespace(text),
                                         {{"\n", " "}, {"\t", " "}});
  return line;
}

// The status for a failed statement: by SQLSTATE when the server answered, else UNAVAILABLE
// (the connection is gone; the transaction's outcome is then rolled back by the server).
absl::Status PgError(PGconn* conn, const PGresult* result, const std::string& target,
                     absl::string_view what) {
  const char* state = result != nullptr ? PQresultErrorField(result, PG_DIAG_SQLSTATE) : nullptr;
  if (state == nullptr) {
    return absl::UnavailableError(absl::StrCat("PostgreSQL ", target, ": ", what,
                                               ": connection lost: ",
                                               OneLine(PQerrorMessage(conn))));
  }
  const char* primary = PQresultErrorField(result, PG_DIAG_MESSAGE_PRIMARY);
  return absl::Status(CodeForSqlState(state),
                      absl::StrCat("PostgreSQL ", target, ": ", what, ": ",
                                   primary != nullptr ? primary : "error", " (SQLSTATE ", state,
                                   ")"));
}

int64_t GetInt(const PGresult* result, int row, int column) {
  const auto* p = reinterpret_cast<const unsigned char*>(PQgetvalue(result, row, column));
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | p[i];
  return static_cast<int64_t>(v);
}

std::string GetBytes(const PGresult* result, int row, int column) {
  return std::string(PQgetvalue(result, row, column),
                     static_cast<size_t>(PQgetlength(result, row, column)));
}

// Checks that the result has the columns the code reads, so GetInt/GetBytes are safe.
absl::Status CheckColumns(const PGresult* result, std::initializer_list<Oid> types,
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

// `url` with the password of its user part, if any, replaced by "****".
std::string RedactUrl(absl::string_view url) {
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

struct ConninfoDeleter {
  void operator()(PQconninfoOption* options) const { PQconninfoFree(options); }
};

}  // namespace

// One transaction on a borrowed connection. Rolled back (and the connection returned) when
// destroyed without a successful Commit().
class PostgresRunStore::Transaction {
 public:
  // `read_only`: a REPEATABLE READ READ ONLY transaction, so a call's reads agree.
  static absl::StatusOr<std::unique_ptr<Transaction>> Begin(PostgresRunStore* store,
                                                            bool read_only) {
    ASSIGN_OR_RETURN(PGconn * conn, store->Acquire());
    std::unique_ptr<Transaction> tx(new Transaction(store, conn));
    const char* begin =
        read_only ? "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY" : "BEGIN";
    absl::Status status = tx->Run(begin, "BEGIN");
    if (!status.ok() && PQstatus(conn) == CONNECTION_BAD) {
      // The server closed an idle connection (restart, idle timeout): nothing was done yet,
      // so reconnect once and begin again.
      PQreset(conn);
      if (PQstatus(conn) == CONNECTION_OK) status = tx->Run(begin, "BEGIN");
    }
    if (!status.ok()) return status;
    tx->open_ = true;
    return tx;
  }

  ~Transaction() {
    if (open_) PQclear(PQexec(conn_, "ROLLBACK"));
    store_->Release(conn_);
  }

  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;

  // Runs one statement with binary parameters and binary results.
  absl::StatusOr<Result> Exec(const std::string& sql, const Params& params,
                              absl::string_view what) {
    std::vector<const char*> values;
    std::vector<int> lengths;
    std::vector<int> formats;
    params.Arrays(&values, &lengths, &formats);
    Result result(PQexecParams(conn_, sql.c_str(), params.size(), params.types(),
                               values.data(), lengths.data(), formats.data(),
                               /*resultFormat=*/1));
    const ExecStatusType status =
        result != nullptr ? PQresultStatus(result.get()) : PGRES_FATAL_ERROR;
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
      return PgError(conn_, result.get(), store_->target_, what);
    }
    return result;
  }

  // Runs statements without parameters (e.g. the schema), no rows expected.
  absl::Status Run(const char* sql, absl::string_view what) {
    Result result(PQexec(conn_, sql));
    if (result == nullptr || PQresultStatus(result.get()) != PGRES_COMMAND_OK) {
      return PgError(conn_, result.get(), store_->target_, what);
    }
    return absl::OkStatus();
  }

  absl::Status Commit() {
    Result result(PQexec(conn_, "COMMIT"));
    open_ = false;
    if (result == nullptr || PQresultStatus(result.get()) != PGRES_COMMAND_OK) {
      // Sent but unanswered: the outcome is unknown to us.
      return PgError(conn_, result.get(), store_->target_, "COMMIT (outcome unknown)");
    }
    if (absl::string_view(PQcmdStatus(result.get())) != "COMMIT") {
      return absl::AbortedError(
          absl::StrCat("PostgreSQL ", store_->target_, ": the transaction was rolled back"));
    }
    return absl::OkStatus();
  }

 private:
  Transaction(PostgresRunStore* store, PGconn* conn) : store_(store), conn_(conn) {}

  PostgresRunStore* const store_;
  PGconn* const conn_;
  bool open_ = false;
};

PostgresRunStore::PostgresRunStore(std::string url, std::string target, const Options& options)
    : url_(std::move(url)), target_(std::move(target)), options_(options) {}

PostgresRunStore::~PostgresRunStore() {
  absl::MutexLock lock(&mu_);
  for (PGconn* conn : idle_) PQfinish(conn);
  idle_.clear();
}

absl::StatusOr<std::unique_ptr<PostgresRunStore>> PostgresRunStore::Open(const std::string& url,
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
        "invalid PostgreSQL URL: ", absl::StrReplaceAll(message, {{url, RedactUrl(url)}})));
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
  std::string target = absl::StrCat(
      !host.empty() ? host : (!hostaddr.empty() ? hostaddr : "localhost(socket)"), ":",
      port.empty() ? "5432" : port, "/", !dbname.empty() ? dbname : user);

  std::unique_ptr<PostgresRunStore> store(new PostgresRunStore(url, std::move(target), options));
  RETURN_IF_ERROR(store->Initialize());
  return store;
}

absl::StatusOr<PGconn*> PostgresRunStore::Connect() const {
  // Defaults first: values in the URL (expanded from dbname) override them.
  const std::string timeout =
      absl::StrCat(std::max<int64_t>(1, absl::ToInt64Seconds(options_.connect_timeout)));
  const char* const keywords[] = {"connect_timeout", "application_name", "dbname", nullptr};
  const char* const values[] = {timeout.c_str(), "rein-router", url_.c_str(), nullptr};
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
  return absl::Status(code, absl::StrCat("cannot connect to PostgreSQL at ", target_, ": ",
                                         absl::StrReplaceAll(message, {{url_, RedactUrl(url_)}})));
}

bool PostgresRunStore::CanAcquire() const {
  return !idle_.empty() || open_ < options_.max_connections;
}

absl::StatusOr<PGconn*> PostgresRunStore::Acquire() {
  {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(this, &PostgresRunStore::CanAcquire));
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

void PostgresRunStore::Release(PGconn* conn) {
  const bool keep =
      PQstatus(conn) == CONNECTION_OK && PQtransactionStatus(conn) == PQTRANS_IDLE;
  if (!keep) PQfinish(conn);
  absl::MutexLock lock(&mu_);
  if (keep) {
    idle_.push_back(conn);
  } else {
    --open_;
  }
}

absl::Status PostgresRunStore::Initialize() {
  ASSIGN_OR_RETURN(std::unique_ptr<Transaction> tx, Transaction::Begin(this, false));
  // Routers starting together would race on CREATE TABLE IF NOT EXISTS; one at a time.
  RETURN_IF_ERROR(tx->Exec("SELECT pg_advisory_xact_lock($1)", Params().Int(kSchemaLockKey),
                           "locking the schema")
                      .status());
  RETURN_IF_ERROR(
      tx->Run("CREATE TABLE IF NOT EXISTS schema_version ("
              "id BIGINT PRIMARY KEY CHECK (id = 1), version BIGINT NOT NULL)",
              "creating schema_version"));
  int64_t version = 0;
  {
    ASSIGN_OR_RETURN(Result result, tx->Exec("SELECT version FROM schema_version WHERE id = 1",
                                             Params(), "reading schema_version"));
    RETURN_IF_ERROR(CheckColumns(result.get(), {kInt8Oid}, target_, "reading schema_version"));
    if (PQntuples(result.get()) == 1) version = GetInt(result.get(), 0, 0);
  }
  if (version != 0 && version != kSchemaVersion) {
    return absl::FailedPreconditionError(
        absl::StrCat("PostgreSQL database ", target_, " has schema version ", version,
                     "; this binary writes version ", kSchemaVersion,
                     " and does not migrate (use another database)"));
  }
  RETURN_IF_ERROR(tx->Run(kSchema, "creating tables"));
  if (version == 0) {
    RETURN_IF_ERROR(tx->Exec("INSERT INTO schema_version (id, version) VALUES (1, $1)",
                             Params().Int(kSchemaVersion), "writing schema_version")
                        .status());
  }
  return tx->Commit();
}

absl::Status PostgresRunStore::ParseStoredRun(const std::string& base, const std::string& tail,
                                              const std::string& run_id,
                                              rein::v1::Run* run) const {
  // `base` is the run without its state and updated_at; `tail` holds just those two.
  if (!run->ParseFromString(base) || !run->MergeFromString(tail) || run->run_id() != run_id) {
    return absl::DataLossError(
        absl::StrCat("PostgreSQL database ", target_, ": the stored run ", run_id,
                     " is corrupt"));
  }
  return absl::OkStatus();
}

namespace {

// Inserts `events` with seq first_seq, first_seq+1, ... (filling in their run_id and seq).
absl::Status InsertEvents(
    const std::string& run_id, int64_t first_seq, std::vector<rein::v1::RunEvent>& events,
    const std::function<absl::StatusOr<Result>(const std::string&, const Params&,
                                               absl::string_view)>& exec) {
  for (size_t start = 0; start < events.size(); start += kEventsPerInsert) {
    const size_t end = std::min(events.size(), start + kEventsPerInsert);
    std::string sql = "INSERT INTO events (run_id, seq, body) VALUES ";
    Params params;
    for (size_t i = start; i < end; ++i) {
      rein::v1::RunEvent& event = events[i];
      event.set_run_id(run_id);
      event.set_seq(first_seq + static_cast<int64_t>(i));
      std::string body;
      if (!event.SerializeToString(&body)) {
        return absl::InvalidArgumentError(
            absl::StrCat("event ", i, " of run ", run_id, " cannot be serialized (too large)"));
      }
      const int n = params.size();
      absl::StrAppend(&sql, i == start ? "" : ", ", "($", n + 1, ", $", n + 2, ", $", n + 3,
                      ")");
      params.Text(run_id).Int(event.seq()).Bytes(body);
    }
    RETURN_IF_ERROR(exec(sql, params, absl::StrCat("writing events of run ", run_id)).status());
  }
  return absl::OkStatus();
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

  ASSIGN_OR_RETURN(std::unique_ptr<Transaction> tx, Transaction::Begin(this, false));
  Params params;
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
  // DO NOTHING on either unique key: a concurrent creator with the same key is waited for.
  ASSIGN_OR_RETURN(Result inserted,
                   tx->Exec("INSERT INTO runs (run_id, request_id, stage, reason, version, "
                            "last_seq, created_us, updated_us, run, state) "
                            "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) "
                            "ON CONFLICT DO NOTHING",
                            params, absl::StrCat("writing run ", run.run_id())));
  if (absl::string_view(PQcmdTuples(inserted.get())) == "1") {
    auto exec = [&tx](const std::string& sql, const Params& p, absl::string_view what) {
      return tx->Exec(sql, p, what);
    };
    RETURN_IF_ERROR(InsertEvents(run.run_id(), /*first_seq=*/1, events, exec));
    RETURN_IF_ERROR(tx->Commit());
    return CreateResult{run, /*created=*/true};
  }

  // Nothing inserted: the request_id names a run (return it) or the run_id is taken.
  if (!run.request_id().empty()) {
    ASSIGN_OR_RETURN(Result existing,
                     tx->Exec("SELECT run_id, run, state FROM runs WHERE request_id = $1",
                              Params().Text(run.request_id()), "looking up request_id"));
    RETURN_IF_ERROR(CheckColumns(existing.get(), {kTextOid, kByteaOid, kByteaOid}, target_,
                                 "looking up request_id"));
    if (PQntuples(existing.get()) == 1) {
      CreateResult result;
      const std::string existing_id = GetBytes(existing.get(), 0, 0);
      RETURN_IF_ERROR(ParseStoredRun(GetBytes(existing.get(), 0, 1),
                                     GetBytes(existing.get(), 0, 2), existing_id, &result.run));
      RETURN_IF_ERROR(tx->Commit());
      return result;
    }
  }
  return absl::AlreadyExistsError(absl::StrCat("run ", run.run_id(), " already exists"));
}

absl::StatusOr<rein::v1::Run> PostgresRunStore::GetRun(const std::string& run_id) {
  ASSIGN_OR_RETURN(std::unique_ptr<Transaction> tx, Transaction::Begin(this, true));
  const std::string what = absl::StrCat("reading run ", run_id);
  ASSIGN_OR_RETURN(Result result, tx->Exec("SELECT run, state FROM runs WHERE run_id = $1",
                                           Params().Text(run_id), what));
  RETURN_IF_ERROR(CheckColumns(result.get(), {kByteaOid, kByteaOid}, target_, what));
  if (PQntuples(result.get()) == 0) return absl::NotFoundError(absl::StrCat("no run ", run_id));
  rein::v1::Run run;
  RETURN_IF_ERROR(
      ParseStoredRun(GetBytes(result.get(), 0, 0), GetBytes(result.get(), 0, 1), run_id, &run));
  RETURN_IF_ERROR(tx->Commit());
  return run;
}

absl::StatusOr<std::vector<rein::v1::RunEvent>> PostgresRunStore::Commit(
    const std::string& run_id, int64_t expected_version, const rein::v1::RunState& new_state,
    std::vector<rein::v1::RunEvent> events, const std::optional<Snapshot>& snapshot,
    absl::Time now) {
  if (new_state.version() != expected_version + 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("new_state.version is ", new_state.version(), "; a commit on version ",
                     expected_version, " must store version ", expected_version + 1));
  }
  ASSIGN_OR_RETURN(const google::protobuf::Timestamp updated_at, ToTimestamp(now, "now"));
  ASSIGN_OR_RETURN(const int64_t updated_us, TimestampMicros(updated_at, "now"));
  // Only the state part of the row changes: the rest of the run was written once.
  ASSIGN_OR_RETURN(const std::string blob, StateTail(new_state, updated_at));
  const int64_t count = static_cast<int64_t>(events.size());

  ASSIGN_OR_RETURN(std::unique_ptr<Transaction> tx, Transaction::Begin(this, false));
  const std::string what = absl::StrCat("updating run ", run_id);
  // The row lock makes concurrent commits wait; after the winner commits, a waiting UPDATE
  // re-checks `version` on the new row and matches nothing.
  ASSIGN_OR_RETURN(Result updated,
                   tx->Exec("UPDATE runs SET stage = $1, reason = $2, version = $3, "
                            "last_seq = last_seq + $4, updated_us = $5, state = $6 "
                            "WHERE run_id = $7 AND version = $8 RETURNING last_seq",
                            Params()
                                .Int(new_state.stage())
                                .Int(new_state.outcome().reason())
                                .Int(new_state.version())
                                .Int(count)
                                .Int(updated_us)
                                .Bytes(blob)
                                .Text(run_id)
                                .Int(expected_version),
                            what));
  RETURN_IF_ERROR(CheckColumns(updated.get(), {kInt8Oid}, target_, what));
  if (PQntuples(updated.get()) == 0) {
    ASSIGN_OR_RETURN(Result current, tx->Exec("SELECT version FROM runs WHERE run_id = $1",
                                              Params().Text(run_id), what));
    RETURN_IF_ERROR(CheckColumns(current.get(), {kInt8Oid}, target_, what));
    if (PQntuples(current.get()) == 0) {
      return absl::NotFoundError(absl::StrCat("no run ", run_id));
    }
    return absl::FailedPreconditionError(absl::StrCat("run ", run_id, " is at version ",
                                                      GetInt(current.get(), 0, 0),
                                                      ", not expected_version ",
                                                      expected_version));
  }
  const int64_t first_seq = GetInt(updated.get(), 0, 0) - count + 1;
  auto exec = [&tx](const std::string& sql, const Params& p, absl::string_view w) {
    return tx->Exec(sql, p, w);
  };
  RETURN_IF_ERROR(InsertEvents(run_id, first_seq, events, exec));
  if (snapshot.has_value()) {
    ASSIGN_OR_RETURN(Result inserted,
                     tx->Exec("INSERT INTO snapshots (run_id, version, iteration, state) "
                              "VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
                              Params()
                                  .Text(run_id)
                                  .Int(snapshot->version)
                                  .Int(snapshot->iteration)
                                  .Bytes(snapshot->state),
                              absl::StrCat("writing a snapshot of run ", run_id)));
    if (absl::string_view(PQcmdTuples(inserted.get())) != "1") {
      return absl::AlreadyExistsError(absl::StrCat("run ", run_id, " has a snapshot of version ",
                                                   snapshot->version, " already"));
    }
  }
  RETURN_IF_ERROR(tx->Commit());
  return events;
}

absl::StatusOr<std::vector<rein::v1::RunEvent>> PostgresRunStore::ReadEvents(
    const std::string& run_id, int64_t after_seq, int limit) {
  ASSIGN_OR_RETURN(std::unique_ptr<Transaction> tx, Transaction::Begin(this, true));
  const std::string what = absl::StrCat("reading events of run ", run_id);
  {
    ASSIGN_OR_RETURN(Result exists, tx->Exec("SELECT 1 FROM runs WHERE run_id = $1",
                                             Params().Text(run_id), what));
    if (PQntuples(exists.get()) == 0) return absl::NotFoundError(absl::StrCat("no run ", run_id));
  }
  Params params;
  params.Text(run_id).Int(after_seq);
  if (limit > 0) {
    params.Int(limit);
  } else {
    params.Null(kInt8Oid);  // LIMIT NULL: no limit
  }
  ASSIGN_OR_RETURN(Result result, tx->Exec("SELECT seq, body FROM events WHERE run_id = $1 "
                                           "AND seq > $2 ORDER BY seq LIMIT $3",
                                           params, what));
  RETURN_IF_ERROR(CheckColumns(result.get(), {kInt8Oid, kByteaOid}, target_, what));
  std::vector<rein::v1::RunEvent> events;
  const int rows = PQntuples(result.get());
  events.reserve(static_cast<size_t>(rows));
  for (int row = 0; row < rows; ++row) {
    const int64_t seq = GetInt(result.get(), row, 0);
    rein::v1::RunEvent& event = events.emplace_back();
    if (!event.ParseFromArray(PQgetvalue(result.get(), row, 1),
                              PQgetlength(result.get(), row, 1))) {
      return absl::DataLossError(absl::StrCat("PostgreSQL database ", target_, ": event ", seq,
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
  std::string sql = "SELECT run_id, created_us, run, state FROM runs WHERE TRUE";
  Params params;
  if (filter.stage != rein::v1::STAGE_UNSPECIFIED) {
    params.Int(filter.stage);
    absl::StrAppend(&sql, " AND stage = $", params.size());
  }
  if (filter.outcome != rein::v1::TERMINATION_REASON_UNSPECIFIED) {
    params.Int(filter.outcome);
    absl::StrAppend(&sql, " AND reason = $", params.size());
  }
  if (cursor.has_value()) {
    params.Int(cursor->created_us).Text(cursor->run_id);
    absl::StrAppend(&sql, " AND (created_us, run_id) < ($", params.size() - 1, ", $",
                    params.size(), ")");
  }
  params.Int(page_size + 1);  // one more tells whether there is a next page
  absl::StrAppend(&sql, " ORDER BY created_us DESC, run_id DESC LIMIT $", params.size());

  ASSIGN_OR_RETURN(std::unique_ptr<Transaction> tx, Transaction::Begin(this, true));
  ASSIGN_OR_RETURN(Result result, tx->Exec(sql, params, "listing runs"));
  RETURN_IF_ERROR(CheckColumns(result.get(), {kTextOid, kInt8Oid, kByteaOid, kByteaOid},
                               target_, "listing runs"));
  RunPage page;
  Cursor last;
  size_t page_bytes = 0;
  const int rows = PQntuples(result.get());
  for (int row = 0; row < rows; ++row) {
    // A page ends at page_size runs, or sooner once it holds kMaxPageBytes, so that a reply
    // stays under gRPC's default 4 MiB receive limit.
    if (static_cast<int>(page.runs.size()) == page_size || page_bytes >= kMaxPageBytes) {
      page.next_page_token = MakePageToken(filter, last);
      break;
    }
    last.run_id = GetBytes(result.get(), row, 0);
    last.created_us = GetInt(result.get(), row, 1);
    rein::v1::Run& run = page.runs.emplace_back();
    RETURN_IF_ERROR(ParseStoredRun(GetBytes(result.get(), row, 2), GetBytes(result.get(), row, 3),
                                   last.run_id, &run));
    page_bytes += run.ByteSizeLong();
  }
  RETURN_IF_ERROR(tx->Commit());
  return page;
}

absl::StatusOr<std::vector<Snapshot>> PostgresRunStore::ListSnapshots(const std::string& run_id) {
  ASSIGN_OR_RETURN(std::unique_ptr<Transaction> tx, Transaction::Begin(this, true));
  const std::string what = absl::StrCat("reading snapshots of run ", run_id);
  {
    ASSIGN_OR_RETURN(Result exists, tx->Exec("SELECT 1 FROM runs WHERE run_id = $1",
                                             Params().Text(run_id), what));
    if (PQntuples(exists.get()) == 0) return absl::NotFoundError(absl::StrCat("no run ", run_id));
  }
  ASSIGN_OR_RETURN(Result result, tx->Exec("SELECT version, iteration, state FROM snapshots "
                                           "WHERE run_id = $1 ORDER BY version",
                                           Params().Text(run_id), what));
  RETURN_IF_ERROR(CheckColumns(result.get(), {kInt8Oid, kInt8Oid, kByteaOid}, target_, what));
  std::vector<Snapshot> snapshots;
  for (int row = 0; row < PQntuples(result.get()); ++row) {
    Snapshot& snapshot = snapshots.emplace_back();
    snapshot.version = GetInt(result.get(), row, 0);
    snapshot.iteration = static_cast<int32_t>(GetInt(result.get(), row, 1));
    snapshot.state = GetBytes(result.get(), row, 2);
  }
  RETURN_IF_ERROR(tx->Commit());
  return snapshots;
}

absl::StatusOr<std::vector<std::string>> PostgresRunStore::ListUnfinishedRunIds() {
  static_assert(rein::v1::FINISHED == 7 && rein::v1::FAILED == 8 && rein::v1::CANCELLED == 9,
                "the query and the runs_unfinished index name the terminal stages by number");
  ASSIGN_OR_RETURN(std::unique_ptr<Transaction> tx, Transaction::Begin(this, true));
  ASSIGN_OR_RETURN(Result result, tx->Exec("SELECT run_id FROM runs WHERE stage NOT IN "
                                           "(7, 8, 9) ORDER BY created_us, run_id",
                                           Params(), "listing unfinished runs"));
  RETURN_IF_ERROR(CheckColumns(result.get(), {kTextOid}, target_, "listing unfinished runs"));
  std::vector<std::string> ids;
  for (int row = 0; row < PQntuples(result.get()); ++row) {
    ids.push_back(GetBytes(result.get(), row, 0));
  }
  RETURN_IF_ERROR(tx->Commit());
  return ids;
}

}  // namespace rein
