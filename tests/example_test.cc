// The secrets-audit example end to end: real binaries, the example's script and workspace, and
// reinctl as a person runs it (start --watch), checked against the planted keys.
#include <stdlib.h>

#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/cluster.h"

namespace rein::testing {
namespace {

TEST(SecretsAuditExampleTest, ReinctlReportsEachRealFindingAndNoFixture) {
  Cluster::Options options;
  options.dir = getenv("TEST_TMPDIR");
  options.script_json = ReadFile(RunfilePath("examples/secrets_audit/planner_script.json"));
  // Runfiles are symlinks, which the executor never follows: serve a real copy.
  options.workspace_root = options.dir + "/workspaces";
  ASSERT_EQ(system(absl::StrCat("rm -rf '", options.workspace_root, "' && cp -rL '",
                                RunfilePath("examples/secrets_audit/workspaces"), "' '",
                                options.workspace_root, "'")
                       .c_str()),
            0);
  ASSERT_FALSE(options.script_json.empty());
  Cluster cluster(options);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  std::string out = options.dir + "/reinctl.out";
  Process reinctl("reinctl",
                  {RunfilePath("cli/reinctl"), absl::StrCat("--router=", cluster.router_target()),
                   "start", "--goal=Audit the repository for hard-coded API keys and tokens.",
                   "--workspace=sample-repo", "--tools=list_files,search_text,read_file,file_info",
                   "--max_iterations=20", "--deadline=2m", "--watch"},
                  out);
  ASSERT_TRUE(reinctl.Start());
  EXPECT_EQ(reinctl.Wait(absl::Seconds(60)), 0) << ReadFile(out) << cluster.Logs();
  std::string report = ReadFile(out);
  // The final report's block for the filter subtask: its summary, one finding per line.
  size_t at = report.find("[COMPLETED] filter: Real findings");
  ASSERT_NE(at, std::string::npos) << report;
  size_t end = report.find("\n  [", at + 1);
  std::string findings = report.substr(at, end == std::string::npos ? std::string::npos : end - at);
  EXPECT_NE(findings.find("src/config.py:4:"), std::string::npos) << findings;
  EXPECT_NE(findings.find("src/payments/stripe_client.js:4:"), std::string::npos) << findings;
  EXPECT_NE(findings.find("deploy/settings.yaml:4:"), std::string::npos) << findings;
  EXPECT_EQ(findings.find("node_modules"), std::string::npos) << findings;
  EXPECT_EQ(findings.find("tests/test_config.py"), std::string::npos) << findings;
  EXPECT_EQ(findings.find("stripe_client.test.js"), std::string::npos) << findings;
  EXPECT_NE(report.find("GOAL_ACHIEVED"), std::string::npos);
  EXPECT_NE(report.find("scripted"), std::string::npos);
}

}  // namespace
}  // namespace rein::testing
