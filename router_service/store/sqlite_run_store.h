// SqliteRunStore: the embedded RunStore, one SQLite file in WAL mode.
#ifndef REIN_ROUTER_SERVICE_STORE_SQLITE_RUN_STORE_H_
#define REIN_ROUTER_SERVICE_STORE_SQLITE_RUN_STORE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "rein/v1/types.pb.h"
#include "router_service/store/router_store.h"
#include "router_service/store/sqlite_db.h"

namespace rein {

// A RunStore kept in one SQLite database file; the contract is RunStore's (run_store.h).
//
// Layout: `runs` holds each run's immutable part (the run without state and updated_at,
// serialized) in `run` and its state part in `state`, both BLOBs (see SplitRun in
// store_codec.h), plus the columns the queries need (stage, outcome reason, version, last event
// seq, created/updated times in microseconds since the epoch); `events` holds each event as a
// serialized rein.v1.RunEvent keyed by (run_id, seq); `snapshots` holds each snapshot's
// serialized rein.v1.RunState keyed by (run_id, version); `schema_version` holds the layout's
// version.
//
// Thread-safe: one connection, used under a mutex; every method is one SQLite transaction
// (writes use BEGIN IMMEDIATE, so several processes sharing the file also serialize). Nothing
// here stops two routers from using one file: OpenRunStore (open_run_store.h) does, with a lock.
class SqliteRunStore final : public RouterStore {
 public:
  enum class Synchronous { kNormal, kFull };

  struct Options {
    // NORMAL: in WAL mode a committed transaction survives a process crash but the last ones
    // may be lost on power failure. FULL: fsync on every commit, survives power failure too.
    Synchronous synchronous = Synchronous::kNormal;
    // How long a statement waits for another process's lock before failing with UNAVAILABLE.
    absl::Duration busy_timeout = absl::Seconds(5);
    // Copy the WAL into the database from a second connection on a background thread, so that
    // a commit does not pay for a checkpoint (and its fsyncs): the thread is woken when a
    // commit leaves kCheckpointFrames or more in the WAL, and makes a pass every
    // `checkpoint_interval` otherwise. The commit path checkpoints itself only when the WAL reaches
    // kCommitCheckpointFrames (the background one fell behind). Without it, SQLite's own
    // automatic checkpoint runs on the commit path every 1,000 frames.
    bool background_checkpoint = true;
    absl::Duration checkpoint_interval = absl::Seconds(1);
    // SQLite's page cache of the router's connection, in MiB (kMinCacheMib..kMaxCacheMib; 2 is
    // SQLite's own default). More keeps more runs' pages in memory (on layout 2, 100 runs in flight
    // read 5.7 pages per transition back from the file with 2 MiB, 0.6 with 8) at the price of
    // resident memory; on layout 3 the bench's throughput was level from 2 to 8 MiB.
    int cache_mib = 2;
  };

  // Opens (creating if missing) the database at `path` and its tables. A path that cannot be
  // opened, or a file that is not a database, is FAILED_PRECONDITION naming the path; a
  // database of another layout version is FAILED_PRECONDITION naming the versions (an older
  // one, except version 2, is not migrated: the message says to move the file away).
  static absl::StatusOr<std::unique_ptr<SqliteRunStore>> Open(const std::string& path,
                                                              const Options& options);
  static absl::StatusOr<std::unique_ptr<SqliteRunStore>> Open(const std::string& path) {
    return Open(path, Options());
  }

  // The WAL's size (in frames of one page) at which a commit wakes the background
  // checkpointer: 64 MiB at 4 KiB pages. Each pass syncs the WAL and the database, and on the
  // bench's virtual disk that I/O cost a lone run more than anything else in its loop: with no
  // checkpoint at all its iterations took 421-515 us against 635-877 (p99 1.0-1.2 against
  // 2.4-2.8 ms); 16,384 frames against 4,096 took 492-790 against 681-896 us in six of seven
  // alternated rounds (bench/ANALYSIS.md, eighth round).
  static constexpr int kCheckpointFrames = 16384;
  // The WAL's size at which the commit path checkpoints itself (256 MiB): the background
  // checkpointer fell behind, or a reader holds it back.
  static constexpr int kCommitCheckpointFrames = 65536;

