// ChildRunner: the driver's side of child runs: starts a group's children (idempotently),
// cancels them, reads their outcomes, and lists a parent's children.
#ifndef REIN_ROUTER_SERVICE_CHILDREN_CHILD_RUNNER_H_
#define REIN_ROUTER_SERVICE_CHILDREN_CHILD_RUNNER_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/clock.h"
#include "rein/v1/types.pb.h"
#include "router_service/children/child_effect.h"
#include "router_service/stage_router.h"
#include "router_service/store/run_store.h"

namespace rein {

// Does a WAITING parent's kChildren effect against the store. A child is created with
// StageRouter::NewRun and RunStore::CreateRun under its ChildRun.request_id, so starting it
// again (after a crash before the parent recorded it, or on another router after a takeover)
// returns the first child: no child is started twice. A run found under the key that is not
// this parent's child (its spec.parent names another run) is never adopted: that child fails
// to start, naming the run. Thread-safe (the store is).
class ChildRunner {
 public:
  struct Hooks {
    std::function<std::string()> new_run_id;
    // A child this router created: drive it (the engine tracks and advances it).
    std::function<void(const rein::v1::Run&)> drive;
    // Cancel a child (on whichever router drives it), without waiting for its end.
    std::function<void(const std::string& run_id, const std::string& reason)> cancel;
    // Admits a new child in its namespace (RunEngineOptions::admit_child); unset: no quotas.
    std::function<absl::Status(const std::string& namespace_name,
                               const std::function<bool()>& create)>
        admit;
  };
  ChildRunner(RunStore* store, const StageRouter* router, Clock* clock, std::string router_id,
              Hooks hooks)
      : store_(store),
        router_(router),
        clock_(clock),
        router_id_(std::move(router_id)),
        hooks_(std::move(hooks)) {}

  // Starts `effect.start`, cancels the group's children when `effect.cancel`, then reads each
  // member. A child that cannot be created gets start_error; a store that cannot be read makes
  // the answer's status non-OK.
  ChildrenObserved Observe(const ChildrenEffect& effect);

  // Run.children of `parent`: RunState.children with each started child's current stage.
  void FillChildren(rein::v1::Run* parent);

  // ListRuns with parent_run_id: the parent's started children, oldest first, one page.
  // NOT_FOUND for an unknown parent, and, when `namespace_name` is not empty, with the very
  // same answer after the same one store read for a parent of another namespace.
  absl::StatusOr<RunPage> ListChildren(const std::string& parent_run_id,
                                       const std::string& namespace_name);

 private:
  // Creates `child` under its request_id, in its parent's namespace, or returns the run created
  // under that key before (also one in `default` from before children took their parent's
  // namespace).
  absl::StatusOr<CreateResult> CreateChild(const rein::v1::Run& child,
                                           std::vector<rein::v1::RunEvent> events);

  RunStore* store_;
  const StageRouter* router_;
  Clock* clock_;
  std::string router_id_;
  Hooks hooks_;
};

}  // namespace rein

#endif  // REIN_ROUTER_SERVICE_CHILDREN_CHILD_RUNNER_H_
