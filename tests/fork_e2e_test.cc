// End-to-end: ForkRun through the real binaries, with the workspace at the fork point, and
// replay of the recorded runs.
#include <dirent.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "router_service/replay.h"
#include "tests/cluster.h"

namespace rein::testing {
namespace {

using rein::v1::RunEvent;

// Two writes of a.txt ("v1", then "v2"), then done. A fork's plan "third" writes b.txt.
constexpr char kScript[] = R"({
  "plan": [
    {"when": {"completed_contains": "second"}, "reply": {"goalAchieved": true, "reasoning": "done"}},
    {"when": {"completed_contains": "third"}, "reply": {"goalAchieved": true, "reasoning": "done"}},
    {"reply": {"subtasks": [
      {"id": "first", "description": "write v1", "allowedTools": ["write_file"]},
      {"id": "second", "description": "write v2", "allowedTools": ["write_file"]}]}}
  ],
  "decide": [
    {"when": {"subtask": "first"},
     "reply": {"toolCall": {"tool": "write_file", "args": {"path": "a.txt", "content": "v1"}}}},
    {"when": {"subtask": "second"},
     "reply": {"toolCall": {"tool": "write_file", "args": {"path": "a.txt", "content": "v2"}}}},
    {"when": {"subtask": "third"},
     "reply": {"toolCall": {"tool": "write_file", "args": {"path": "b.txt", "content": "fork"}}}}
  ],
  "evaluate": [
    {"reply": {"status": "COMPLETED", "summary": "${subtask} written"}}
  ]
})";

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  if (!in) return "<missing>";
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::set<std::string> Entries(const std::string& dir) {
  std::set<std::string> names;
  if (DIR* d = opendir(dir.c_str())) {
    while (struct dirent* e = readdir(d)) names.insert(e->d_name);
    closedir(d);
  }
  return names;
}

class ForkEndToEndTest : public ::testing::Test {
 protected:
  virtual int HistoryRetention() const { return 16; }

  void SetUp() override {
    std::string base = getenv("TEST_TMPDIR") ? getenv("TEST_TMPDIR") : "/tmp";
    Cluster::Options options;
    options.dir = absl::StrCat(base, "/fork-e2e-",
                               ::testing::UnitTest::GetInstance()->current_test_info()->name());
    mkdir(options.dir.c_str(), 0755);
    options.script_json = kScript;
    options.executor_flags.push_back(absl::StrCat("--workspace_history=", HistoryRetention()));
    root_ = options.dir + "/workspaces";
    mkdir(root_.c_str(), 0755);
    mkdir((root_ + "/repo").c_str(), 0755);
    std::ofstream(root_ + "/repo/a.txt") << "v0";
    cluster_ = std::make_unique<Cluster>(options);
    ASSERT_TRUE(cluster_->Start()) << cluster_->Logs();
  }

  std::vector<RunEvent> Log(const std::string& run_id) {
    std::vector<RunEvent> events;
    grpc::Status status = cluster_->Watch(run_id, 0, absl::Seconds(60), &events);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return events;
  }

  rein::v1::Run Finished(const std::string& run_id) {
    absl::StatusOr<rein::v1::Run> run =
        cluster_->WaitForStage(run_id, rein::v1::FINISHED, absl::Seconds(60));
    EXPECT_TRUE(run.ok()) << run.status();
    return run.ok() ? *run : rein::v1::Run();
  }

  // A run writing a.txt twice (v1, then v2), once it finished.
  absl::StatusOr<rein::v1::Run> StartFinishedSource() {
    rein::v1::RunSpec spec;
    spec.set_goal("write a.txt twice");
    spec.set_workspace("repo");
    spec.add_tools("write_file");
    absl::StatusOr<rein::v1::Run> source = cluster_->StartRun(spec);
    if (source.ok()) Finished(source->run_id());
    return source;
  }

  grpc::Status Fork(const rein::v1::ForkRunRequest& request, rein::v1::Run* out) {
    grpc::ClientContext context;
    return cluster_->router()->ForkRun(&context, request, out);
  }

  int CountRuns() {
    grpc::ClientContext context;
    rein::v1::ListRunsRequest request;
    request.set_page_size(1000);
    rein::v1::ListRunsResponse response;
    EXPECT_TRUE(cluster_->router()->ListRuns(&context, request, &response).ok());
    return response.runs_size();
  }

