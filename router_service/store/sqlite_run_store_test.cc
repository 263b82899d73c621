// Tests of SqliteRunStore: the RunStore conformance suite plus what is particular to SQLite.
#include "router_service/store/sqlite_run_store.h"

#include <sqlite3.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rein/v1/types.pb.h"
#include "router_service/store/run_store_conformance.h"
#include "router_service/store/testing/run_store_values.h"

namespace rein {
namespace {

using ::testing::HasSubstr;

// A new empty directory under the test's temporary directory.
std::string NewTempDir() {
  const char* root = std::getenv("TEST_TMPDIR");
  std::string pattern = absl::StrCat(root != nullptr ? root : "/tmp", "/sqlite_run_store_XXXXXX");
  if (mkdtemp(pattern.data()) == nullptr) return "";
  return pattern;
}

// Runs `sql` on the database file through a separate connection, as an operator or a bug would.
absl::Status ExecRaw(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  absl::Status status;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) {
    status = absl::InternalError(absl::StrCat("cannot open ", path));
  } else {
    char* error = nullptr;
    if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error) != SQLITE_OK) {
      status = absl::InternalError(absl::StrCat(sql, ": ", error != nullptr ? error : ""));
    }
    sqlite3_free(error);
  }
  sqlite3_close(db);
  return status;
}

// `text` as an SQL string literal.
std::string Quoted(const std::string& text) {
  return absl::StrCat("'", absl::StrReplaceAll(text, {{"'", "''"}}), "'");
}

// The first column of the first row of `sql`, as text.
std::string QueryRaw(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  std::string value;
  if (sqlite3_open(path.c_str(), &db) == SQLITE_OK) {
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) == SQLITE_OK &&
        sqlite3_step(stmt) == SQLITE_ROW) {
      value = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
    }
    sqlite3_finalize(stmt);
  }
  sqlite3_close(db);
  return value;
}

RunStoreFactory SqliteFactory(const std::string& name, SqliteRunStore::Synchronous synchronous) {
  RunStoreFactory factory;
  factory.name = name;
  factory.new_location = []() -> absl::StatusOr<std::string> {
    const std::string dir = NewTempDir();
    if (dir.empty()) return absl::InternalError("mkdtemp failed");
    return dir + "/runs.db";
  };
  factory.open =
      [synchronous](const std::string& path) -> absl::StatusOr<std::unique_ptr<RouterStore>> {
    SqliteRunStore::Options options;
    options.synchronous = synchronous;
    absl::StatusOr<std::unique_ptr<SqliteRunStore>> store = SqliteRunStore::Open(path, options);
    if (!store.ok()) return store.status();
    return std::unique_ptr<RouterStore>(std::move(*store));
  };
  factory.remove = [](const std::string& path) {
    std::error_code ignored;
    std::filesystem::remove_all(std::filesystem::path(path).parent_path(), ignored);
  };
  factory.corrupt_run = [](const std::string& path, const std::string& run_id) {
    return ExecRaw(path, "UPDATE runs SET run = x'ffffffff' WHERE run_id = " + Quoted(run_id));
  };
  factory.corrupt_event = [](const std::string& path, const std::string& run_id, int64_t seq) {
    return ExecRaw(path, absl::StrCat("UPDATE events SET body = x'ffffffff' WHERE run_id = ",
                                      Quoted(run_id), " AND seq = ", seq));
  };
  return factory;
}

INSTANTIATE_TEST_SUITE_P(
    Sqlite, RunStoreConformanceTest,
    ::testing::Values(SqliteFactory("SynchronousNormal", SqliteRunStore::Synchronous::kNormal),
                      SqliteFactory("SynchronousFull", SqliteRunStore::Synchronous::kFull)),
    RunStoreFactoryName);
INSTANTIATE_TEST_SUITE_P(Sqlite, FleetStoreConformanceTest,
                         ::testing::Values(SqliteFactory("SynchronousNormal",
                                                         SqliteRunStore::Synchronous::kNormal)),
                         RunStoreFactoryName);
INSTANTIATE_TEST_SUITE_P(Sqlite, CommitFeedConformanceTest,
                         ::testing::Values(SqliteFactory("SynchronousNormal",
                                                         SqliteRunStore::Synchronous::kNormal)),
                         RunStoreFactoryName);
