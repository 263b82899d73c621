// End-to-end tests of child runs: a parent fans out to three children that run in parallel and
// joins; a cancel reaches the children; children spending the parent's budget end the tree;
// a router SIGKILLed mid-group recovers with no duplicate or orphan child.
#include <signal.h>
#include <stdlib.h>

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/proto_time.h"
#include "gtest/gtest.h"
#include "tests/child_scripts.h"
#include "tests/cluster.h"
#include "tests/repo_cluster.h"

namespace rein::testing {
namespace {

using RunMsg = rein::v1::Run;
using rein::v1::RunEvent;
using rein::v1::RunSpec;

class ChildrenEndToEndTest : public ::testing::Test {
 protected:
  void Boot(const std::string& script) {
    cluster_ = RepoCluster("children", script, {{"README.md", "# repo\n"}});
    ASSERT_TRUE(cluster_->Start()) << cluster_->Logs();
  }

  RunSpec Spec() {
    RunSpec spec = RepoSpec("audit three services, then write one report", 90);
    spec.mutable_limits()->set_max_children(3);
    return spec;
  }

  std::vector<RunEvent> WatchAll(const std::string& run_id) {
    std::vector<RunEvent> events;
    grpc::Status status = cluster_->Watch(run_id, 0, absl::Seconds(90), &events);
    EXPECT_TRUE(status.ok()) << status.error_message();
    int finished = 0;
    for (const auto& e : events) finished += e.has_finished();
    EXPECT_EQ(finished, 1) << run_id << "\n" << cluster_->Logs();
    return events;
  }

  // Waits until the parent has started all three children (their run ids recorded).
  RunMsg WaitForChildren(const std::string& parent_id) {
    for (int i = 0; i < 1000; ++i) {
      absl::StatusOr<RunMsg> run = cluster_->GetRun(parent_id);
      if (run.ok() && run->children_size() == 3 &&
          std::all_of(run->children().begin(), run->children().end(),
                      [](const rein::v1::ChildRun& c) { return !c.run_id().empty(); })) {
        return *run;
      }
      absl::SleepFor(absl::Milliseconds(20));
    }
    ADD_FAILURE() << "the children never started\n" << cluster_->Logs();
    return RunMsg();
  }

  std::vector<RunMsg> ListRuns(const std::string& parent) {
    grpc::ClientContext context;
    rein::v1::ListRunsRequest request;
    request.set_parent_run_id(parent);
    request.set_page_size(100);
    rein::v1::ListRunsResponse response;
    grpc::Status status = cluster_->router()->ListRuns(&context, request, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return {response.runs().begin(), response.runs().end()};
  }

  std::unique_ptr<Cluster> cluster_;
};

TEST_F(ChildrenEndToEndTest, ThreeChildrenRunInParallelAndJoin) {
  Boot(FanOutScript(1000));
  absl::StatusOr<RunMsg> run = cluster_->StartRun(Spec());
  ASSERT_TRUE(run.ok()) << run.status();
  std::vector<RunEvent> events = WatchAll(run->run_id());
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().finished().outcome().reason(), rein::v1::GOAL_ACHIEVED);
  int joins = 0;
  for (const auto& e : events) joins += e.has_children_joined();
  EXPECT_EQ(joins, 1);