  // How many of the WAL's frames the background checkpointer's last pass found in the
  // database (0 before its first pass).
  int64_t background_checkpointed_frames() {
    absl::MutexLock lock(&checkpoint_mu_);
    return background_checkpointed_frames_;
  }

  // The layout version this binary writes.
  // 2: runs.state holds the state apart from the rest of the run; snapshots are binary.
  // 3: runs.stage holds one value for the loop's three stages; snapshots is a rowid table
  //    (fewer pages written per commit). A version 2 file is migrated when opened.
  // 4: runs.namespace, and request_id unique per namespace (runs.ns_request_id).
  // 5: the `notifications` outbox (notification_outbox.h); a version 3 file gains it when
  //    opened (each step from 3 on is applied in order, `if (version < N)`).
  static constexpr int kSchemaVersion = 5;
  // The range of Options::cache_mib.
  static constexpr int kMinCacheMib = 1;
  static constexpr int kMaxCacheMib = 4096;

  ~SqliteRunStore() override;
  SqliteRunStore(const SqliteRunStore&) = delete;
  SqliteRunStore& operator=(const SqliteRunStore&) = delete;

  absl::StatusOr<CreateResult> CreateRun(const rein::v1::Run& run,
                                         std::vector<rein::v1::RunEvent> events) override;
  absl::StatusOr<rein::v1::Run> GetRun(const std::string& run_id) override;
  absl::StatusOr<rein::v1::Run> FindRunByRequestId(const std::string& namespace_name,
                                                   const std::string& request_id) override;
  absl::StatusOr<std::vector<rein::v1::RunEvent>> Commit(const std::string& run_id,
                                                         int64_t expected_version,
                                                         const rein::v1::RunState& new_state,
                                                         std::vector<rein::v1::RunEvent> events,
                                                         const std::optional<Snapshot>& snapshot,
                                                         absl::Time now) override;
  absl::StatusOr<std::vector<rein::v1::RunEvent>> ReadEvents(const std::string& run_id,
                                                             int64_t after_seq, int limit) override;
  absl::StatusOr<RunPage> ListRuns(const RunFilter& filter, int page_size,
                                   const std::string& page_token) override;
  absl::StatusOr<std::vector<Snapshot>> ListSnapshotsAfter(const std::string& run_id,
                                                           int64_t after_version,
                                                           int limit) override;
  absl::StatusOr<std::vector<std::string>> ListUnfinishedRunIds() override;
  absl::StatusOr<NamespaceUsage> GetNamespaceUsage(const std::string& namespace_name,
                                                   absl::Time since) override;

  // Leases, kept trivially: one router uses a SQLite store (OpenRunStore locks it), so the
  // router that joined owns every unfinished run at epoch 1 (GetRun and ListRuns say so), its
  // lease never lapses, ClaimRuns(include_mine) returns every unfinished run and nothing else
  // is ever claimed, CommitOwned is Commit, and no notice ever comes.
  absl::Status JoinFleet(const std::string& router_id, absl::Duration ttl) override;
  absl::Status RenewLease() override { return absl::OkStatus(); }
  absl::Status LeaveFleet() override { return absl::OkStatus(); }
  absl::StatusOr<std::vector<rein::v1::Run>> ClaimRuns(bool include_mine) override;
  absl::StatusOr<std::vector<rein::v1::RunEvent>> CommitOwned(
      const std::string& run_id, int64_t lease_epoch, int64_t expected_version,
      const rein::v1::RunState& new_state, std::vector<rein::v1::RunEvent> events,
      const std::optional<Snapshot>& snapshot, absl::Time now) override;
  // The whole batch in one transaction (one WAL append, one sync when synchronous=FULL),
  // each request under its own savepoint.
  std::vector<absl::StatusOr<std::vector<rein::v1::RunEvent>>> CommitBatch(
      std::vector<CommitRequest>& requests) override;
  absl::StatusOr<std::map<std::string, int64_t>> OwnedRunVersions() override;
  void SubscribeCommits(std::function<void(const CommitNotice&)>) override {}

