// Test helper: the cluster of one end-to-end test, in a folder named after the test, with the
// workspace "repo" the test's runs work in.
#include "tests/repo_cluster.h"

#include <stdlib.h>
#include <sys/stat.h>

#include <fstream>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace rein::testing {

std::unique_ptr<Cluster> RepoClusterAt(
    const std::string& dir, const std::string& script_json,
    const std::vector<std::pair<std::string, std::string>>& files) {
  mkdir(dir.c_str(), 0755);
  Cluster::Options options;
  options.dir = dir;
  options.script_json = script_json;
  const std::string ws = dir + "/workspaces/repo";
  mkdir((dir + "/workspaces").c_str(), 0755);
  mkdir(ws.c_str(), 0755);
  for (const auto& [name, contents] : files) std::ofstream(ws + "/" + name) << contents;
  return std::make_unique<Cluster>(options);
}

std::unique_ptr<Cluster> RepoCluster(
    const std::string& prefix, const std::string& script_json,
    const std::vector<std::pair<std::string, std::string>>& files) {
  std::string base = getenv("TEST_TMPDIR") ? getenv("TEST_TMPDIR") : "/tmp";
  return RepoClusterAt(
      absl::StrCat(base, "/", prefix, "-",
                   ::testing::UnitTest::GetInstance()->current_test_info()->name()),
      script_json, files);
}

rein::v1::RunSpec RepoSpec(const std::string& goal, int deadline_seconds) {
  rein::v1::RunSpec spec;
  spec.set_goal(goal);
  spec.set_workspace("repo");
  spec.mutable_limits()->mutable_deadline()->set_seconds(deadline_seconds);
  return spec;
}

}  // namespace rein::testing