  absl::StatusOr<RunMsg> done = cluster_->GetRun(run->run_id());
  ASSERT_TRUE(done.ok());
  ASSERT_EQ(done->children_size(), 3);
  std::vector<RunMsg> children = ListRuns(run->run_id());
  ASSERT_EQ(children.size(), 3u);
  // Each child finished, knows its parent, and they ran at the same time: every child started
  // before any ended.
  absl::Time latest_start = absl::InfinitePast(), earliest_end = absl::InfiniteFuture();
  for (const RunMsg& child : children) {
    EXPECT_EQ(child.spec().parent().run_id(), run->run_id());
    EXPECT_EQ(child.state().stage(), rein::v1::FINISHED) << child.state().outcome().message();
    std::vector<RunEvent> log = WatchAll(child.run_id());
    // A child's life: from its first event to its end (its decision alone takes 1 s).
    ASSERT_FALSE(log.empty());
    latest_start = std::max(latest_start, FromProtoTime(log.front().time()));
    earliest_end = std::min(earliest_end, FromProtoTime(log.back().time()));
  }
  EXPECT_LT(latest_start, earliest_end) << "the children's iterations did not interleave";
  for (const auto& task : done->state().completed_subtasks()) {
    EXPECT_EQ(task.status(), rein::v1::SubTask::COMPLETED) << task.id() << " " << task.summary();
  }
  // The children's usage is in the parent's.
  int64_t child_tokens = 0;
  for (const RunMsg& child : children) child_tokens += child.state().tokens_used();
  EXPECT_GT(done->state().tokens_used(), child_tokens);
}

TEST_F(ChildrenEndToEndTest, ChildPausedBeforeAWriteIsApprovedWhileTheParentWaits) {
  Boot(FanOutScript(300, "write_file"));
  RunSpec spec = Spec();
  spec.add_tools("read_file");
  spec.add_tools("list_files");
  spec.add_tools("write_file");
  spec.add_pause_points(rein::v1::BEFORE_MUTATING_TOOL);
  absl::StatusOr<RunMsg> run = cluster_->StartRun(spec);
  ASSERT_TRUE(run.ok()) << run.status();
  RunMsg waiting = WaitForChildren(run->run_id());
  // Child b pauses before its write; its siblings go on to their ends.
  std::string paused_id;
  for (const auto& c : waiting.children()) {
    if (c.subtask_id() == "svc-b") paused_id = c.run_id();
  }
  absl::StatusOr<RunMsg> paused =
      cluster_->WaitForStage(paused_id, rein::v1::PAUSED, absl::Seconds(30));
  ASSERT_TRUE(paused.ok());
  ASSERT_EQ(paused->state().stage(), rein::v1::PAUSED) << paused->state().outcome().message();
  for (const auto& c : waiting.children()) {
    if (c.run_id() == paused_id) continue;
    absl::StatusOr<RunMsg> sibling =
        cluster_->WaitForStage(c.run_id(), rein::v1::FINISHED, absl::Seconds(30));
    ASSERT_TRUE(sibling.ok());
    EXPECT_EQ(sibling->state().stage(), rein::v1::FINISHED);
  }
  absl::StatusOr<RunMsg> parent = cluster_->GetRun(run->run_id());
  ASSERT_TRUE(parent.ok());
  EXPECT_EQ(parent->state().stage(), rein::v1::WAITING);
  std::vector<RunMsg> listed = ListRuns(run->run_id());
  EXPECT_EQ(listed.size(), 3u);
  ASSERT_TRUE(cluster_->Approve(*paused).ok());
  std::vector<RunEvent> events = WatchAll(run->run_id());
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().finished().outcome().reason(), rein::v1::GOAL_ACHIEVED);
  EXPECT_EQ(ReadFile(cluster_->options().dir + "/workspaces/repo/b.txt"), "b");
}

TEST_F(ChildrenEndToEndTest, CancellingTheParentCancelsEveryChild) {
  Boot(FanOutScript(30000));
  absl::StatusOr<RunMsg> run = cluster_->StartRun(Spec());
  ASSERT_TRUE(run.ok()) << run.status();
  RunMsg waiting = WaitForChildren(run->run_id());
  ASSERT_EQ(waiting.state().stage(), rein::v1::WAITING);
  grpc::ClientContext context;
  rein::v1::CancelRunRequest request;
  request.set_run_id(run->run_id());
  RunMsg cancelled;
  ASSERT_TRUE(cluster_->router()->CancelRun(&context, request, &cancelled).ok());
  EXPECT_EQ(cancelled.state().stage(), rein::v1::CANCELLED) << cluster_->Logs();
  EXPECT_EQ(cancelled.state().outcome().reason(), rein::v1::CANCELLED_BY_USER);
  for (const RunMsg& child : ListRuns(run->run_id())) {
    EXPECT_EQ(child.state().stage(), rein::v1::CANCELLED) << child.run_id();
  }
}

TEST_F(ChildrenEndToEndTest, ChildrenSpendingTheParentsIterationsEndTheTree) {
  Boot(FanOutScript(10));
  RunSpec spec = Spec();
  // PLANNING and DECIDING leave 6 iterations: 2 per child, spent by its plan and its decision;
  // joined, the parent has none left for the report.
  spec.mutable_limits()->set_max_iterations(8);
  absl::StatusOr<RunMsg> run = cluster_->StartRun(spec);
  ASSERT_TRUE(run.ok()) << run.status();
  std::vector<RunEvent> events = WatchAll(run->run_id());
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().finished().outcome().reason(), rein::v1::MAX_ITERATIONS);
  absl::StatusOr<RunMsg> done = cluster_->GetRun(run->run_id());
  ASSERT_TRUE(done.ok());
  EXPECT_LE(done->state().iteration(), 8);
  int tree_iterations = 0;
  for (const RunMsg& child : ListRuns(run->run_id())) {
    EXPECT_EQ(child.spec().limits().max_iterations(), 2);
    EXPECT_TRUE(child.state().stage() == rein::v1::FAILED ||
                child.state().stage() == rein::v1::FINISHED);
    tree_iterations += child.state().iteration();
  }
  EXPECT_LE(tree_iterations + 2, 8);
}

