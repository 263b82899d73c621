// Test helper: an example under examples/ end to end: the real services on the example's
// planner script and workspaces, and reinctl as a person runs it.
#ifndef REIN_TESTS_EXAMPLE_CLUSTER_H_
#define REIN_TESTS_EXAMPLE_CLUSTER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "tests/cluster.h"

namespace rein::testing {

// A started cluster in `dir` on examples/<example>/planner_script.json, serving a real copy of
// examples/<example>/workspaces in <dir>/workspaces (runfiles are symlinks, which the executor
// never follows). An error names what failed (with the services' logs when they did not start).
absl::StatusOr<std::unique_ptr<Cluster>> StartExampleCluster(const std::string& example,
                                                             const std::string& dir);

// Runs reinctl --router=<the cluster's router> `args`, its output in `out_path`; returns its
// exit status (-1 when it ran past `timeout`, then killed).
int RunReinctl(const Cluster& cluster, const std::vector<std::string>& args,
               const std::string& out_path, absl::Duration timeout);

}  // namespace rein::testing

#endif  // REIN_TESTS_EXAMPLE_CLUSTER_H_
