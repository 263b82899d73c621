// PostgresRunStore: the RunStore in a PostgreSQL database, for one or several routers.
#ifndef REIN_ROUTER_SERVICE_STORE_POSTGRES_RUN_STORE_H_
#define REIN_ROUTER_SERVICE_STORE_POSTGRES_RUN_STORE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "rein/v1/types.pb.h"
#include "router_service/store/router_store.h"

namespace rein {

class PgTransaction;

class PgPool;  // pg_session.h
}  // namespace rein
struct pg_result;
typedef struct pg_result PGresult;
namespace rein {

// A RouterStore kept in a PostgreSQL database (libpq, PostgreSQL 12 or newer); the contracts
// are RunStore's, FleetStore's and CommitFeed's (run_store.h, fleet_store.h, commit_feed.h).
//
// Layout (the same as SqliteRunStore's): `runs` holds each run's immutable part (the run
// without state and updated_at, serialized) in `run` and its state part in `state`, both BYTEA,
// plus the columns the queries need (stage, outcome reason, version, last event seq,
// created/updated times in microseconds since the epoch); `events` holds each serialized
// rein.v1.RunEvent keyed by (run_id, seq); `snapshots` the per-iteration state keyed by
// (run_id, version); `schema_version` the layout's version. Tables are created when missing.
// run_id is collated "C" (bytewise), as in SQLite.
//
// How it keeps the contract with several routers on one database: Commit is `UPDATE runs ...
// WHERE run_id = $ AND version = $` (the row lock orders concurrent commits; a loser re-reads
// the row and finds the version moved on, FAILED_PRECONDITION), then the events with seq
// last_seq+1.. and the snapshot, then COMMIT. CreateRun inserts with ON CONFLICT DO NOTHING, so
// concurrent creators with one request_id (in this process or in another router) wait for the
// first and return its run. Values always travel as binary parameters, never inside SQL text.
// A lost connection is UNAVAILABLE; a connection found broken at the start of a call is
// reconnected once.
//
// Leases (schema version 2): `routers` holds each router's id, incarnation (a random token of
// the process that joined under the id), heartbeat (the server's clock_timestamp() at the last
// renewal) and ttl; `runs.owner` and `runs.lease_epoch` say who drives each run. A lease is
// valid while heartbeat + ttl > clock_timestamp(), the database's clock only. RenewLease is one
// UPDATE of the router's row. CommitOwned adds `AND owner = me AND lease_epoch = mine` to the
// commit's UPDATE, so a router that lost a run commits nothing over its new owner. ClaimRuns
// takes runs with `FOR UPDATE SKIP LOCKED`, so routers claiming together never wait on or take
// the same run. Every commit also sends NOTIFY rein_runs with "<last_seq> <ended 0|1>
// <router_id> <run_id>" inside its transaction; SubscribeCommits LISTENs on a dedicated
// connection (reconnected after a loss) and passes on the other routers' commits.
// A layout of version 1 (before leases) is migrated in place when opened: the columns and the
// table are added, the existing runs have no owner (so the first router to claim takes them).
//
// Thread-safe: a small pool of connections (Options::max_connections); each call borrows one
// for its transaction, so calls on different runs proceed in parallel on the server instead of
// queueing behind one connection's round trips. The lease's calls (RenewLease, ClaimRuns,
// OwnedRunVersions, LeaveFleet) have one more connection of their own, opened on first use: the
// router's lease loop never waits behind the commits queued for the pool, which under load could
// hold a renewal past the lease's ttl and hand a healthy router's runs to another.
class PostgresRunStore final : public RouterStore {
 public:
  struct Options {
    // Connections kept open at most; a call waits for a free one beyond that.
    int max_connections = 4;
    // How long opening one connection may take, unless the URL sets connect_timeout.
    absl::Duration connect_timeout = absl::Seconds(10);
  };

  // Connects to `url` (postgres://user:password@host:port/database?options, or postgresql://)
  // and creates the tables when missing. A malformed URL is INVALID_ARGUMENT; a server that
  // cannot be reached is UNAVAILABLE naming host:port; refused credentials are PERMISSION_DENIED;
  // a missing database or a layout of another version is FAILED_PRECONDITION. Passwords never
  // appear in messages.
  static absl::StatusOr<std::unique_ptr<PostgresRunStore>> Open(const std::string& url,
                                                                const Options& options);
  static absl::StatusOr<std::unique_ptr<PostgresRunStore>> Open(const std::string& url) {
    return Open(url, Options());
  }

