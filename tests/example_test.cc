// The secrets-audit example end to end: real binaries, the example's script and workspace, and
// reinctl as a person runs it (start --watch), checked against the planted keys.
#include <stdlib.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "tests/example_cluster.h"

namespace rein::testing {
namespace {

TEST(SecretsAuditExampleTest, ReinctlReportsEachRealFindingAndNoFixture) {
  const std::string dir = getenv("TEST_TMPDIR");
  absl::StatusOr<std::unique_ptr<Cluster>> cluster = StartExampleCluster("secrets_audit", dir);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  const std::string out = dir + "/reinctl.out";
  EXPECT_EQ(
      RunReinctl(**cluster,
                 {"start", "--goal=Audit the repository for hard-coded API keys and tokens.",
                  "--workspace=sample-repo", "--tools=list_files,search_text,read_file,file_info",
                  "--max_iterations=20", "--deadline=2m", "--watch"},
                 out, absl::Seconds(60)),
      0)
      << ReadFile(out) << (*cluster)->Logs();
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
