// ChildTree: a parent's child runs as a tree for `reinctl show`: each child under its group
// with its stage and, when the child itself was read, its progress and its own children.
#ifndef REIN_CLI_CHILD_TREE_H_
#define REIN_CLI_CHILD_TREE_H_

#include <map>
#include <string>

#include "rein/v1/types.pb.h"

namespace rein::cli {

// The most levels of descendants `reinctl show` reads and prints (Limits.max_depth's bound).
inline constexpr int kMaxTreeDepth = 4;

// "children:\n" then one line per child of `run`, "  group G  <subtask> -> <run id>  STAGE
// (REASON)", followed, when `runs` holds the child (read by its id), by
// "  iteration I/M[, on <subtask>]" and the child's own children indented below it; "" when
// `run` has no children.
std::string ChildTree(const rein::v1::Run& run, const std::map<std::string, rein::v1::Run>& runs);

}  // namespace rein::cli

#endif  // REIN_CLI_CHILD_TREE_H_
