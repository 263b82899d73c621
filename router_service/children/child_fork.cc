// ChildFork: where a parent may be forked.
#include "router_service/children/child_fork.h"

#include "absl/strings/str_cat.h"

namespace rein {

absl::Status CheckForkOutsideGroup(const std::string& source_run_id,
                                   const rein::v1::RunState& point,
                                   const std::vector<rein::v1::RunEvent>& events) {
  if (point.stage() != rein::v1::WAITING) return absl::OkStatus();
  const int32_t group = point.child_groups();
  int64_t opened = 0, joined = 0;
  for (const rein::v1::RunEvent& e : events) {
    if (e.has_child_group() && e.child_group().group() == group && opened == 0) opened = e.seq();
    if (e.has_children_joined() && e.children_joined().group() == group && joined == 0) {
      joined = e.seq();
    }
  }
  std::string after =
      joined > 0 ? absl::StrCat(", or at seq ", joined, " or later to keep their joined outcomes")
                 : ", or after the group joins to keep their outcomes";
  return absl::InvalidArgumentError(absl::StrCat(
      "at: run ", source_run_id, " was WAITING for its child group ", group,
      " at that point, and a fork there would share the source's running children (a cancel of "
      "one would end the other's); fork at seq ",
      opened > 1 ? absl::StrCat(opened - 1, " or earlier") : "before the group",
      " to start new children", after, " (docs/CHILD_RUNS.md)"));
}

}  // namespace rein
