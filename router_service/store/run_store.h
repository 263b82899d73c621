// RunStore: the router's durable record of runs, their event logs and state snapshots, and the
// one batched commit. The lease methods are FleetStore's (fleet_store.h), the notices of other
// routers' commits CommitFeed's (commit_feed.h); RouterStore (router_store.h) is all three.
#ifndef REIN_ROUTER_SERVICE_STORE_RUN_STORE_H_
#define REIN_ROUTER_SERVICE_STORE_RUN_STORE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/status_reason.h"
#include "rein/v1/router.pb.h"
#include "rein/v1/types.pb.h"

namespace rein {

// The state of a run at an iteration boundary (a serialized rein.v1.RunState; ExportRun turns
// it into JSON when asked, so the hot path never renders JSON).
struct Snapshot {
  int32_t iteration = 0;
  int64_t version = 0;
  std::string state;
};

struct RunFilter {
  rein::v1::Stage stage = rein::v1::STAGE_UNSPECIFIED;                             // any
  rein::v1::TerminationReason outcome = rein::v1::TERMINATION_REASON_UNSPECIFIED;  // any
  std::string namespace_name;  // only this namespace's runs; "" = any
};

// What a namespace holds now (NamespaceUsage), for its quotas.
struct NamespaceUsage {
  int64_t unfinished_runs = 0;  // not FINISHED, FAILED or CANCELLED (paused runs count)
  // Added up over the namespace's runs created at or after `since`: their tokens_used and
  // cost_used_usd so far.
  int64_t tokens = 0;
  double cost_usd = 0;
};

struct RunPage {
  std::vector<rein::v1::Run> runs;  // newest first (created_at, then run_id)
  std::string next_page_token;      // empty on the last page
};

// Whether `status` is the fencing error of CommitOwned: the run has another owner or epoch
// (ABORTED with reason::kLeaseLost attached, common/status_reason.h).
inline bool IsLeaseLost(const absl::Status& status) {
  return status.code() == absl::StatusCode::kAborted && HasReason(status, reason::kLeaseLost);
}

// One commit of a batch (RunStore::CommitBatch): CommitOwned's arguments when lease_epoch is
// set, else Commit's. `new_state` is borrowed: it must outlive the CommitBatch call.
struct CommitRequest {
  std::string run_id;
  std::optional<int64_t> lease_epoch;
  int64_t expected_version = 0;
  const rein::v1::RunState* new_state = nullptr;
  std::vector<rein::v1::RunEvent> events;
  std::optional<Snapshot> snapshot;
  absl::Time now;
  // How long the store may take on this request at most (set by GroupCommitter from the
  // caller's deadline). A store that can bound its statements (PostgreSQL's statement_timeout)
  // gives up on each statement of the request after it: DEADLINE_EXCEEDED, nothing of the
  // request written. Others ignore it (SQLite is bounded by its busy timeout).
  absl::Duration timeout = absl::InfiniteDuration();
};

struct CreateResult {
  rein::v1::Run run;  // the stored run: the new one, or the earlier run with the same request_id
  bool created = false;
};

// Durable store of runs: the contract both implementations (SqliteRunStore, PostgresRunStore)
// keep, and that run_store_conformance.cc tests once for both. It is written here only; an
// implementation's header says what is particular to it (its layout, its connections).
//
// Transactions: every method is one transaction; a method that fails has written nothing.
// Implementations are thread-safe, and several stores open on one location (two routers on
// one database) serialize their commits: of two commits on one version, exactly one wins.
//
// What a commit checks, in this order: new_state.version == expected_version + 1 (else
// INVALID_ARGUMENT, so every committed transition moves the version on by one); `now` within
// google.protobuf.Timestamp's range (else INVALID_ARGUMENT naming now); the run exists (else
// NOT_FOUND); its stored state.version == expected_version (else FAILED_PRECONDITION: another
// commit came first; re-read and decide again); the snapshot's version, if one is given, not
// stored already for the run (else ALREADY_EXISTS). Optimistic concurrency rests on these.
//
// Event seq: assigned by the store inside the transaction that stores the event, 1, 2, 3 ...
// per run with no gaps and no reuse: CreateRun's events are 1..n, each Commit's go on from the
// last one. Whatever the caller put in an event's run_id and seq is overwritten.
//
// Pages: ListRuns returns runs newest first (created_at, then run_id compared bytewise). A
// page_token is opaque and means "the runs after the last one of the page before, under the
// same filter": it is bound to the filter it was made for, and one not made by this store, or
// used with another filter, is INVALID_ARGUMENT naming page_token. page_size <= 0 means 50;
// larger than 1000 means 1000; a page also ends early once it holds about 3 MiB of runs (so a
// reply stays under gRPC's 4 MiB default), still with a next_page_token.
//
// Reopening: everything committed survives closing the store and opening the same location
// again (runs, events, snapshots); request_id still deduplicates and seq goes on where it
// stopped. Nothing is acknowledged before it is committed.
//
// Owners (several routers on one store, FleetStore): each unfinished run has an owner (a router
// id, in Run.owner) and a lease epoch (Run.lease_epoch). CreateRun stores run.owner as the owner
// at epoch 1 (no owner when empty). CommitOwned commits only while the run's owner is this
// store's router (FleetStore::JoinFleet) at the given epoch, checked in the commit's transaction
// (a fencing token), else ABORTED "lease lost ..." with reason::kLeaseLost (IsLeaseLost). Commit
// (no owner check) stays for what any router may commit with the version check alone: a review
// or a cancel on a run another router drives. A store with one user (SQLite) keeps this
// trivially: its router owns every run at epoch 1.
//
// Errors of the storage itself: a stored row that does not parse is DATA_LOSS naming the run
// (and the event's seq); a database that is busy or out of reach is UNAVAILABLE (the call may
// be retried).
class RunStore {
 public:
  virtual ~RunStore() = default;

