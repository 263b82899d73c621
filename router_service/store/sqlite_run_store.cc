// SqliteRunStore: the embedded RunStore, one SQLite file in WAL mode (its layout and the
// opening of a file are sqlite_layout.cc's).
#include "router_service/store/sqlite_run_store.h"

#include <sqlite3.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/limits.h"
#include "common/status_macros.h"
#include "google/protobuf/timestamp.pb.h"
#include "rein/v1/types.pb.h"
#include "router_service/store/sqlite_db.h"
#include "router_service/store/store_codec.h"

namespace rein {
namespace {

constexpr int kDefaultPageSize = 50;
constexpr int kMaxPageSize = 1000;
constexpr size_t kMaxPageBytes = 3 << 20;

// The value of `runs.stage` for a run at `stage` (see kSchema, sqlite_layout.cc).
int64_t StoredStage(rein::v1::Stage stage) {
  static_assert(rein::v1::DECIDING == 3 && rein::v1::EXECUTING == 4 && rein::v1::EVALUATING == 5,
                "sqlite_layout.cc's kMigrateFrom2 names the loop's stages by number");
  switch (stage) {
    case rein::v1::EXECUTING:
    case rein::v1::EVALUATING: return rein::v1::DECIDING;
    default: return stage;
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<SqliteRunStore>> SqliteRunStore::Open(const std::string& path,
                                                                     const Options& options) {
  if (path.empty()) return absl::InvalidArgumentError("SQLite database path is empty");
  if (options.busy_timeout < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("busy_timeout is negative");
  }
  if (options.checkpoint_interval <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("checkpoint_interval must be positive");
  }
  if (options.cache_mib < kMinCacheMib || options.cache_mib > kMaxCacheMib) {
    return absl::InvalidArgumentError(absl::StrCat("the page cache must be ", kMinCacheMib, " to ",
                                                   kMaxCacheMib, " MiB, got ", options.cache_mib));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<SqliteDb> db, SqliteDb::Open(path, /*create=*/true));
  std::unique_ptr<SqliteRunStore> store(new SqliteRunStore(std::move(db), path));
  {
    absl::MutexLock lock(&store->mu_);
    RETURN_IF_ERROR(store->Initialize(options));
  }
  if (options.background_checkpoint && path != ":memory:") {
    absl::StatusOr<std::unique_ptr<SqliteDb>> checkpoint_db =
        SqliteDb::Open(path, /*create=*/false);
    // A new connection learns that the file is in WAL mode when it first reads it; until then
    // its checkpoints copy nothing. (Before this read, none did: every checkpoint ran on the
    // commit path when the WAL reached 16,384 frames, and its syncs stalled that commit for
    // 100 ms and more on the bench's disk.)
    if (checkpoint_db.ok()) {
      const absl::Status read = (*checkpoint_db)->Exec("SELECT count(*) FROM sqlite_master");
      if (!read.ok()) checkpoint_db = read;
    }
    if (checkpoint_db.ok()) {
      store->checkpoint_db_ = std::move(*checkpoint_db);
      store->checkpoint_interval_ = options.checkpoint_interval;
      absl::MutexLock lock(&store->mu_);
      // In place of SQLite's automatic checkpoint (every 1,000 frames, on the commit path).
      store->db_->SetWalHook([raw = store.get()](int frames)
                                 ABSL_NO_THREAD_SAFETY_ANALYSIS { raw->OnWalCommit(frames); });
      store->checkpointer_ = std::thread([raw = store.get()] { raw->CheckpointLoop(); });
    }  // else checkpoints stay on the commit path
  }
  return store;
}

void SqliteRunStore::CheckpointLoop() {
  while (true) {
    {
      absl::MutexLock lock(&checkpoint_mu_);
      auto woken = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(checkpoint_mu_) {
        return checkpoint_stop_ || checkpoint_wanted_;
      };
      checkpoint_mu_.AwaitWithTimeout(absl::Condition(&woken), checkpoint_interval_);
      if (checkpoint_stop_) return;
      checkpoint_wanted_ = false;
    }
    // PASSIVE: copies what it can without blocking the writer or readers.
    const int64_t checkpointed = checkpoint_db_->CheckpointPassive();
    checkpoint_woken_.store(false, std::memory_order_release);
    absl::MutexLock lock(&checkpoint_mu_);
    background_checkpointed_frames_ = checkpointed;
  }
}

void SqliteRunStore::OnWalCommit(int frames) {
  if (frames >= kCommitCheckpointFrames) {
    db_->CheckpointPassive();  // the background one fell behind (or cannot copy)
  } else if (frames >= kCheckpointFrames &&
             !checkpoint_woken_.exchange(true, std::memory_order_acq_rel)) {
    absl::MutexLock lock(&checkpoint_mu_);
    checkpoint_wanted_ = true;
  }
}

SqliteRunStore::SqliteRunStore(std::unique_ptr<SqliteDb> db, std::string path)
    : path_(std::move(path)), db_(std::move(db)) {}

SqliteRunStore::~SqliteRunStore() {
  if (checkpointer_.joinable()) {
    {
      absl::MutexLock lock(&checkpoint_mu_);
      checkpoint_stop_ = true;
    }
    checkpointer_.join();
  }
  // The main connection closes last (when db_ is destroyed), so it is the one that
  // checkpoints the WAL into the database and removes it.
  checkpoint_db_.reset();
}

absl::Status SqliteRunStore::ParseStoredRun(absl::string_view base, absl::string_view tail,
                                            const std::string& run_id, rein::v1::Run* run) const {
  // `base` is the run without its state and updated_at; `tail` holds just those two, so the
  // two messages merge without overlap.
  if (!run->ParseFromArray(base.data(), static_cast<int>(base.size())) ||
      !run->MergeFromString(std::string(tail)) || run->run_id() != run_id) {
    return absl::DataLossError(
        absl::StrCat("SQLite database ", path_, ": the stored run ", run_id, " is corrupt"));
  }
  const rein::v1::Stage stage = run->state().stage();
  if (!router_id_.empty() && stage != rein::v1::FINISHED && stage != rein::v1::FAILED &&
      stage != rein::v1::CANCELLED) {
    run->set_owner(router_id_);
    run->set_lease_epoch(1);
  }
  return absl::OkStatus();
}

absl::StatusOr<SqliteRunStore::RunRow> SqliteRunStore::ReadRun(const std::string& run_id) {
  ASSIGN_OR_RETURN(SqliteDb::Statement stmt,
                   db_->Prepare("SELECT run, state, version, last_seq FROM runs WHERE run_id = ?"));
  stmt.BindText(1, run_id);
  const int rc = stmt.Step();
  if (rc == SQLITE_DONE) return absl::NotFoundError(absl::StrCat("no run ", run_id));
  if (rc != SQLITE_ROW) return db_->Error(rc, absl::StrCat("reading run ", run_id));
  RunRow row;
  RETURN_IF_ERROR(ParseStoredRun(stmt.ColumnBytes(0), stmt.ColumnBytes(1), run_id, &row.run));
  row.version = stmt.ColumnInt(2);
  row.last_seq = stmt.ColumnInt(3);
  return row;
}

absl::StatusOr<SqliteRunStore::RunRow> SqliteRunStore::ReadVersion(const std::string& run_id) {
  ASSIGN_OR_RETURN(SqliteDb::Statement stmt,
                   db_->Prepare("SELECT version, last_seq, stage, reason FROM runs "
                                "WHERE run_id = ?"));
  stmt.BindText(1, run_id);
  const int rc = stmt.Step();
  if (rc == SQLITE_DONE) return absl::NotFoundError(absl::StrCat("no run ", run_id));
  if (rc != SQLITE_ROW) return db_->Error(rc, absl::StrCat("reading run ", run_id));
  RunRow row;
  row.version = stmt.ColumnInt(0);
  row.last_seq = stmt.ColumnInt(1);
  row.stage = stmt.ColumnInt(2);
  row.reason = stmt.ColumnInt(3);
  return row;
}

absl::Status SqliteRunStore::RunExists(const std::string& run_id) {
  ASSIGN_OR_RETURN(SqliteDb::Statement stmt, db_->Prepare("SELECT 1 FROM runs WHERE run_id = ?"));
  stmt.BindText(1, run_id);
  const int rc = stmt.Step();
  if (rc == SQLITE_DONE) return absl::NotFoundError(absl::StrCat("no run ", run_id));
  if (rc != SQLITE_ROW) return db_->Error(rc, absl::StrCat("reading run ", run_id));
  return absl::OkStatus();
}

absl::Status SqliteRunStore::InsertEvents(const std::string& run_id, int64_t first_seq,
                                          std::vector<rein::v1::RunEvent>& events) {
  for (size_t i = 0; i < events.size(); ++i) {
    rein::v1::RunEvent& event = events[i];
    event.set_run_id(run_id);
    event.set_seq(first_seq + static_cast<int64_t>(i));
    std::string body;
    if (!event.SerializeToString(&body)) {
      return absl::InvalidArgumentError(
          absl::StrCat("event ", i, " of run ", run_id, " cannot be serialized (too large)"));
    }
    ASSIGN_OR_RETURN(SqliteDb::Statement stmt,
                     db_->Prepare("INSERT INTO events (run_id, seq, body) VALUES (?, ?, ?)"));
    stmt.BindText(1, run_id);
    stmt.BindInt(2, event.seq());
    stmt.BindBlob(3, body);
    const int rc = stmt.Step();
    if (rc != SQLITE_DONE) {
      return db_->Error(rc, absl::StrCat("writing event ", event.seq(), " of run ", run_id));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<CreateResult> SqliteRunStore::CreateRun(const rein::v1::Run& run,
                                                       std::vector<rein::v1::RunEvent> events) {
  if (run.run_id().empty()) return absl::InvalidArgumentError("run.run_id is empty");
  ASSIGN_OR_RETURN(StoredRunParts parts, SplitRun(run));
  const int64_t created_us = parts.created_us;
  const int64_t updated_us = parts.updated_us;
  const std::string& blob = parts.base;
  const std::string& tail_blob = parts.tail;

  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(SqliteDb::Transaction tx,
                   SqliteDb::Transaction::Begin(db_.get(), /*write=*/true));
  const std::string namespace_name(NamespaceOrDefault(run.spec().namespace_()));
  if (!run.request_id().empty()) {
    ASSIGN_OR_RETURN(
        SqliteDb::Statement stmt,
        db_->Prepare("SELECT run_id FROM runs WHERE namespace = ? AND ns_request_id = ?"));
    stmt.BindText(1, namespace_name);
    stmt.BindText(2, run.request_id());
    const int rc = stmt.Step();
    if (rc == SQLITE_ROW) {
      const std::string existing_id = stmt.ColumnBytes(0);
      ASSIGN_OR_RETURN(RunRow existing, ReadRun(existing_id));
      RETURN_IF_ERROR(tx.Commit());
      return CreateResult{std::move(existing.run), /*created=*/false};
    }
    if (rc != SQLITE_DONE) return db_->Error(rc, "looking up request_id");
  }
  const absl::Status exists = RunExists(run.run_id());
  if (exists.ok()) {
    return absl::AlreadyExistsError(absl::StrCat("run ", run.run_id(), " already exists"));
  }
  if (!absl::IsNotFound(exists)) return exists;

  {
    ASSIGN_OR_RETURN(SqliteDb::Statement stmt,
                     db_->Prepare("INSERT INTO runs (run_id, ns_request_id, stage, reason, "
                                  "version, last_seq, created_us, updated_us, run, state, "
                                  "namespace) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"));
    stmt.BindText(1, run.run_id());
    if (run.request_id().empty()) {
      stmt.BindNull(2);
    } else {
      stmt.BindText(2, run.request_id());
    }
    stmt.BindInt(3, StoredStage(run.state().stage()));
    stmt.BindInt(4, run.state().outcome().reason());
    stmt.BindInt(5, run.state().version());
    stmt.BindInt(6, static_cast<int64_t>(events.size()));
    stmt.BindInt(7, created_us);
    stmt.BindInt(8, updated_us);
    stmt.BindBlob(9, blob);
    stmt.BindBlob(10, tail_blob);
    stmt.BindText(11, namespace_name);
    const int rc = stmt.Step();
    if (rc != SQLITE_DONE) return db_->Error(rc, absl::StrCat("writing run ", run.run_id()));
  }
  RETURN_IF_ERROR(InsertEvents(run.run_id(), /*first_seq=*/1, events));
  RETURN_IF_ERROR(tx.Commit());
  return CreateResult{run, /*created=*/true};
}

absl::StatusOr<rein::v1::Run> SqliteRunStore::GetRun(const std::string& run_id) {
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(RunRow row, ReadRun(run_id));
  return std::move(row.run);
}

absl::StatusOr<rein::v1::Run> SqliteRunStore::FindRunByRequestId(const std::string& namespace_name,
                                                                 const std::string& request_id) {
  absl::MutexLock lock(&mu_);
  std::string run_id;
  {
    ASSIGN_OR_RETURN(
        SqliteDb::Statement stmt,
        db_->Prepare("SELECT run_id FROM runs WHERE namespace = ? AND ns_request_id = ?"));
    stmt.BindText(1, std::string(NamespaceOrDefault(namespace_name)));
    stmt.BindText(2, request_id);
    const int rc = stmt.Step();
    if (rc == SQLITE_DONE) {
      return absl::NotFoundError(absl::StrCat("no run with request_id ", request_id));
    }
    if (rc != SQLITE_ROW) return db_->Error(rc, "looking up request_id");
    run_id = stmt.ColumnBytes(0);
  }
  ASSIGN_OR_RETURN(RunRow row, ReadRun(run_id));
  return std::move(row.run);
}

absl::StatusOr<std::vector<rein::v1::RunEvent>> SqliteRunStore::Commit(
    const std::string& run_id, int64_t expected_version, const rein::v1::RunState& new_state,
    std::vector<rein::v1::RunEvent> events, const std::optional<Snapshot>& snapshot,
    absl::Time now) {
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(SqliteDb::Transaction tx,
                   SqliteDb::Transaction::Begin(db_.get(), /*write=*/true));
  RETURN_IF_ERROR(CommitInTransaction(run_id, expected_version, new_state, events, snapshot, now));
  RETURN_IF_ERROR(tx.Commit());
  return events;
}

std::vector<absl::StatusOr<std::vector<rein::v1::RunEvent>>> SqliteRunStore::CommitBatch(
    std::vector<CommitRequest>& requests) {
  std::vector<absl::StatusOr<std::vector<rein::v1::RunEvent>>> results;
  results.reserve(requests.size());
  if (requests.size() == 1) return RunStore::CommitBatch(requests);
  absl::MutexLock lock(&mu_);
  absl::StatusOr<SqliteDb::Transaction> tx =
      SqliteDb::Transaction::Begin(db_.get(), /*write=*/true);
  if (!tx.ok()) {
    results.assign(requests.size(), tx.status());
    return results;
  }
  for (CommitRequest& r : requests) {
    // One savepoint per request: a request that fails half-way leaves nothing behind, and the
    // others of the batch are kept. (The lease epoch needs no check: one router per file.)
    absl::Status status = db_->Exec("SAVEPOINT batch_item");
    if (status.ok()) {
      status = CommitInTransaction(r.run_id, r.expected_version, *r.new_state, r.events, r.snapshot,
                                   r.now);
      if (!status.ok()) db_->Exec("ROLLBACK TO batch_item").IgnoreError();
      const absl::Status released = db_->Exec("RELEASE batch_item");
      if (status.ok()) status = released;
    }
    if (status.ok()) {
      results.push_back(std::move(r.events));
    } else {
      results.push_back(status);
    }
  }
  if (absl::Status committed = tx->Commit(); !committed.ok()) {
    results.assign(requests.size(), committed);
  }
  return results;
}

absl::Status SqliteRunStore::CommitInTransaction(const std::string& run_id,
                                                 int64_t expected_version,
                                                 const rein::v1::RunState& new_state,
                                                 std::vector<rein::v1::RunEvent>& events,
                                                 const std::optional<Snapshot>& snapshot,
                                                 absl::Time now) {
  if (new_state.version() != expected_version + 1) {
    return absl::InvalidArgumentError(absl::StrCat("new_state.version is ", new_state.version(),
                                                   "; a commit on version ", expected_version,
                                                   " must store version ", expected_version + 1));
  }
  ASSIGN_OR_RETURN(const google::protobuf::Timestamp updated_at, ToTimestamp(now, "now"));
  ASSIGN_OR_RETURN(const int64_t updated_us, TimestampMicros(updated_at, "now"));
  ASSIGN_OR_RETURN(RunRow row, ReadVersion(run_id));
  if (row.version != expected_version) {
    return absl::FailedPreconditionError(absl::StrCat("run ", run_id, " is at version ",
                                                      row.version, ", not expected_version ",
                                                      expected_version));
  }
  // Only the state part of the row changes: the rest of the run was written once.
  ASSIGN_OR_RETURN(const std::string blob, StateTail(new_state, updated_at));
  const int64_t last_seq = row.last_seq + static_cast<int64_t>(events.size());
  {
    // `stage` and `reason` are indexed: writing one rewrites its index entry (one more page in
    // the WAL per commit) even when the value is the same, so each is written only when it
    // changes. One SQL text per combination, each prepared once.
    static const std::string* const kUpdates = new std::string[4]{
        "UPDATE runs SET version = ?1, last_seq = ?2, updated_us = ?3, state = ?4 "
        "WHERE run_id = ?5",
        "UPDATE runs SET version = ?1, last_seq = ?2, updated_us = ?3, state = ?4, stage = ?6 "
        "WHERE run_id = ?5",
        "UPDATE runs SET version = ?1, last_seq = ?2, updated_us = ?3, state = ?4, reason = ?7 "
        "WHERE run_id = ?5",
        "UPDATE runs SET version = ?1, last_seq = ?2, updated_us = ?3, state = ?4, stage = ?6, "
        "reason = ?7 WHERE run_id = ?5",
    };
    const int64_t stage = StoredStage(new_state.stage());
    const bool stage_changed = row.stage != stage;
    const bool reason_changed = row.reason != new_state.outcome().reason();
    ASSIGN_OR_RETURN(SqliteDb::Statement stmt,
                     db_->Prepare(kUpdates[(stage_changed ? 1 : 0) + (reason_changed ? 2 : 0)]));
    stmt.BindInt(1, new_state.version());
    stmt.BindInt(2, last_seq);
    stmt.BindInt(3, updated_us);
    stmt.BindBlob(4, blob);
    stmt.BindText(5, run_id);
    if (stage_changed) stmt.BindInt(6, stage);
    if (reason_changed) stmt.BindInt(7, new_state.outcome().reason());
    const int rc = stmt.Step();
    if (rc != SQLITE_DONE) return db_->Error(rc, absl::StrCat("updating run ", run_id));
  }
  RETURN_IF_ERROR(InsertEvents(run_id, row.last_seq + 1, events));
  RETURN_IF_ERROR(InsertNotifications(run_id, events, blob, updated_us));
  if (snapshot.has_value()) {
    ASSIGN_OR_RETURN(SqliteDb::Statement stmt,
                     db_->Prepare("INSERT INTO snapshots (run_id, version, iteration, state) "
                                  "VALUES (?, ?, ?, ?)"));
    stmt.BindText(1, run_id);
    stmt.BindInt(2, snapshot->version);
    stmt.BindInt(3, snapshot->iteration);
    stmt.BindBlob(4, snapshot->state);
    const int rc = stmt.Step();
    if (rc == SQLITE_CONSTRAINT_UNIQUE) {
      return absl::AlreadyExistsError(absl::StrCat("run ", run_id, " has a snapshot of version ",
                                                   snapshot->version, " already"));
    }
    if (rc != SQLITE_DONE) {
      return db_->Error(rc, absl::StrCat("writing a snapshot of run ", run_id));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<rein::v1::RunEvent>> SqliteRunStore::ReadEvents(
    const std::string& run_id, int64_t after_seq, int limit) {
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(SqliteDb::Transaction tx,
                   SqliteDb::Transaction::Begin(db_.get(), /*write=*/false));
  RETURN_IF_ERROR(RunExists(run_id));
  ASSIGN_OR_RETURN(SqliteDb::Statement stmt,
                   db_->Prepare("SELECT seq, body FROM events WHERE run_id = ? "
                                "AND seq > ? ORDER BY seq LIMIT ?"));
  stmt.BindText(1, run_id);
  stmt.BindInt(2, after_seq);
  stmt.BindInt(3, limit > 0 ? limit : -1);  // a negative LIMIT is no limit
  std::vector<rein::v1::RunEvent> events;
  int rc;
  while ((rc = stmt.Step()) == SQLITE_ROW) {
    const int64_t seq = stmt.ColumnInt(0);
    rein::v1::RunEvent& event = events.emplace_back();
    if (!event.ParseFromString(stmt.ColumnBytes(1))) {
      return absl::DataLossError(absl::StrCat("SQLite database ", path_, ": event ", seq,
                                              " of run ", run_id, " is corrupt"));
    }
    event.set_run_id(run_id);
    event.set_seq(seq);
  }
  if (rc != SQLITE_DONE) return db_->Error(rc, absl::StrCat("reading events of run ", run_id));
  RETURN_IF_ERROR(tx.Commit());
  return events;
}

absl::StatusOr<RunPage> SqliteRunStore::ListRuns(const RunFilter& filter, int page_size,
                                                 const std::string& page_token) {
  if (page_size <= 0) page_size = kDefaultPageSize;
  page_size = std::min(page_size, kMaxPageSize);
  std::optional<Cursor> cursor;
  if (!page_token.empty()) {
    ASSIGN_OR_RETURN(cursor, ParsePageToken(filter, page_token));
  }

  // One SQL text per combination of conditions, so each is prepared once and uses its index.
  // The stored stage of DECIDING, EXECUTING and EVALUATING is one (StoredStage): a filter on
  // one of them takes that stored stage's rows and keeps the runs whose state is at it.
  const int64_t stored_stage = StoredStage(filter.stage);
  const bool exact_stage = stored_stage != filter.stage || filter.stage == rein::v1::DECIDING;
  std::string sql = "SELECT run_id, created_us, run, state FROM runs WHERE 1";
  if (filter.stage != rein::v1::STAGE_UNSPECIFIED) absl::StrAppend(&sql, " AND stage = ?");
  if (filter.outcome != rein::v1::TERMINATION_REASON_UNSPECIFIED) {
    absl::StrAppend(&sql, " AND reason = ?");
  }
  if (!filter.namespace_name.empty()) absl::StrAppend(&sql, " AND namespace = ?");
  if (cursor.has_value()) absl::StrAppend(&sql, " AND (created_us, run_id) < (?, ?)");
  absl::StrAppend(&sql, " ORDER BY created_us DESC, run_id DESC LIMIT ?");

  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(SqliteDb::Statement stmt, db_->Prepare(sql));
  int index = 1;
  if (filter.stage != rein::v1::STAGE_UNSPECIFIED) stmt.BindInt(index++, stored_stage);
  if (filter.outcome != rein::v1::TERMINATION_REASON_UNSPECIFIED) {
    stmt.BindInt(index++, filter.outcome);
  }
  if (!filter.namespace_name.empty()) stmt.BindText(index++, filter.namespace_name);
  if (cursor.has_value()) {
    stmt.BindInt(index++, cursor->created_us);
    stmt.BindText(index++, cursor->run_id);
  }
  // One more tells whether there is a next page (no limit when rows are filtered below).
  stmt.BindInt(index++, exact_stage ? -1 : page_size + 1);

  RunPage page;
  Cursor last;
  int rc;
  size_t page_bytes = 0;
  while ((rc = stmt.Step()) == SQLITE_ROW) {
    const std::string run_id = stmt.ColumnBytes(0);
    rein::v1::Run run;
    if (exact_stage) {
      RETURN_IF_ERROR(ParseStoredRun(stmt.ColumnBytes(2), stmt.ColumnBytes(3), run_id, &run));
      if (run.state().stage() != filter.stage) continue;
    }
    // A page ends at page_size runs, or sooner once it holds kMaxPageBytes, so that a reply
    // stays under gRPC's default 4 MiB receive limit.
    if (static_cast<int>(page.runs.size()) == page_size || page_bytes >= kMaxPageBytes) {
      page.next_page_token = MakePageToken(filter, last);
      break;
    }
    if (!exact_stage) {
      RETURN_IF_ERROR(ParseStoredRun(stmt.ColumnBytes(2), stmt.ColumnBytes(3), run_id, &run));
    }
    last.run_id = run_id;
    last.created_us = stmt.ColumnInt(1);
    page_bytes += run.ByteSizeLong();
    page.runs.push_back(std::move(run));
  }
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) return db_->Error(rc, "listing runs");
  return page;
}

absl::StatusOr<std::vector<Snapshot>> SqliteRunStore::ListSnapshotsAfter(const std::string& run_id,
                                                                         int64_t after_version,
                                                                         int limit) {
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(SqliteDb::Transaction tx,
                   SqliteDb::Transaction::Begin(db_.get(), /*write=*/false));
  RETURN_IF_ERROR(RunExists(run_id));
  ASSIGN_OR_RETURN(SqliteDb::Statement stmt,
                   db_->Prepare("SELECT version, iteration, state FROM snapshots "
                                "WHERE run_id = ? AND version > ? ORDER BY version LIMIT ?"));
  stmt.BindText(1, run_id);
  stmt.BindInt(2, after_version);
  stmt.BindInt(3, limit > 0 ? limit : -1);  // a negative LIMIT is none
  std::vector<Snapshot> snapshots;
  int rc;
  while ((rc = stmt.Step()) == SQLITE_ROW) {
    Snapshot& snapshot = snapshots.emplace_back();
    snapshot.version = stmt.ColumnInt(0);
    snapshot.iteration = static_cast<int32_t>(stmt.ColumnInt(1));
    snapshot.state = stmt.ColumnBytes(2);
  }
  if (rc != SQLITE_DONE) {
    return db_->Error(rc, absl::StrCat("reading snapshots of run ", run_id));
  }
  RETURN_IF_ERROR(tx.Commit());
  return snapshots;
}

absl::StatusOr<std::vector<std::string>> SqliteRunStore::ListUnfinishedRunIds() {
  static_assert(rein::v1::FINISHED == 7 && rein::v1::FAILED == 8 && rein::v1::CANCELLED == 9,
                "the query below names the terminal stages by number");
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(SqliteDb::Statement stmt,
                   db_->Prepare("SELECT run_id FROM runs WHERE stage NOT IN "
                                "(7, 8, 9) ORDER BY created_us, run_id"));
  std::vector<std::string> ids;
  int rc;
  while ((rc = stmt.Step()) == SQLITE_ROW) ids.push_back(stmt.ColumnBytes(0));
  if (rc != SQLITE_DONE) return db_->Error(rc, "listing unfinished runs");
  return ids;
}

absl::StatusOr<NamespaceUsage> SqliteRunStore::GetNamespaceUsage(const std::string& namespace_name,
                                                                 absl::Time since) {
  const std::string ns(NamespaceOrDefault(namespace_name));
  NamespaceUsage usage;
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(SqliteDb::Transaction tx,
                   SqliteDb::Transaction::Begin(db_.get(), /*write=*/false));
  {
    ASSIGN_OR_RETURN(SqliteDb::Statement stmt,
                     db_->Prepare("SELECT count(*) FROM runs WHERE namespace = ? AND stage NOT IN "
                                  "(7, 8, 9)"));
    stmt.BindText(1, ns);
    const int rc = stmt.Step();
    if (rc != SQLITE_ROW) return db_->Error(rc, "counting a namespace's runs");
    usage.unfinished_runs = stmt.ColumnInt(0);
  }
  ASSIGN_OR_RETURN(SqliteDb::Statement stmt,
                   db_->Prepare("SELECT run_id, state FROM runs WHERE namespace = ? AND "
                                "created_us >= ?"));
  stmt.BindText(1, ns);
  stmt.BindInt(2, absl::ToUnixMicros(since));
  int rc;
  while ((rc = stmt.Step()) == SQLITE_ROW) {
    rein::v1::Run tail;  // the stored tail: the state and updated_at
    if (!tail.ParseFromString(stmt.ColumnBytes(1))) {
      return absl::DataLossError(absl::StrCat("SQLite database ", path_, ": the stored run ",
                                              stmt.ColumnBytes(0), " is corrupt"));
    }
    usage.tokens += OwnTokens(tail.state());
    usage.cost_usd += OwnCostUsd(tail.state());
  }
  if (rc != SQLITE_DONE) return db_->Error(rc, "adding up a namespace's usage");
  RETURN_IF_ERROR(tx.Commit());
  return usage;
}

absl::Status SqliteRunStore::JoinFleet(const std::string& router_id, absl::Duration ttl) {
  RETURN_IF_ERROR(CheckRouterLease(router_id, ttl));
  absl::MutexLock lock(&mu_);
  router_id_ = router_id;
  return absl::OkStatus();
}

absl::StatusOr<std::vector<rein::v1::Run>> SqliteRunStore::ClaimRuns(bool include_mine) {
  std::vector<rein::v1::Run> runs;
  if (!include_mine) return runs;
  ASSIGN_OR_RETURN(std::vector<std::string> ids, ListUnfinishedRunIds());
  for (const std::string& id : ids) {
    ASSIGN_OR_RETURN(rein::v1::Run run, GetRun(id));
    runs.push_back(std::move(run));
  }
  return runs;
}

absl::StatusOr<std::vector<rein::v1::RunEvent>> SqliteRunStore::CommitOwned(
    const std::string& run_id, int64_t /*lease_epoch*/, int64_t expected_version,
    const rein::v1::RunState& new_state, std::vector<rein::v1::RunEvent> events,
    const std::optional<Snapshot>& snapshot, absl::Time now) {
  return Commit(run_id, expected_version, new_state, std::move(events), snapshot, now);
}

absl::StatusOr<std::map<std::string, int64_t>> SqliteRunStore::OwnedRunVersions() {
  absl::MutexLock lock(&mu_);
  std::map<std::string, int64_t> versions;
  if (router_id_.empty()) return versions;
  ASSIGN_OR_RETURN(SqliteDb::Statement stmt,
                   db_->Prepare("SELECT run_id, version FROM runs WHERE stage NOT IN (7, 8, 9)"));
  int rc;
  while ((rc = stmt.Step()) == SQLITE_ROW) versions[stmt.ColumnBytes(0)] = stmt.ColumnInt(1);
  if (rc != SQLITE_DONE) return db_->Error(rc, "listing owned runs");
  return versions;
}

}  // namespace rein