  void ExpectReplayIdentical(const std::string& run_id) {
    absl::StatusOr<rein::v1::Run> run = cluster_->GetRun(run_id);
    ASSERT_TRUE(run.ok());
    absl::StatusOr<ReplayResult> result = ReplayRun(StageRouter(), *run, Log(run_id));
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_FALSE(result->divergence) << DescribeReplay(*result);
  }

  std::string root_;
  std::unique_ptr<Cluster> cluster_;
};

TEST_F(ForkEndToEndTest, ForkAtIterationWithEditedPlanGetsTheWorkspaceAsItWasThen) {
  rein::v1::RunSpec spec;
  spec.set_goal("write a.txt twice");
  spec.set_workspace("repo");
  spec.add_tools("write_file");
  spec.mutable_limits()->mutable_deadline()->set_seconds(60);
  absl::StatusOr<rein::v1::Run> source = cluster_->StartRun(spec);
  ASSERT_TRUE(source.ok()) << source.status();
  rein::v1::Run ended = Finished(source->run_id());
  ASSERT_EQ(ended.state().stage(), rein::v1::FINISHED) << cluster_->Logs();
  ASSERT_EQ(Slurp(root_ + "/repo/a.txt"), "v2");
  const std::vector<RunEvent> source_log = Log(source->run_id());

  // Iteration 3 began after "first" wrote v1 and before "second" wrote v2.
  rein::v1::ForkRunRequest request;
  request.set_run_id(source->run_id());
  request.set_iteration(3);
  request.set_request_id("fork-1");
  request.set_workspace_at_fork(true);
  auto* task = request.mutable_edits()->mutable_plan()->add_subtasks();
  task->set_id("third");
  task->set_description("write b.txt");
  task->add_allowed_tools("write_file");
  rein::v1::Run fork;
  grpc::Status status = Fork(request, &fork);
  ASSERT_TRUE(status.ok()) << status.error_message() << cluster_->Logs();
  EXPECT_NE(fork.run_id(), source->run_id());
  EXPECT_EQ(fork.state().forked_from().run_id(), source->run_id());
  EXPECT_EQ(fork.state().forked_from().iteration(), 3);
  EXPECT_GT(fork.state().forked_from().seq(), 0);
  EXPECT_NE(fork.spec().workspace(), "repo");
  // The fork's workspace is the source's as iteration 3 began.
  EXPECT_EQ(Slurp(root_ + "/" + fork.spec().workspace() + "/a.txt"), "v1");

  // The same request_id returns the first fork, and copies nothing more.
  const size_t workspaces = Entries(root_).size();
  rein::v1::Run again;
  ASSERT_TRUE(Fork(request, &again).ok());
  EXPECT_EQ(again.run_id(), fork.run_id());
  EXPECT_EQ(Entries(root_).size(), workspaces);

  rein::v1::Run fork_ended = Finished(fork.run_id());
  EXPECT_EQ(fork_ended.state().stage(), rein::v1::FINISHED) << cluster_->Logs();
  const std::vector<RunEvent> fork_log = Log(fork.run_id());
  ASSERT_FALSE(fork_log.empty());
  ASSERT_TRUE(fork_log[0].has_forked());
  EXPECT_EQ(fork_log[0].forked().from().run_id(), source->run_id());
  EXPECT_EQ(Slurp(root_ + "/" + fork.spec().workspace() + "/b.txt"), "fork");
  EXPECT_EQ(Slurp(root_ + "/" + fork.spec().workspace() + "/a.txt"), "v1");

  // The source is untouched: its workspace, state and log.
  EXPECT_EQ(Slurp(root_ + "/repo/a.txt"), "v2");
  EXPECT_EQ(Slurp(root_ + "/repo/b.txt"), "<missing>");
  absl::StatusOr<rein::v1::Run> source_now = cluster_->GetRun(source->run_id());
  ASSERT_TRUE(source_now.ok());
  EXPECT_EQ(source_now->state().version(), ended.state().version());
  EXPECT_EQ(Log(source->run_id()).size(), source_log.size());

  // Both recorded runs replay identically through today's router.
  ExpectReplayIdentical(source->run_id());
  ExpectReplayIdentical(fork.run_id());

  // Without workspace_at_fork: the source's workspace as it is now.
  rein::v1::ForkRunRequest now_request;
  now_request.set_run_id(source->run_id());
  now_request.set_seq(3);
  now_request.mutable_edits()->mutable_limits()->set_max_iterations(7);
  rein::v1::Run now_fork;
  status = Fork(now_request, &now_fork);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(Slurp(root_ + "/" + now_fork.spec().workspace() + "/a.txt"), "v2");
  // Changed limits override the source's; the others stay as the source had them.
  EXPECT_EQ(now_fork.spec().limits().max_iterations(), 7);
  EXPECT_EQ(now_fork.spec().limits().deadline().seconds(), 60);
  EXPECT_TRUE(
      cluster_->WaitForStage(now_fork.run_id(), rein::v1::FINISHED, absl::Seconds(60)).ok());
}

