// RunStore: the router's durable record of runs, their event logs and state snapshots.
#ifndef REIN_ROUTER_SERVICE_STORE_RUN_STORE_H_
#define REIN_ROUTER_SERVICE_STORE_RUN_STORE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"

#include "absl/status/status.h"
#include "absl/status/statusor.h"
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
  rein::v1::Stage stage = rein::v1::STAGE_UNSPECIFIED;                           // any
  rein::v1::TerminationReason outcome = rein::v1::TERMINATION_REASON_UNSPECIFIED;  // any
};

struct RunPage {
  std::vector<rein::v1::Run> runs;  // newest first (created_at, then run_id)
  std::string next_page_token;      // empty on the last page
};

struct CreateResult {
  rein::v1::Run run;   // the stored run: the new one, or the earlier run with the same request_id
  bool created = false;
};

// Durable store of runs. Every method is one transaction; implementations are thread-safe.
// Event `seq` numbers are assigned by the store: 1, 2, 3 ... per run with no gaps.
class RunStore {
 public:
  virtual ~RunStore() = default;

  // Stores a new run (state.version as given, normally 1) with its first events. When
  // run.request_id is non-empty and a run with that request_id exists, stores nothing and
  // returns that run with created=false. A run_id that exists already is ALREADY_EXISTS.
  virtual absl::StatusOr<CreateResult> CreateRun(const rein::v1::Run& run,
                                                 std::vector<rein::v1::RunEvent> events) = 0;

  // NOT_FOUND when there is no such run.
  virtual absl::StatusOr<rein::v1::Run> GetRun(const std::string& run_id) = 0;

  // Atomically replaces the run's state by `new_state` and appends `events` (their run_id and
  // seq are filled in here) and, when given, `snapshot`. Succeeds only if the stored
  // state.version equals `expected_version` (else FAILED_PRECONDITION, nothing written);
  // NOT_FOUND for an unknown run. `updated_at` is set from `now`. Returns the events as stored.
  virtual absl::StatusOr<std::vector<rein::v1::RunEvent>> Commit(
      const std::string& run_id, int64_t expected_version, const rein::v1::RunState& new_state,
      std::vector<rein::v1::RunEvent> events, const std::optional<Snapshot>& snapshot,
      absl::Time now) = 0;

  // Events with seq > after_seq, in seq order, at most `limit`. NOT_FOUND for an unknown run.
  virtual absl::StatusOr<std::vector<rein::v1::RunEvent>> ReadEvents(const std::string& run_id,
                                                                     int64_t after_seq,
                                                                     int limit) = 0;

  // One page of runs matching `filter`. A page_token not made by this store is
  // INVALID_ARGUMENT naming page_token.
  virtual absl::StatusOr<RunPage> ListRuns(const RunFilter& filter, int page_size,
                                           const std::string& page_token) = 0;

  // Every snapshot of the run, oldest first. NOT_FOUND for an unknown run.
  virtual absl::StatusOr<std::vector<Snapshot>> ListSnapshots(const std::string& run_id) = 0;

  // Ids of every run whose stage is not terminal (FINISHED, FAILED, CANCELLED).
  virtual absl::StatusOr<std::vector<std::string>> ListUnfinishedRunIds() = 0;
};

}  // namespace rein

#endif  // REIN_ROUTER_SERVICE_STORE_RUN_STORE_H_
