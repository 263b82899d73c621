// Test helper: an example under examples/ end to end (see example_cluster.h).
#include "tests/example_cluster.h"

#include <stdlib.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace rein::testing {

absl::StatusOr<std::unique_ptr<Cluster>> StartExampleCluster(const std::string& example,
                                                             const std::string& dir) {
  const std::string root = absl::StrCat("examples/", example);
  Cluster::Options options;
  options.dir = dir;
  options.script_json = ReadFile(RunfilePath(root + "/planner_script.json"));
  if (options.script_json.empty()) {
    return absl::NotFoundError(absl::StrCat(root, "/planner_script.json is missing or empty"));
  }
  options.workspace_root = dir + "/workspaces";
  const std::string copy =
      absl::StrCat("rm -rf '", options.workspace_root, "' && cp -rL '",
                   RunfilePath(root + "/workspaces"), "' '", options.workspace_root, "'");
  if (system(copy.c_str()) != 0) {
    return absl::InternalError(absl::StrCat("copying the workspaces failed: ", copy));
  }
  auto cluster = std::make_unique<Cluster>(options);
  if (!cluster->Start()) {
    return absl::UnavailableError(absl::StrCat("the services did not start\n", cluster->Logs()));
  }
  return cluster;
}

int RunReinctl(const Cluster& cluster, const std::vector<std::string>& args,
               const std::string& out_path, absl::Duration timeout) {
  std::vector<std::string> argv = {RunfilePath("cli/reinctl"),
                                   absl::StrCat("--router=", cluster.router_target())};
  argv.insert(argv.end(), args.begin(), args.end());
  Process reinctl("reinctl", argv, out_path);
  if (!reinctl.Start()) return -1;
  return reinctl.Wait(timeout);
}

}  // namespace rein::testing