TEST_F(ForkEndToEndTest, BadForksNameTheFieldAndCreateNothing) {
  absl::StatusOr<rein::v1::Run> source = StartFinishedSource();
  ASSERT_TRUE(source.ok()) << source.status();
  const int runs = CountRuns();
  const std::set<std::string> workspaces = Entries(root_);

  auto expect_refused = [&](const rein::v1::ForkRunRequest& request, grpc::StatusCode code,
                            const std::string& field) {
    rein::v1::Run out;
    grpc::Status status = Fork(request, &out);
    EXPECT_EQ(status.error_code(), code) << status.error_message();
    EXPECT_NE(status.error_message().find(field), std::string::npos) << status.error_message();
    EXPECT_EQ(CountRuns(), runs);
    EXPECT_EQ(Entries(root_), workspaces);
  };
  rein::v1::ForkRunRequest request;
  request.set_run_id(source->run_id());
  request.set_iteration(99);
  expect_refused(request, grpc::StatusCode::INVALID_ARGUMENT, "at.iteration");
  request.set_seq(100000);
  expect_refused(request, grpc::StatusCode::INVALID_ARGUMENT, "at.seq");
  request.clear_seq();
  expect_refused(request, grpc::StatusCode::INVALID_ARGUMENT, "at");
  // Iteration 3 begins in DECIDING: there is no pending call to edit.
  request.set_iteration(3);
  request.mutable_edits()->mutable_call()->set_tool("write_file");
  request.mutable_edits()->mutable_call()->set_args_json("{}");
  expect_refused(request, grpc::StatusCode::FAILED_PRECONDITION, "edits.call");
  // The last event is the end: nothing to go on from.
  request.clear_edits();
  request.set_seq(Log(source->run_id()).size());
  expect_refused(request, grpc::StatusCode::FAILED_PRECONDITION, "at");
  request.set_iteration(1);
  request.set_run_id("run-0000000000000000");
  expect_refused(request, grpc::StatusCode::NOT_FOUND, "run-0000000000000000");
}

// An executor that keeps one snapshot per run.
class ShortHistoryForkTest : public ForkEndToEndTest {
 protected:
  int HistoryRetention() const override { return 1; }
};

TEST_F(ShortHistoryForkTest, PastRetentionIsFailedPreconditionAndCreatesNothing) {
  absl::StatusOr<rein::v1::Run> source = StartFinishedSource();
  ASSERT_TRUE(source.ok()) << source.status();
  const int runs = CountRuns();
  const std::set<std::string> workspaces = Entries(root_);

  // Iteration 2 began before the first write, whose snapshot the second one pushed out.
  rein::v1::ForkRunRequest request;
  request.set_run_id(source->run_id());
  request.set_iteration(2);
  request.set_workspace_at_fork(true);
  rein::v1::Run out;
  grpc::Status status = Fork(request, &out);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << status.error_message();
  EXPECT_NE(status.error_message().find("workspace_at_fork"), std::string::npos)
      << status.error_message();
  EXPECT_EQ(CountRuns(), runs);
  EXPECT_EQ(Entries(root_), workspaces);

  // Iteration 3 began before the second write, whose snapshot is kept.
  request.set_iteration(3);
  status = Fork(request, &out);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(Slurp(root_ + "/" + out.spec().workspace() + "/a.txt"), "v1");
  EXPECT_TRUE(cluster_->WaitForStage(out.run_id(), rein::v1::FINISHED, absl::Seconds(60)).ok());
}

}  // namespace
}  // namespace rein::testing
