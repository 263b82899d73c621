// Test helper: the cluster of one end-to-end test, in a folder named after the test, with the
// workspace "repo" the test's runs work in.
#ifndef REIN_TESTS_REPO_CLUSTER_H_
#define REIN_TESTS_REPO_CLUSTER_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "rein/v1/types.pb.h"
#include "tests/cluster.h"

namespace rein::testing {

// The README.md of the workspace "repo" that ThreeStepScript and the child scripts expect.
inline constexpr char kRepoReadme[] = "# repo\nTODO: write docs\n";

// A cluster (not started) in `dir` (created), the scripted planner on `script_json`, and under
// its workspaces/ the workspace "repo" holding `files` (name, contents).
std::unique_ptr<Cluster> RepoClusterAt(
    const std::string& dir, const std::string& script_json,
    const std::vector<std::pair<std::string, std::string>>& files);

// RepoClusterAt in <TEST_TMPDIR>/<prefix>-<the running test's name>.
std::unique_ptr<Cluster> RepoCluster(const std::string& prefix, const std::string& script_json,
                                     const std::vector<std::pair<std::string, std::string>>& files);

// A spec with `goal` in the workspace "repo", ending after `deadline_seconds`.
rein::v1::RunSpec RepoSpec(const std::string& goal, int deadline_seconds);

}  // namespace rein::testing

#endif  // REIN_TESTS_REPO_CLUSTER_H_