INSTANTIATE_TEST_SUITE_P(Sqlite, NotificationOutboxConformanceTest,
                         ::testing::Values(SqliteFactory("SynchronousNormal",
                                                         SqliteRunStore::Synchronous::kNormal)),
                         RunStoreFactoryName);

using rein::testing::Event;
using rein::testing::MakeRun;
using rein::testing::NextState;

class SqliteRunStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = NewTempDir();
    ASSERT_NE(dir_, "");
    path_ = dir_ + "/runs.db";
  }
  void TearDown() override {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

  std::unique_ptr<SqliteRunStore> OpenOrDie() {
    absl::StatusOr<std::unique_ptr<SqliteRunStore>> store = SqliteRunStore::Open(path_);
    EXPECT_TRUE(store.ok()) << store.status();
    return store.ok() ? std::move(*store) : nullptr;
  }

  std::string dir_;
  std::string path_;
};

TEST_F(SqliteRunStoreTest, OpenInMissingDirectoryIsFailedPreconditionNamingPath) {
  const std::string path = dir_ + "/no/such/dir/runs.db";
  absl::StatusOr<std::unique_ptr<SqliteRunStore>> store = SqliteRunStore::Open(path);
  EXPECT_EQ(store.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(store.status().message(), HasSubstr(path));
}

TEST_F(SqliteRunStoreTest, OpenEmptyPathIsInvalidArgument) {
  EXPECT_EQ(SqliteRunStore::Open("").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(SqliteRunStoreTest, OpenFileThatIsNotADatabaseIsFailedPreconditionNamingPath) {
  {
    std::ofstream file(path_);
    for (int i = 0; i < 200; ++i) file << "this is a text file, not an SQLite database\n";
  }
  absl::StatusOr<std::unique_ptr<SqliteRunStore>> store = SqliteRunStore::Open(path_);
  EXPECT_EQ(store.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(store.status().message(), HasSubstr(path_));
}

TEST_F(SqliteRunStoreTest, OpenPageCacheOutsideItsRangeIsInvalidArgument) {
  for (int mib : {0, 4097}) {
    SqliteRunStore::Options options;
    options.cache_mib = mib;
    absl::StatusOr<std::unique_ptr<SqliteRunStore>> store = SqliteRunStore::Open(path_, options);
    EXPECT_EQ(store.status().code(), absl::StatusCode::kInvalidArgument) << mib;
    EXPECT_THAT(store.status().message(), HasSubstr("page cache"));
  }
}

// A state of `run` one commit on, at `stage`.
rein::v1::RunState Step(const rein::v1::RunState& state, rein::v1::Stage stage) {
  rein::v1::RunState next = state;
  next.set_version(state.version() + 1);
  next.set_stage(stage);
  return next;
}

// Commits Step(*state, stage) to `run_id` and, if it was committed, makes it *state.
absl::Status CommitStep(SqliteRunStore& store, const std::string& run_id, rein::v1::RunState* state,
                        rein::v1::Stage stage) {
  rein::v1::RunState next = Step(*state, stage);
  absl::Status status = store
                            .Commit(run_id, state->version(), next, {}, std::nullopt,
                                    absl::FromUnixSeconds(1700000001))
                            .status();
  if (status.ok()) *state = std::move(next);
  return status;
}

// Creates run `run_id` in `store`; its first state, or why it could not be created.
absl::StatusOr<rein::v1::RunState> CreateRunIn(SqliteRunStore& store, const std::string& run_id) {
  rein::v1::Run run = MakeRun(run_id);
  absl::StatusOr<CreateResult> created = store.CreateRun(run, {});
  if (!created.ok()) return created.status();
  return run.state();
}

// The background checkpointer copies the WAL into the database while the store is in use, so
// that commits do not have to (it copied nothing before its connection was made to read the
// file once: a connection that has not read it yet does not know it is in WAL mode).
TEST_F(SqliteRunStoreTest, BackgroundCheckpointerCopiesTheWalIntoTheDatabase) {
  std::unique_ptr<SqliteRunStore> store = OpenOrDie();
  ASSERT_NE(store, nullptr);
  absl::StatusOr<rein::v1::RunState> created = CreateRunIn(*store, "run-1");
  ASSERT_TRUE(created.ok()) << created.status();
  rein::v1::RunState state = *std::move(created);
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(CommitStep(*store, "run-1", &state, rein::v1::PLANNING).ok());
  }
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (store->background_checkpointed_frames() == 0 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  EXPECT_GT(store->background_checkpointed_frames(), 0);
}

// A commit that leaves kCheckpointFrames in the WAL wakes the checkpointer at once; until
// then (with the periodic pass an hour away) it copies nothing.
TEST_F(SqliteRunStoreTest, ACommitThatFillsTheWalWakesTheCheckpointer) {
  SqliteRunStore::Options options;
  options.checkpoint_interval = absl::Hours(1);
  absl::StatusOr<std::unique_ptr<SqliteRunStore>> store = SqliteRunStore::Open(path_, options);
  ASSERT_TRUE(store.ok()) << store.status();
  absl::StatusOr<rein::v1::RunState> created = CreateRunIn(**store, "run-1");
  ASSERT_TRUE(created.ok()) << created.status();
  rein::v1::RunState state = *std::move(created);
  state.add_notes(std::string(64 * 1024, 'n'));  // 16 or more pages per commit
  // The WAL's size at kCheckpointFrames: a 32-byte header, then a 24-byte header and a page
  // per frame.
  const uintmax_t full = 32 + uintmax_t{SqliteRunStore::kCheckpointFrames} * (24 + 4096);
  std::error_code error;
  int commits = 0;
  while (std::filesystem::file_size(path_ + "-wal", error) < full) {
    ASSERT_FALSE(error) << error.message();
    ASSERT_EQ((*store)->background_checkpointed_frames(), 0) << "after " << commits;
    ASSERT_TRUE(CommitStep(**store, "run-1", &state, rein::v1::PLANNING).ok());
    ASSERT_LT(++commits, 10 * SqliteRunStore::kCheckpointFrames);
  }
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  while ((*store)->background_checkpointed_frames() == 0 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_GT((*store)->background_checkpointed_frames(), 0) << "after " << commits << " commits";
}

TEST_F(SqliteRunStoreTest, OpenCheckpointIntervalNotPositiveIsInvalidArgument) {
  for (absl::Duration interval : {absl::ZeroDuration(), absl::Seconds(-1)}) {
    SqliteRunStore::Options options;
    options.checkpoint_interval = interval;
    absl::StatusOr<std::unique_ptr<SqliteRunStore>> store = SqliteRunStore::Open(path_, options);
    EXPECT_EQ(store.status().code(), absl::StatusCode::kInvalidArgument) << interval;
    EXPECT_THAT(store.status().message(), HasSubstr("checkpoint_interval"));
  }
}

TEST_F(SqliteRunStoreTest, OpenNegativeBusyTimeoutIsInvalidArgument) {
  SqliteRunStore::Options options;
  options.busy_timeout = absl::Seconds(-1);
  EXPECT_EQ(SqliteRunStore::Open(path_, options).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(SqliteRunStoreTest, OpenUsesWalAndRecordsSchemaVersion) {
  ASSERT_NE(OpenOrDie(), nullptr);
  EXPECT_EQ(QueryRaw(path_, "PRAGMA journal_mode"), "wal");
  EXPECT_EQ(QueryRaw(path_, "SELECT version FROM schema_version"),
            std::to_string(SqliteRunStore::kSchemaVersion));
}

// How version 3 kept runs: no namespace, request_id unique in its own column.
constexpr char kBackToLayout3[] = R"sql(
    DROP INDEX runs_by_request;
    DROP INDEX runs_by_namespace;
    UPDATE runs SET request_id = ns_request_id;
    ALTER TABLE runs DROP COLUMN ns_request_id;
    ALTER TABLE runs DROP COLUMN namespace;
)sql";

TEST_F(SqliteRunStoreTest, OpenMigratesALayout3FileIntoTheDefaultNamespace) {
  {
    std::unique_ptr<SqliteRunStore> store = OpenOrDie();
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->CreateRun(MakeRun("run-old", "request-1"), {}).ok());
  }
  ASSERT_TRUE(ExecRaw(path_, absl::StrCat("BEGIN;", kBackToLayout3,
                                          "UPDATE schema_version SET version = 3; COMMIT;"))
                  .ok());
  std::unique_ptr<SqliteRunStore> store = OpenOrDie();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(QueryRaw(path_, "SELECT version FROM schema_version"),
            std::to_string(SqliteRunStore::kSchemaVersion));
  EXPECT_EQ(QueryRaw(path_, "SELECT namespace FROM runs WHERE run_id = 'run-old'"), "default");
  // The old request_id still names the old run in `default`, and is free in another namespace.
  const absl::Status moved = rein::testing::CheckRequestIdMovedToDefault(*store);
  EXPECT_TRUE(moved.ok()) << moved;
}

TEST_F(SqliteRunStoreTest, OpenOlderSchemaVersionIsFailedPreconditionSayingWhatToDo) {
  ASSERT_NE(OpenOrDie(), nullptr);
  ASSERT_TRUE(ExecRaw(path_, "UPDATE schema_version SET version = 1").ok());
  absl::StatusOr<std::unique_ptr<SqliteRunStore>> store = SqliteRunStore::Open(path_);
  EXPECT_EQ(store.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(store.status().message(), HasSubstr("older schema version 1"));
  EXPECT_THAT(store.status().message(), HasSubstr("move the file away"));
}

TEST_F(SqliteRunStoreTest, OpenNewerSchemaVersionIsFailedPrecondition) {
  ASSERT_NE(OpenOrDie(), nullptr);
  const std::string newer = std::to_string(SqliteRunStore::kSchemaVersion + 1);
  ASSERT_TRUE(ExecRaw(path_, "UPDATE schema_version SET version = " + newer).ok());
  absl::StatusOr<std::unique_ptr<SqliteRunStore>> store = SqliteRunStore::Open(path_);
  EXPECT_EQ(store.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(store.status().message(), HasSubstr("schema version " + newer));
}

// The loop's three stages share one stored value, so moving between them leaves runs_by_stage
// alone; the run's own stage is in its state.
TEST_F(SqliteRunStoreTest, TheLoopsStagesAreStoredAsOneAndReadBackExactly) {
  std::unique_ptr<SqliteRunStore> store = OpenOrDie();
  ASSERT_NE(store, nullptr);
  absl::StatusOr<rein::v1::RunState> created = CreateRunIn(*store, "run-1");
  ASSERT_TRUE(created.ok()) << created.status();
  rein::v1::RunState state = *std::move(created);
  for (rein::v1::Stage stage : {rein::v1::PLANNING, rein::v1::DECIDING, rein::v1::EXECUTING,
                                rein::v1::EVALUATING, rein::v1::PAUSED}) {
    ASSERT_TRUE(CommitStep(*store, "run-1", &state, stage).ok());
    const bool loop = stage == rein::v1::DECIDING || stage == rein::v1::EXECUTING ||
                      stage == rein::v1::EVALUATING;
    EXPECT_EQ(QueryRaw(path_, "SELECT stage FROM runs"),
              std::to_string(loop ? rein::v1::DECIDING : stage))
        << rein::v1::Stage_Name(stage);
    absl::StatusOr<rein::v1::Run> stored = store->GetRun("run-1");
    ASSERT_TRUE(stored.ok()) << stored.status();
    EXPECT_EQ(stored->state().stage(), stage);
  }
}

// A file written by the previous layout (version 2: the exact stage in runs.stage, snapshots in
// a WITHOUT ROWID table keyed by run and version) is migrated when opened, and nothing is lost.
TEST_F(SqliteRunStoreTest, OpenMigratesALayout2FileKeepingEveryRunAndSnapshot) {
  std::vector<Snapshot> snapshots;
  {
    std::unique_ptr<SqliteRunStore> store = OpenOrDie();
    ASSERT_NE(store, nullptr);
    for (const auto& [id, stage] :
         {std::pair{"run-e", rein::v1::EXECUTING}, std::pair{"run-v", rein::v1::EVALUATING},
          std::pair{"run-p", rein::v1::PAUSED}}) {
      rein::v1::Run run = MakeRun(id);
      ASSERT_TRUE(store->CreateRun(run, {}).ok());
      rein::v1::RunState next = Step(run.state(), stage);
      next.set_iteration(1);
      Snapshot snapshot{1, next.version(), next.SerializeAsString()};
      ASSERT_TRUE(store->Commit(id, 1, next, {}, snapshot, absl::FromUnixSeconds(1700000001)).ok());
      if (std::string(id) == "run-e") snapshots.push_back(snapshot);
    }
  }
  // Back to how version 2 kept it.
  ASSERT_TRUE(ExecRaw(path_, R"sql(
    BEGIN;
    DROP INDEX runs_by_request;
    DROP INDEX runs_by_namespace;
    ALTER TABLE runs DROP COLUMN ns_request_id;
    ALTER TABLE runs DROP COLUMN namespace;
    UPDATE runs SET stage = 4 WHERE run_id = 'run-e';
    UPDATE runs SET stage = 5 WHERE run_id = 'run-v';
    CREATE TABLE snapshots_v2 (
      run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
      version INTEGER NOT NULL,
      iteration INTEGER NOT NULL,
      state BLOB NOT NULL,
      PRIMARY KEY (run_id, version)
    ) WITHOUT ROWID;
    INSERT INTO snapshots_v2 SELECT run_id, version, iteration, state FROM snapshots;
    DROP TABLE snapshots;
    ALTER TABLE snapshots_v2 RENAME TO snapshots;
    UPDATE schema_version SET version = 2;
    COMMIT;
  )sql")
                  .ok());
  ASSERT_EQ(QueryRaw(path_, "SELECT count(*) FROM snapshots"), "3");

  std::unique_ptr<SqliteRunStore> store = OpenOrDie();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(QueryRaw(path_, "SELECT version FROM schema_version"),
            std::to_string(SqliteRunStore::kSchemaVersion));
  EXPECT_EQ(QueryRaw(path_,
                     "SELECT group_concat(stage) FROM (SELECT stage FROM runs "
                     "ORDER BY run_id)"),
            "3,6,3");  // run-e, run-p, run-v
  for (const auto& [id, stage] :
       {std::pair{"run-e", rein::v1::EXECUTING}, std::pair{"run-v", rein::v1::EVALUATING},
        std::pair{"run-p", rein::v1::PAUSED}}) {
    RunFilter filter;
    filter.stage = stage;
    absl::StatusOr<RunPage> page = store->ListRuns(filter, 10, "");
    ASSERT_TRUE(page.ok()) << page.status();
    ASSERT_EQ(page->runs.size(), 1u) << id;
    EXPECT_EQ(page->runs[0].run_id(), id);
  }
  absl::StatusOr<std::vector<Snapshot>> kept = store->ListSnapshots("run-e");
  ASSERT_TRUE(kept.ok()) << kept.status();
  ASSERT_EQ(kept->size(), 1u);
  EXPECT_EQ((*kept)[0].version, snapshots[0].version);
  EXPECT_EQ((*kept)[0].iteration, snapshots[0].iteration);
  EXPECT_EQ((*kept)[0].state, snapshots[0].state);
  // The migrated table goes on: a new snapshot is written, a second one of a version is not.
  absl::StatusOr<rein::v1::Run> run = store->GetRun("run-e");
  ASSERT_TRUE(run.ok()) << run.status();
  rein::v1::RunState next = Step(run->state(), rein::v1::EVALUATING);
  next.set_iteration(2);
  Snapshot second{2, next.version(), next.SerializeAsString()};
  ASSERT_TRUE(store
                  ->Commit("run-e", run->state().version(), next, {}, second,
                           absl::FromUnixSeconds(1700000002))
                  .ok());
  rein::v1::RunState again = Step(next, rein::v1::DECIDING);
  Snapshot duplicate{2, next.version(), again.SerializeAsString()};
  EXPECT_EQ(
      store
          ->Commit("run-e", next.version(), again, {}, duplicate, absl::FromUnixSeconds(1700000003))
          .status()
          .code(),
      absl::StatusCode::kAlreadyExists);
  kept = store->ListSnapshots("run-e");
  ASSERT_TRUE(kept.ok()) << kept.status();
  EXPECT_EQ(kept->size(), 2u);
}

TEST_F(SqliteRunStoreTest, CommitOnRunWithCorruptBaseRewritesOnlyTheStatePart) {
  {
    std::unique_ptr<SqliteRunStore> store = OpenOrDie();
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->CreateRun(MakeRun("run-bad"), {}).ok());
  }
  ASSERT_TRUE(ExecRaw(path_, "UPDATE runs SET run = x'ffffffff' WHERE run_id = 'run-bad'").ok());
  std::unique_ptr<SqliteRunStore> store = OpenOrDie();
  ASSERT_NE(store, nullptr);

  // Commit writes only the state part of the row (the corrupt part is never read by it);
  // every read still reports the corruption.
  EXPECT_TRUE(store
                  ->Commit("run-bad", 1, NextState(2), {Event("x")}, std::nullopt,
                           absl::FromUnixSeconds(1700000001))
                  .ok());
  EXPECT_EQ(store->GetRun("run-bad").status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(QueryRaw(path_, "SELECT version FROM runs WHERE run_id = 'run-bad'"), "2");
}

}  // namespace
}  // namespace rein
