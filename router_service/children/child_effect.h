// What a parent in WAITING asks of its driver (ChildrenEffect) and what the driver answers
// (ChildrenObserved): the child runs of the current parallel group.
#ifndef REIN_ROUTER_SERVICE_CHILDREN_CHILD_EFFECT_H_
#define REIN_ROUTER_SERVICE_CHILDREN_CHILD_EFFECT_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "rein/v1/types.pb.h"

namespace rein {

// The driver's work for a WAITING parent: start each child of `start` (idempotent on its
// request_id), cancel every child of the group when `cancel` is set, then read each child of
// `group` and answer with ChildrenObserved.
struct ChildrenEffect {
  struct Start {
    rein::v1::ChildRun member;  // request_id, subtask_id, group, limits
    rein::v1::RunSpec spec;     // the child's spec (normalized, with parent set)
    // The child may not end after this (the parent's deadline).
    absl::Time deadline = absl::InfiniteFuture();
  };
  std::vector<Start> start;
  std::vector<rein::v1::ChildRun> group;  // the current group's members as the parent knows them
  bool cancel = false;                    // the parent was cancelled or passed its deadline
  std::string cancel_reason;
};

// The driver's answer: for each member of the group (same order, matched by request_id), its
// run_id (or start_error) and, read from the store, its stage and, once ended, its outcome,
// summary, iterations and retries (ObserveChild). A non-OK status: nothing could be read; the
// parent asks again later.
struct ChildrenObserved {
  absl::Status status;
  std::vector<rein::v1::ChildRun> children;
};

}  // namespace rein

#endif  // REIN_ROUTER_SERVICE_CHILDREN_CHILD_EFFECT_H_
