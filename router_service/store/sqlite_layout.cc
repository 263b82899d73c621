// SqliteRunStore's layout: the tables, the migration from layout 2, and the opening of a file
// (WAL mode, synchronous, page cache, schema version).
#include <sqlite3.h>

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "router_service/store/sqlite_db.h"
#include "router_service/store/sqlite_run_store.h"

namespace rein {
namespace {

// Every transition writes the WAL frames of the pages it changes (a header and a page each), and
// the checkpointer copies them again, so the layout keeps a transition's pages few (measured on
// the bench loop: 5.3 frames per commit in layout 2, 4.2 in layout 3):
// - `runs.stage` holds the stored stage (StoredStage): DECIDING for the three stages a run
//   cycles through every iteration (DECIDING, EXECUTING, EVALUATING), so moving between them
//   does not rewrite the row's entry in runs_by_stage (a second page in every commit). A run's
//   exact stage is in its state; ListRuns filters on it.
// - `snapshots` is a rowid table: a snapshot (a whole state, 1.4 to 2.2 KB on the bench loop)
//   is appended at the table's end, and fits in its leaf. As a WITHOUT ROWID table keyed by
//   (run_id, version) each one spilled into an overflow page of its own (such a table keeps at
//   most about 1,000 bytes of a row in the leaf) and split and rebalanced the run's leaves.
constexpr char kSchema[] = R"sql(
CREATE TABLE IF NOT EXISTS runs (
  run_id TEXT PRIMARY KEY NOT NULL,
  request_id TEXT UNIQUE,
  stage INTEGER NOT NULL,
  reason INTEGER NOT NULL,
  version INTEGER NOT NULL,
  last_seq INTEGER NOT NULL,
  created_us INTEGER NOT NULL,
  updated_us INTEGER NOT NULL,
  run BLOB NOT NULL,
  state BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS runs_by_created ON runs (created_us DESC, run_id DESC);
CREATE INDEX IF NOT EXISTS runs_by_stage ON runs (stage, created_us DESC, run_id DESC);
CREATE INDEX IF NOT EXISTS runs_by_reason ON runs (reason, created_us DESC, run_id DESC);
CREATE TABLE IF NOT EXISTS events (
  run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
  seq INTEGER NOT NULL,
  body BLOB NOT NULL,
  PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS snapshots (
  id INTEGER PRIMARY KEY,
  run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
  version INTEGER NOT NULL,
  iteration INTEGER NOT NULL,
  state BLOB NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS snapshots_by_run ON snapshots (run_id, version);
)sql";

// Layout 2 to 3, in the transaction that opens the store: the stored stage of the runs in the
// loop, and the old snapshots table set aside for kSchema to create the new one...
constexpr char kMigrateFrom2[] = R"sql(
UPDATE runs SET stage = 3 WHERE stage IN (4, 5);
ALTER TABLE snapshots RENAME TO snapshots_v2;
)sql";
// ...into which they are copied after kSchema.
constexpr char kMigrateFrom2AfterSchema[] = R"sql(
INSERT INTO snapshots (run_id, version, iteration, state)
  SELECT run_id, version, iteration, state FROM snapshots_v2 ORDER BY run_id, version;
DROP TABLE snapshots_v2;
UPDATE schema_version SET version = 3 WHERE id = 1;
)sql";

// Step 4, namespaces (docs/NAMESPACES.md): every run belongs to one, existing runs to
// `default`; request_id is unique per namespace. The column-level UNIQUE of runs.request_id
// cannot be dropped in place, so that column is no longer written (NULL, which UNIQUE allows
// many times) and the key moves to ns_request_id, unique with the namespace.
constexpr char kStep4[] = R"sql(
ALTER TABLE runs ADD COLUMN namespace TEXT NOT NULL DEFAULT 'default';
ALTER TABLE runs ADD COLUMN ns_request_id TEXT;
UPDATE runs SET ns_request_id = request_id, request_id = NULL WHERE request_id IS NOT NULL;
CREATE UNIQUE INDEX IF NOT EXISTS runs_by_request ON runs (namespace, ns_request_id);
CREATE INDEX IF NOT EXISTS runs_by_namespace ON runs (namespace, created_us DESC, run_id DESC);
)sql";

// Step 5: the webhook outbox (notification_outbox.h), one row per notice. `status` is
// NotificationStatus; `delivered_to` the endpoints that took it, one per line.
constexpr char kStep5Outbox[] = R"sql(
CREATE TABLE IF NOT EXISTS notifications (
  notice_id TEXT PRIMARY KEY NOT NULL,
  run_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  event BLOB NOT NULL,
  state BLOB NOT NULL,
  committed_us INTEGER NOT NULL,
  status INTEGER NOT NULL DEFAULT 0,
  attempts INTEGER NOT NULL DEFAULT 0,
  next_attempt_us INTEGER NOT NULL,
  last_error TEXT NOT NULL DEFAULT '',
  delivered_to TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS notifications_due ON notifications (status, next_attempt_us);
CREATE INDEX IF NOT EXISTS notifications_by_commit ON notifications (committed_us DESC);
)sql";

}  // namespace

