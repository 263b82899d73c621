// ChildFork: where a parent may be forked. A fork at a point inside a group (the source was
// WAITING) would share the source's children, so it is refused, naming the points that work.
#ifndef REIN_ROUTER_SERVICE_CHILDREN_CHILD_FORK_H_
#define REIN_ROUTER_SERVICE_CHILDREN_CHILD_FORK_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "rein/v1/types.pb.h"

namespace rein {

// OK unless `point` (the state at the fork point of `source_run_id`, whose log is `events`) is
// WAITING: then INVALID_ARGUMENT naming the group and the seqs to fork at instead: before the
// group's child_group event (new children) or from its children_joined event on (the
// children's recorded outcomes).
absl::Status CheckForkOutsideGroup(const std::string& source_run_id,
                                   const rein::v1::RunState& point,
                                   const std::vector<rein::v1::RunEvent>& events);

}  // namespace rein

#endif  // REIN_ROUTER_SERVICE_CHILDREN_CHILD_FORK_H_
