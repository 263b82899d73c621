// PostgresRunStore: the RunStore in a PostgreSQL database, for one or several routers.
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
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/status_macros.h"
#include "google/protobuf/timestamp.pb.h"
#include "rein/v1/types.pb.h"
#include "router_service/store/pg_session.h"
#include "router_service/store/store_codec.h"

namespace rein {
namespace {

constexpr int kDefaultPageSize = 50;
constexpr int kMaxPageSize = 1000;
constexpr size_t kMaxPageBytes = 3 << 20;
// Events per INSERT statement (3 parameters each, under PostgreSQL's 65535).
constexpr size_t kEventsPerInsert = 1000;
// pg_advisory_xact_lock key that serializes schema creation between routers ("rein").
constexpr int64_t kSchemaLockKey = 0x7265696e;

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

}  // namespace

PostgresRunStore::PostgresRunStore(std::unique_ptr<PgPool> pool) : pool_(std::move(pool)) {}

PostgresRunStore::~PostgresRunStore() = default;

absl::StatusOr<std::unique_ptr<PostgresRunStore>> PostgresRunStore::Open(const std::string& url,
                                                                         const Options& options) {
  PgPool::Options pool_options;
  pool_options.max_connections = options.max_connections;
  pool_options.connect_timeout = options.connect_timeout;
  ASSIGN_OR_RETURN(std::unique_ptr<PgPool> pool, PgPool::Create(url, pool_options));
  std::unique_ptr<PostgresRunStore> store(new PostgresRunStore(std::move(pool)));
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
  if (version != 0 && version != kSchemaVersion) {
    return absl::FailedPreconditionError(
        absl::StrCat("PostgreSQL database ", target(), " has schema version ", version,
                     "; this binary writes version ", kSchemaVersion,
                     " and does not migrate (use another database)"));
  }
  RETURN_IF_ERROR(tx->Run(kSchema, "creating tables"));
  if (version == 0) {
    RETURN_IF_ERROR(tx->Exec("INSERT INTO schema_version (id, version) VALUES (1, $1)",
                             PgParams().Int(kSchemaVersion), "writing schema_version")
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

// Inserts `events` with seq first_seq, first_seq+1, ... (filling in their run_id and seq).
absl::Status InsertEvents(const std::string& run_id, int64_t first_seq,
                          std::vector<rein::v1::RunEvent>& events, PgTransaction* tx) {
  for (size_t start = 0; start < events.size(); start += kEventsPerInsert) {
    const size_t end = std::min(events.size(), start + kEventsPerInsert);
    std::string sql = "INSERT INTO events (run_id, seq, body) VALUES ";
    PgParams params;
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
      absl::StrAppend(&sql, i == start ? "" : ", ", "($", n + 1, ", $", n + 2, ", $", n + 3, ")");
      params.Text(run_id).Int(event.seq()).Bytes(body);
    }
    RETURN_IF_ERROR(tx->Exec(sql, params, absl::StrCat("writing events of run ", run_id)).status());
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
  // DO NOTHING on either unique key: a concurrent creator with the same key is waited for.
  ASSIGN_OR_RETURN(PgResult inserted,
                   tx->Exec("INSERT INTO runs (run_id, request_id, stage, reason, version, "
                            "last_seq, created_us, updated_us, run, state) "
                            "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) "
                            "ON CONFLICT DO NOTHING",
                            params, absl::StrCat("writing run ", run.run_id())));
  if (absl::string_view(PQcmdTuples(inserted.get())) == "1") {
    RETURN_IF_ERROR(InsertEvents(run.run_id(), /*first_seq=*/1, events, tx.get()));
    RETURN_IF_ERROR(tx->Commit());
    return CreateResult{run, /*created=*/true};
  }

  // Nothing inserted: the request_id names a run (return it) or the run_id is taken.
  if (!run.request_id().empty()) {
    ASSIGN_OR_RETURN(PgResult existing,
                     tx->Exec("SELECT run_id, run, state FROM runs WHERE request_id = $1",
                              PgParams().Text(run.request_id()), "looking up request_id"));
    RETURN_IF_ERROR(PgCheckColumns(existing.get(), {kTextOid, kByteaOid, kByteaOid}, target(),
                                   "looking up request_id"));
    if (PQntuples(existing.get()) == 1) {
      CreateResult result;
      const std::string existing_id = PgBytes(existing.get(), 0, 0);
      RETURN_IF_ERROR(ParseStoredRun(PgBytes(existing.get(), 0, 1), PgBytes(existing.get(), 0, 2),
                                     existing_id, &result.run));
      RETURN_IF_ERROR(tx->Commit());
      return result;
    }
  }
  return absl::AlreadyExistsError(absl::StrCat("run ", run.run_id(), " already exists"));
}

absl::StatusOr<rein::v1::Run> PostgresRunStore::GetRun(const std::string& run_id) {
  ASSIGN_OR_RETURN(std::unique_ptr<PgTransaction> tx, PgTransaction::Begin(pool_.get(), true));
  const std::string what = absl::StrCat("reading run ", run_id);
  ASSIGN_OR_RETURN(PgResult result, tx->Exec("SELECT run, state FROM runs WHERE run_id = $1",
                                             PgParams().Text(run_id), what));
  RETURN_IF_ERROR(PgCheckColumns(result.get(), {kByteaOid, kByteaOid}, target(), what));
  if (PQntuples(result.get()) == 0) return absl::NotFoundError(absl::StrCat("no run ", run_id));
  rein::v1::Run run;
  RETURN_IF_ERROR(
      ParseStoredRun(PgBytes(result.get(), 0, 0), PgBytes(result.get(), 0, 1), run_id, &run));
  RETURN_IF_ERROR(tx->Commit());
  return run;
}

absl::StatusOr<std::vector<rein::v1::RunEvent>> PostgresRunStore::Commit(
    const std::string& run_id, int64_t expected_version, const rein::v1::RunState& new_state,
    std::vector<rein::v1::RunEvent> events, const std::optional<Snapshot>& snapshot,
    absl::Time now) {
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

  ASSIGN_OR_RETURN(std::unique_ptr<PgTransaction> tx, PgTransaction::Begin(pool_.get(), false));
  const std::string what = absl::StrCat("updating run ", run_id);
  // The row lock makes concurrent commits wait; after the winner commits, a waiting UPDATE
  // re-checks `version` on the new row and matches nothing.
  ASSIGN_OR_RETURN(PgResult updated,
                   tx->Exec("UPDATE runs SET stage = $1, reason = $2, version = $3, "
                            "last_seq = last_seq + $4, updated_us = $5, state = $6 "
                            "WHERE run_id = $7 AND version = $8 RETURNING last_seq",
                            PgParams()
                                .Int(new_state.stage())
                                .Int(new_state.outcome().reason())
                                .Int(new_state.version())
                                .Int(count)
                                .Int(updated_us)
                                .Bytes(blob)
                                .Text(run_id)
                                .Int(expected_version),
                            what));
  RETURN_IF_ERROR(PgCheckColumns(updated.get(), {kInt8Oid}, target(), what));
  if (PQntuples(updated.get()) == 0) {
    ASSIGN_OR_RETURN(PgResult current, tx->Exec("SELECT version FROM runs WHERE run_id = $1",
                                                PgParams().Text(run_id), what));
    RETURN_IF_ERROR(PgCheckColumns(current.get(), {kInt8Oid}, target(), what));
    if (PQntuples(current.get()) == 0) {
      return absl::NotFoundError(absl::StrCat("no run ", run_id));
    }
    return absl::FailedPreconditionError(absl::StrCat("run ", run_id, " is at version ",
                                                      PgInt(current.get(), 0, 0),
                                                      ", not expected_version ", expected_version));
  }
  const int64_t first_seq = PgInt(updated.get(), 0, 0) - count + 1;
  RETURN_IF_ERROR(InsertEvents(run_id, first_seq, events, tx.get()));
  if (snapshot.has_value()) {
    ASSIGN_OR_RETURN(PgResult inserted,
                     tx->Exec("INSERT INTO snapshots (run_id, version, iteration, state) "
                              "VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
                              PgParams()
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
  std::string sql = "SELECT run_id, created_us, run, state FROM runs WHERE TRUE";
  PgParams params;
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
    absl::StrAppend(&sql, " AND (created_us, run_id) < ($", params.size() - 1, ", $", params.size(),
                    ")");
  }
  params.Int(page_size + 1);  // one more tells whether there is a next page
  absl::StrAppend(&sql, " ORDER BY created_us DESC, run_id DESC LIMIT $", params.size());

  ASSIGN_OR_RETURN(std::unique_ptr<PgTransaction> tx, PgTransaction::Begin(pool_.get(), true));
  ASSIGN_OR_RETURN(PgResult result, tx->Exec(sql, params, "listing runs"));
  RETURN_IF_ERROR(PgCheckColumns(result.get(), {kTextOid, kInt8Oid, kByteaOid, kByteaOid}, target(),
                                 "listing runs"));
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
    last.run_id = PgBytes(result.get(), row, 0);
    last.created_us = PgInt(result.get(), row, 1);
    rein::v1::Run& run = page.runs.emplace_back();
    RETURN_IF_ERROR(ParseStoredRun(PgBytes(result.get(), row, 2), PgBytes(result.get(), row, 3),
                                   last.run_id, &run));
    page_bytes += run.ByteSizeLong();
  }
  RETURN_IF_ERROR(tx->Commit());
  return page;
}

absl::StatusOr<std::vector<Snapshot>> PostgresRunStore::ListSnapshots(const std::string& run_id) {
  ASSIGN_OR_RETURN(std::unique_ptr<PgTransaction> tx, PgTransaction::Begin(pool_.get(), true));
  const std::string what = absl::StrCat("reading snapshots of run ", run_id);
  {
    ASSIGN_OR_RETURN(PgResult exists, tx->Exec("SELECT 1 FROM runs WHERE run_id = $1",
                                               PgParams().Text(run_id), what));
    if (PQntuples(exists.get()) == 0) return absl::NotFoundError(absl::StrCat("no run ", run_id));
  }
  ASSIGN_OR_RETURN(PgResult result, tx->Exec("SELECT version, iteration, state FROM snapshots "
                                             "WHERE run_id = $1 ORDER BY version",
                                             PgParams().Text(run_id), what));
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

}  // namespace rein
