// ChildDriver: the engine's side of child runs: a WAITING parent's children observed on a
// worker, a parent woken when a child ends, and the children GetRun and ListRuns show.
#ifndef REIN_ROUTER_SERVICE_CHILDREN_CHILD_DRIVER_H_
#define REIN_ROUTER_SERVICE_CHILDREN_CHILD_DRIVER_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/clock.h"
#include "rein/v1/router.pb.h"
#include "router_service/children/child_effect.h"
#include "router_service/children/child_runner.h"
#include "router_service/run_registry.h"
#include "router_service/stage_router.h"
#include "router_service/store/run_store.h"
#include "router_service/work_pool.h"

namespace rein {

// Drives the children of the parents a RunEngine holds (RunRegistry), on its WorkPool; the
// store work is ChildRunner's. Thread-safe.
class ChildDriver {
 public:
  struct Hooks {
    ChildRunner::Hooks runner;  // starting, driving and cancelling a child
    // A parent's kChildren call is answered: apply `reply` to `parent` (nullptr when the
    // engine no longer holds it) and count the call done.
    std::function<void(const std::shared_ptr<RunEntry>& parent, const StageReply& reply)> done;
    // Does what StageRouter::Next says for the run (RunEngine::Advance).
    std::function<void(const std::shared_ptr<RunEntry>&)> advance;
  };
  ChildDriver(RunStore* store, const StageRouter* router, Clock* clock, std::string router_id,
              RunRegistry* runs, WorkPool* pool, Hooks hooks);

  // A WAITING parent's kChildren effect, done on a worker; its answer goes to Hooks::done. The
  // caller has marked the call in flight.
  void Dispatch(const std::shared_ptr<RunEntry>& entry, const ChildrenEffect& effect);
  // After a commit of `run`: a child that has ended wakes its parent, on a worker.
  void Committed(const rein::v1::Run& run);
  // A child of `parent_id` ended: the parent reads its children now rather than at its poll
  // (RunEngineOptions.child_poll). Nothing when another router drives the parent.
  void WakeParent(const std::string& parent_id);

  // Run.children of `parent` (ChildRunner::FillChildren), when it has any.
  void FillChildren(rein::v1::Run* parent);
  // ListRuns with parent_run_id (ChildRunner::ListChildren).
  absl::StatusOr<RunPage> ListChildren(const std::string& parent_run_id,
                                       const std::string& namespace_name);

 private:
  ChildRunner runner_;
  RunRegistry* runs_;
  WorkPool* pool_;
  Hooks hooks_;
};

}  // namespace rein

#endif  // REIN_ROUTER_SERVICE_CHILDREN_CHILD_DRIVER_H_