  // The layout version this binary writes.
  // 2: routers, runs.owner, runs.lease_epoch (a version 1 layout is migrated when opened).
  // 4: runs.namespace, request_id unique per namespace (3 is SQLite's alone).
  // 5: the `notifications` outbox (notification_outbox.h); added to a layout of version 1 or 2
  //    when opened (each step from 2 on is applied in order, `if (version < N)`).
  static constexpr int kSchemaVersion = 5;

  // host:port/database of the server, for logs and messages (never the password).
  const std::string& target() const;

  ~PostgresRunStore() override;
  PostgresRunStore(const PostgresRunStore&) = delete;
  PostgresRunStore& operator=(const PostgresRunStore&) = delete;

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

  bool Shared() const override { return true; }
  absl::Status JoinFleet(const std::string& router_id, absl::Duration ttl) override;
  absl::Status RenewLease() override;
  absl::Status LeaveFleet() override;
  absl::StatusOr<std::vector<rein::v1::Run>> ClaimRuns(bool include_mine) override;
  absl::StatusOr<std::vector<rein::v1::RunEvent>> CommitOwned(
      const std::string& run_id, int64_t lease_epoch, int64_t expected_version,
      const rein::v1::RunState& new_state, std::vector<rein::v1::RunEvent> events,
      const std::optional<Snapshot>& snapshot, absl::Time now) override;
  // The whole batch in one transaction (one WAL flush), each request under a savepoint.
  std::vector<absl::StatusOr<std::vector<rein::v1::RunEvent>>> CommitBatch(
      std::vector<CommitRequest>& requests) override;
  absl::StatusOr<std::map<std::string, int64_t>> OwnedRunVersions() override;
  void SubscribeCommits(std::function<void(const CommitNotice&)> on_commit) override;

  // The outbox (postgres_outbox.cc): claimed and fenced like runs.
  absl::StatusOr<std::vector<Notification>> ClaimNotifications(absl::Time now,
                                                               absl::Time hold_until,
                                                               int limit) override;
  absl::Status UpdateNotification(const NotificationUpdate& update) override;
  absl::StatusOr<std::vector<Notification>> ListNotifications(NotificationStatus status, bool any,
                                                              const std::string& namespace_name,
                                                              int limit) override;
  absl::StatusOr<NotificationCounts> CountNotifications() override;

 private:
  // Inside `tx`, the outbox's notices of a commit's stored `events` (postgres_outbox.cc).
  absl::Status InsertNotifications(PgTransaction* tx, const std::string& run_id,
                                   const std::vector<rein::v1::RunEvent>& events,
                                   const std::string& state_tail, int64_t now_us);
  // The rows of a query selecting the outbox's columns, in postgres_outbox.cc's order.
  absl::StatusOr<std::vector<Notification>> ParseNotificationRows(const PGresult* result,
                                                                  const std::string& what) const;
  PostgresRunStore(std::unique_ptr<PgPool> pool, std::unique_ptr<PgPool> lease_pool);

  // Commit and CommitOwned (with `lease_epoch`), in a transaction of its own, or inside
  // `batch` (CommitBatch: not committed here).
  absl::StatusOr<std::vector<rein::v1::RunEvent>> CommitChecked(
      const std::string& run_id, std::optional<int64_t> lease_epoch, int64_t expected_version,
      const rein::v1::RunState& new_state, std::vector<rein::v1::RunEvent> events,
      const std::optional<Snapshot>& snapshot, absl::Time now, PgTransaction* batch = nullptr);
  // Runs (run_id, run, state, owner, lease_epoch) rows into Runs.
  absl::StatusOr<std::vector<rein::v1::Run>> ParseRunRows(const PGresult* result,
                                                          const std::string& what) const;
  void ListenLoop();
  std::string router_id() const;

  absl::Status Initialize();
  absl::Status ParseStoredRun(const std::string& base, const std::string& tail,
                              const std::string& run_id, rein::v1::Run* run) const;

  const std::unique_ptr<PgPool> pool_;
  const std::unique_ptr<PgPool> lease_pool_;  // one connection: the lease loop's calls

  mutable absl::Mutex mu_;
  std::string router_id_ ABSL_GUARDED_BY(mu_);    // JoinFleet's
  std::string incarnation_ ABSL_GUARDED_BY(mu_);  // this process's token for router_id_
  std::function<void(const CommitNotice&)> on_commit_;
  bool stop_listening_ ABSL_GUARDED_BY(mu_) = false;
  std::thread listener_;
};

}  // namespace rein

#endif  // REIN_ROUTER_SERVICE_STORE_POSTGRES_RUN_STORE_H_