TEST_F(ChildrenEndToEndTest, SharesLeaveTheParentItsPartAndTheTreeEndsWithinItsLimits) {
  Boot(FanOutScript(10));
  RunSpec spec = Spec();
  // PLANNING and DECIDING leave 32 iterations: the group gets half, 2:1:1.
  spec.mutable_limits()->set_max_iterations(34);
  spec.mutable_child_share()->set_group_percent(50);
  (*spec.mutable_child_share()->mutable_weights())["svc-a"] = 2;
  absl::StatusOr<RunMsg> run = cluster_->StartRun(spec);
  ASSERT_TRUE(run.ok()) << run.status();
  std::vector<RunEvent> events = WatchAll(run->run_id());
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().finished().outcome().reason(), rein::v1::GOAL_ACHIEVED);
  absl::StatusOr<RunMsg> done = cluster_->GetRun(run->run_id());
  ASSERT_TRUE(done.ok());
  EXPECT_LE(done->state().iteration(), 34);
  int tree_iterations = 0, shares = 0;
  for (const RunMsg& child : ListRuns(run->run_id())) {
    const int expected = child.spec().parent().subtask_id() == "svc-a" ? 8 : 4;
    EXPECT_EQ(child.spec().limits().max_iterations(), expected)
        << child.spec().parent().subtask_id();
    EXPECT_EQ(child.state().stage(), rein::v1::FINISHED) << child.state().outcome().message();
    EXPECT_LE(child.state().iteration(), expected);
    tree_iterations += child.state().iteration();
    shares += child.spec().limits().max_iterations();
  }
  EXPECT_EQ(shares, 16);
  // The parent's own iterations and its children's, joined, stay within its limit.
  EXPECT_LE(tree_iterations, done->state().iteration());
}

// A bad share is refused at the start, naming the field.
TEST_F(ChildrenEndToEndTest, BadShareIsRefusedNamingTheField) {
  Boot(FanOutScript(10));
  RunSpec spec = Spec();
  spec.mutable_child_share()->set_group_percent(150);
  absl::StatusOr<RunMsg> run = cluster_->StartRun(spec);
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(run.status().message().find("spec.child_share.group_percent"), std::string::npos)
      << run.status();
}

TEST_F(ChildrenEndToEndTest, RouterKilledMidGroupJoinsOnceWithNoDuplicateChild) {
  Boot(FanOutScript(1500));
  absl::StatusOr<RunMsg> run = cluster_->StartRun(Spec());
  ASSERT_TRUE(run.ok()) << run.status();
  RunMsg waiting = WaitForChildren(run->run_id());
  ASSERT_EQ(waiting.state().stage(), rein::v1::WAITING) << "the kill must land mid-group";
  EXPECT_NE(cluster_->KillRouter(SIGKILL), -1);
  ASSERT_TRUE(cluster_->StartRouter()) << cluster_->Logs();
  std::vector<RunEvent> events = WatchAll(run->run_id());
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().finished().outcome().reason(), rein::v1::GOAL_ACHIEVED);
  int joins = 0, groups = 0;
  for (const auto& e : events) {
    joins += e.has_children_joined();
    groups += e.has_child_group();
  }
  EXPECT_EQ(joins, 1);
  EXPECT_EQ(groups, 1);
  // Every run in the store: the parent and its three children, each ended once.
  grpc::ClientContext context;
  rein::v1::ListRunsRequest all;
  all.set_page_size(100);
  rein::v1::ListRunsResponse response;
  ASSERT_TRUE(cluster_->router()->ListRuns(&context, all, &response).ok());
  EXPECT_EQ(response.runs_size(), 4);
  for (const RunMsg& child : ListRuns(run->run_id())) {
    EXPECT_EQ(child.state().stage(), rein::v1::FINISHED) << child.run_id();
    WatchAll(child.run_id());  // one terminal event each
    bool same = false;
    for (const auto& c : waiting.children()) same = same || c.run_id() == child.run_id();
    EXPECT_TRUE(same) << "a child started after the restart: " << child.run_id();
  }
}

}  // namespace
}  // namespace rein::testing
