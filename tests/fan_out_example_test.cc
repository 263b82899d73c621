// The fan-out example end to end: real binaries, the example's script, spec and workspace, and
// reinctl as a person runs it (start --spec --watch): three child runs audit one service each in
// parallel, the parent joins them and writes one report.
#include <stdlib.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/example_cluster.h"

namespace rein::testing {
namespace {

TEST(FanOutExampleTest, ThreeChildrenAuditTheServicesAndTheParentReports) {
  const std::string dir = getenv("TEST_TMPDIR");
  absl::StatusOr<std::unique_ptr<Cluster>> started = StartExampleCluster("fan_out_audit", dir);
  ASSERT_TRUE(started.ok()) << started.status();
  Cluster& cluster = **started;
  const std::string out = dir + "/reinctl.out";
  EXPECT_EQ(
      RunReinctl(cluster,
                 {"start", absl::StrCat("--spec=", RunfilePath("examples/fan_out_audit/spec.json")),
                  "--watch"},
                 out, absl::Seconds(90)),
      0)
      << ReadFile(out) << cluster.Logs();
  const std::string report = ReadFile(out);
  EXPECT_NE(report.find("GOAL_ACHIEVED"), std::string::npos) << report;

  // The parent: three children, each finished, and the report after them.
  grpc::ClientContext context;
  rein::v1::ListRunsRequest all;
  all.set_page_size(10);
  rein::v1::ListRunsResponse runs;
  ASSERT_TRUE(cluster.router()->ListRuns(&context, all, &runs).ok());
  ASSERT_EQ(runs.runs_size(), 4) << report;
  std::string parent_id;
  for (const auto& run : runs.runs()) {
    if (!run.spec().has_parent()) parent_id = run.run_id();
  }
  absl::StatusOr<rein::v1::Run> parent = cluster.GetRun(parent_id);
  ASSERT_TRUE(parent.ok()) << parent.status();
  EXPECT_EQ(parent->state().stage(), rein::v1::FINISHED);
  ASSERT_EQ(parent->children_size(), 3);
  for (const auto& child : parent->children()) {
    EXPECT_EQ(child.stage(), rein::v1::FINISHED) << child.subtask_id();
  }
  // Each delegated subtask's result is its child's real scan; the report lists all findings.
  std::string billing, auth, search, final_report;
  for (const auto& task : parent->state().completed_subtasks()) {
    EXPECT_EQ(task.status(), rein::v1::SubTask::COMPLETED) << task.id() << ": " << task.summary();
    if (task.id() == "billing") billing = task.summary();
    if (task.id() == "auth") auth = task.summary();
    if (task.id() == "search") search = task.summary();
    if (task.id() == "report") final_report = task.summary();
  }
  EXPECT_NE(billing.find("billing/invoice.py:2:"), std::string::npos) << billing;
  EXPECT_NE(billing.find("billing/settings.py:2:"), std::string::npos) << billing;
  EXPECT_EQ(billing.find("auth/"), std::string::npos) << billing;
  EXPECT_NE(auth.find("auth/login.go:3:"), std::string::npos) << auth;
  EXPECT_EQ(search.find("search/index.js"), std::string::npos) << search;
  EXPECT_NE(search.find("child run"), std::string::npos) << search;
  // reinctl show prints the children as a tree, each read for its progress.
  const std::string shown = dir + "/show.out";
  EXPECT_EQ(RunReinctl(cluster, {"show", parent_id}, shown, absl::Seconds(30)), 0)
      << ReadFile(shown);
  for (const auto& child : parent->children()) {
    EXPECT_NE(
        ReadFile(shown).find(absl::StrCat("  group 1  ", child.subtask_id(), " -> ", child.run_id(),
                                          "  FINISHED (GOAL_ACHIEVED)  "
                                          "iteration ")),
        std::string::npos)
        << ReadFile(shown);
  }
  for (const char* hit : {"billing/invoice.py:2:", "billing/settings.py:2:", "auth/login.go:3:"}) {
    EXPECT_NE(final_report.find(hit), std::string::npos) << final_report;
  }
}

}  // namespace
}  // namespace rein::testing