  // The outbox (sqlite_outbox.cc): one router, so it owns every notice at epoch 1.
  absl::StatusOr<std::vector<Notification>> ClaimNotifications(absl::Time now,
                                                               absl::Time hold_until,
                                                               int limit) override;
  absl::Status UpdateNotification(const NotificationUpdate& update) override;
  absl::StatusOr<std::vector<Notification>> ListNotifications(NotificationStatus status, bool any,
                                                              const std::string& namespace_name,
                                                              int limit) override;
  absl::StatusOr<NotificationCounts> CountNotifications() override;

 private:
  SqliteRunStore(std::unique_ptr<SqliteDb> db, std::string path);

  absl::Status Initialize(const Options& options) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The stored run row; NOT_FOUND / DATA_LOSS as GetRun.
  struct RunRow {
    rein::v1::Run run;
    int64_t version = 0;
    int64_t last_seq = 0;
    int64_t stage = 0;  // the indexed columns, set by ReadVersion only
    int64_t reason = 0;
  };
  absl::StatusOr<RunRow> ReadRun(const std::string& run_id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Just the version, last_seq, stage and reason (run left empty): what Commit needs.
  absl::StatusOr<RunRow> ReadVersion(const std::string& run_id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status ParseStoredRun(absl::string_view base, absl::string_view tail,
                              const std::string& run_id, rein::v1::Run* run) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  absl::Status RunExists(const std::string& run_id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Commit's checks and writes inside an open write transaction (events get their seq).
  absl::Status CommitInTransaction(const std::string& run_id, int64_t expected_version,
                                   const rein::v1::RunState& new_state,
                                   std::vector<rein::v1::RunEvent>& events,
                                   const std::optional<Snapshot>& snapshot, absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status InsertEvents(const std::string& run_id, int64_t first_seq,
                            std::vector<rein::v1::RunEvent>& events)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The outbox's notices of a commit's stored `events` (sqlite_outbox.cc): `state_tail` is the
  // state part the commit stored (StateTail), `now_us` its time.
  absl::Status InsertNotifications(const std::string& run_id,
                                   const std::vector<rein::v1::RunEvent>& events,
                                   const std::string& state_tail, int64_t now_us)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Schema steps after layout 3 (sqlite_layout.cc), each `if (version < N)`.
  absl::Status ApplySchemaSteps(int64_t version) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  void CheckpointLoop();
  // The main connection's WAL hook: after each commit, with the WAL's frame count.
  void OnWalCommit(int frames) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string path_;
  // The background checkpointer (see Options::background_checkpoint).
  std::unique_ptr<SqliteDb> checkpoint_db_;
  absl::Mutex checkpoint_mu_;
  bool checkpoint_stop_ ABSL_GUARDED_BY(checkpoint_mu_) = false;
  bool checkpoint_wanted_ ABSL_GUARDED_BY(checkpoint_mu_) = false;
  absl::Duration checkpoint_interval_;
  // Set by the commit that wakes the checkpointer, cleared when its pass ends: the commits
  // in between do not take checkpoint_mu_.
  std::atomic<bool> checkpoint_woken_{false};
  int64_t background_checkpointed_frames_ ABSL_GUARDED_BY(checkpoint_mu_) = 0;
  std::thread checkpointer_;
  absl::Mutex mu_;
  const std::unique_ptr<SqliteDb> db_ ABSL_PT_GUARDED_BY(mu_);
  std::string router_id_ ABSL_GUARDED_BY(mu_);  // set by JoinFleet
};

}  // namespace rein

#endif  // REIN_ROUTER_SERVICE_STORE_SQLITE_RUN_STORE_H_