absl::Status SqliteRunStore::ApplySchemaSteps(int64_t version) {
  const int64_t stored = version;
  if (version < 4) {
    RETURN_IF_ERROR(db_->ExecScript(kStep4, "migrating the layout to version 4 (namespaces)"));
    version = 4;
  }
  if (version < 5) {
    RETURN_IF_ERROR(db_->ExecScript(kStep5Outbox, "applying schema step 5 (notifications)"));
    version = 5;
  }
  if (version == stored) return absl::OkStatus();
  ASSIGN_OR_RETURN(SqliteDb::Statement stmt,
                   db_->Prepare("INSERT INTO schema_version (id, version) VALUES (1, ?) "
                                "ON CONFLICT (id) DO UPDATE SET version = excluded.version"));
  stmt.BindInt(1, version);
  const int rc = stmt.Step();
  if (rc != SQLITE_DONE) return db_->Error(rc, "writing schema_version");
  return absl::OkStatus();
}

absl::Status SqliteRunStore::Initialize(const Options& options) {
  RETURN_IF_ERROR(db_->SetBusyTimeout(options.busy_timeout));
  int rc;
  {
    ASSIGN_OR_RETURN(SqliteDb::Statement stmt, db_->Prepare("PRAGMA journal_mode=WAL"));
    rc = stmt.Step();
    if (rc != SQLITE_ROW) return db_->Error(rc, "setting journal_mode=WAL");
    const std::string mode = stmt.ColumnBytes(0);
    // An in-memory database reports "memory"; every file must be in WAL mode.
    if (mode != "wal" && mode != "memory") {
      return absl::FailedPreconditionError(absl::StrCat(
          "SQLite database ", path_, ": journal_mode is ", mode, " and cannot be set to wal"));
    }
  }
  RETURN_IF_ERROR(db_->Exec(options.synchronous == Synchronous::kFull
                                ? "PRAGMA synchronous=FULL"
                                : "PRAGMA synchronous=NORMAL"));
  RETURN_IF_ERROR(db_->Exec("PRAGMA foreign_keys=ON"));
  // A negative cache_size is in KiB.
  RETURN_IF_ERROR(db_->Exec(
      absl::StrCat("PRAGMA cache_size=", -1024 * static_cast<int64_t>(options.cache_mib))));

  ASSIGN_OR_RETURN(SqliteDb::Transaction tx,
                   SqliteDb::Transaction::Begin(db_.get(), /*write=*/true));
  RETURN_IF_ERROR(
      db_->Exec("CREATE TABLE IF NOT EXISTS schema_version ("
                "id INTEGER PRIMARY KEY CHECK (id = 1), version INTEGER NOT NULL)"));
  int64_t version = 0;
  {
    ASSIGN_OR_RETURN(SqliteDb::Statement stmt,
                     db_->Prepare("SELECT version FROM schema_version WHERE id = 1"));
    rc = stmt.Step();
    if (rc == SQLITE_ROW) {
      version = stmt.ColumnInt(0);
    } else if (rc != SQLITE_DONE) {
      return db_->Error(rc, "reading schema_version");
    }
  }
  const bool from_2 = version == 2;
  if (from_2) {
    RETURN_IF_ERROR(db_->ExecScript(kMigrateFrom2, "migrating the layout from version 2 to 3"));
    version = 3;
  }
  // Versions from 3 on are migrated step by step below, each step on its own.
  if (version != 0 && version < 3) {
    return absl::FailedPreconditionError(
        absl::StrCat("SQLite database ", path_, " has the older schema version ", version,
                     " (this binary writes version ", kSchemaVersion,
                     " and does not migrate it); move the file away to start a new store"));
  }
  if (version > kSchemaVersion || version < 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("SQLite database ", path_, " has schema version ", version,
                     "; this binary knows versions up to ", kSchemaVersion));
  }
  RETURN_IF_ERROR(db_->ExecScript(kSchema, "creating tables"));
  if (from_2) {
    RETURN_IF_ERROR(
        db_->ExecScript(kMigrateFrom2AfterSchema, "migrating the layout from version 2 to 3"));
  }
  RETURN_IF_ERROR(ApplySchemaSteps(version == 0 ? 3 : version));
  return tx.Commit();
}

}  // namespace rein