  // Stores a new run (state.version as given, normally 1) with its first events (seq 1..n).
  // The run belongs to the namespace run.spec.namespace ("" is "default"). When run.request_id
  // is non-empty and a run of the same namespace with that request_id exists, stores nothing
  // and returns that run with created=false, also when the two creates race; the same
  // request_id in two namespaces names two runs. A run_id that exists
  // already is ALREADY_EXISTS; an empty run_id, or a created_at / updated_at outside
  // Timestamp's range, is INVALID_ARGUMENT naming the field.
  virtual absl::StatusOr<CreateResult> CreateRun(const rein::v1::Run& run,
                                                 std::vector<rein::v1::RunEvent> events) = 0;

  // NOT_FOUND when there is no such run.
  virtual absl::StatusOr<rein::v1::Run> GetRun(const std::string& run_id) = 0;

  // The run of namespace `namespace_name` ("" is "default") created with `request_id`
  // (non-empty); NOT_FOUND when there is none. Nothing is written.
  virtual absl::StatusOr<rein::v1::Run> FindRunByRequestId(const std::string& namespace_name,
                                                           const std::string& request_id) = 0;

  // Atomically replaces the run's state by `new_state` and appends `events` (their run_id and
  // seq are filled in here) and, when given, `snapshot`, after the checks above. `updated_at`
  // is set from `now`. Returns the events as stored.
  virtual absl::StatusOr<std::vector<rein::v1::RunEvent>> Commit(
      const std::string& run_id, int64_t expected_version, const rein::v1::RunState& new_state,
      std::vector<rein::v1::RunEvent> events, const std::optional<Snapshot>& snapshot,
      absl::Time now) = 0;

  // Events with seq > after_seq, in seq order, at most `limit` (every one when limit <= 0).
  // NOT_FOUND for an unknown run.
  virtual absl::StatusOr<std::vector<rein::v1::RunEvent>> ReadEvents(const std::string& run_id,
                                                                     int64_t after_seq,
                                                                     int limit) = 0;

  // One page of runs matching `filter` (see "Pages" above).
  virtual absl::StatusOr<RunPage> ListRuns(const RunFilter& filter, int page_size,
                                           const std::string& page_token) = 0;

  // The run's snapshots of a version above `after_version`, oldest first, at most `limit` of
  // them (0 = all): a reader pages through a long run one short read at a time, holding
  // nothing of the store between pages. NOT_FOUND for an unknown run.
  virtual absl::StatusOr<std::vector<Snapshot>> ListSnapshotsAfter(const std::string& run_id,
                                                                   int64_t after_version,
                                                                   int limit) = 0;

  // Every snapshot of the run, oldest first. NOT_FOUND for an unknown run.
  absl::StatusOr<std::vector<Snapshot>> ListSnapshots(const std::string& run_id) {
    return ListSnapshotsAfter(run_id, /*after_version=*/0, /*limit=*/0);
  }

  // The namespace's unfinished runs now, and the usage of its runs created at or after `since`
  // (`namespace_name` as RunSpec.namespace: "" is "default").
  virtual absl::StatusOr<NamespaceUsage> GetNamespaceUsage(const std::string& namespace_name,
                                                           absl::Time since) = 0;

  // Ids of every run whose stage is not terminal (FINISHED, FAILED, CANCELLED), oldest first
  // (created_at, then run_id).
  virtual absl::StatusOr<std::vector<std::string>> ListUnfinishedRunIds() = 0;

  // Commit (above) conditional on this router owning the run at `lease_epoch`, in the same
  // transaction: else ABORTED with a message starting "lease lost" and reason::kLeaseLost
  // (IsLeaseLost), nothing written. The version checks are Commit's.
  virtual absl::StatusOr<std::vector<rein::v1::RunEvent>> CommitOwned(
      const std::string& run_id, int64_t lease_epoch, int64_t expected_version,
      const rein::v1::RunState& new_state, std::vector<rein::v1::RunEvent> events,
      const std::optional<Snapshot>& snapshot, absl::Time now) = 0;

  // Group commit: applies each request as Commit / CommitOwned would alone, in order (so two
  // requests on one run see each other: the second's expected_version is the first's new
  // version), and returns one result per request, in the same order. A request that fails its
  // checks writes nothing and leaves the others alone. What succeeds is made durable together
  // (an implementation may use one transaction for the batch), and nothing is returned before
  // it is; when that final step fails, every request of the batch fails with its error and
  // none was written. Events are moved out of the requests into the results. This default
  // commits the requests one by one.
  virtual std::vector<absl::StatusOr<std::vector<rein::v1::RunEvent>>> CommitBatch(
      std::vector<CommitRequest>& requests) {
    std::vector<absl::StatusOr<std::vector<rein::v1::RunEvent>>> results;
    results.reserve(requests.size());
    for (CommitRequest& r : requests) {
      if (r.lease_epoch.has_value()) {
        results.push_back(CommitOwned(r.run_id, *r.lease_epoch, r.expected_version, *r.new_state,
                                      std::move(r.events), r.snapshot, r.now));
      } else {
        results.push_back(Commit(r.run_id, r.expected_version, *r.new_state, std::move(r.events),
                                 r.snapshot, r.now));
      }
    }
    return results;
  }
};

}  // namespace rein

#endif  // REIN_ROUTER_SERVICE_STORE_RUN_STORE_H_
