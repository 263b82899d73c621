// End-to-end tests: the three real binaries over loopback TCP, driven through the public API.
#include <signal.h>
#include <stdlib.h>

#include <functional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "grpcpp/generic/generic_stub.h"
#include "gtest/gtest.h"
#include "tests/cluster.h"
#include "tests/repo_cluster.h"

namespace rein::testing {
namespace {

using RunMsg = rein::v1::Run;
using rein::v1::RunEvent;
using rein::v1::RunSpec;

class EndToEndTest : public ::testing::Test {
 protected:
  void Boot(const std::string& script) {
    cluster_ = RepoCluster(
        "e2e", script,
        {{"README.md", "# repo\nTODO: write docs\n"}, {"main.py", "print('hi')  # TODO tests\n"}});
    ASSERT_TRUE(cluster_->Start()) << cluster_->Logs();
  }

  RunSpec Spec(const std::string& goal = "inspect the repo") { return RepoSpec(goal, 60); }

  // Watches until the stream ends; checks that seq has no gaps and that the log ends with its
  // one terminal event. Never returns an empty log (a run always has events).
  std::vector<RunEvent> WatchAll(const std::string& run_id) {
    std::vector<RunEvent> events;
    grpc::Status status = cluster_->Watch(run_id, 0, absl::Seconds(60), &events);
    EXPECT_TRUE(status.ok()) << status.error_message();
    for (size_t i = 0; i < events.size(); ++i)
      EXPECT_EQ(events[i].seq(), static_cast<int64_t>(i + 1));
    int finished = 0;
    for (const auto& e : events) finished += e.has_finished();
    EXPECT_EQ(finished, 1) << cluster_->Logs();
    if (events.empty()) events.emplace_back();  // keeps .back() safe; the checks above failed
    EXPECT_TRUE(events.back().has_finished());
    return events;
  }

  RunMsg Resume(const RunMsg& run, const rein::v1::Review& review) {
    absl::StatusOr<RunMsg> out = cluster_->Resume(run, review);
    EXPECT_TRUE(out.ok()) << out.status();
    return out.ok() ? *out : RunMsg();
  }

  // Approves the paused `run` and expects it to finish with its goal achieved.
  void ApproveToTheGoal(const RunMsg& run) {
    rein::v1::Review approve;
    approve.mutable_approve();
    Resume(run, approve);
    EXPECT_EQ(WatchAll(run.run_id()).back().finished().outcome().reason(), rein::v1::GOAL_ACHIEVED);
  }

  std::unique_ptr<Cluster> cluster_;
};

int CountFinished(const std::vector<RunEvent>& events) {
  int n = 0;
  for (const auto& e : events) n += e.has_finished();
  return n;
}

TEST_F(EndToEndTest, FullRunFinishes) {
  Boot(ThreeStepScript(0));
  absl::StatusOr<RunMsg> run = cluster_->StartRun(Spec());
  ASSERT_TRUE(run.ok()) << run.status();
  std::vector<RunEvent> events = WatchAll(run->run_id());
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(CountFinished(events), 1);
  EXPECT_EQ(events.back().finished().outcome().reason(), rein::v1::GOAL_ACHIEVED);
  absl::StatusOr<RunMsg> done = cluster_->GetRun(run->run_id());
  ASSERT_TRUE(done.ok());
  EXPECT_EQ(done->state().stage(), rein::v1::FINISHED);
  ASSERT_EQ(done->state().completed_subtasks_size(), 3);
  EXPECT_NE(done->state().completed_subtasks(1).summary().find("TODO: write docs"),
            std::string::npos);
  EXPECT_EQ(done->state().planner_backend(), "scripted");
  // The same request_id returns the first run.
  absl::StatusOr<RunMsg> again = cluster_->StartRun(Spec(), "req-1");
  absl::StatusOr<RunMsg> twice = cluster_->StartRun(Spec(), "req-1");
  ASSERT_TRUE(again.ok() && twice.ok());
  EXPECT_EQ(again->run_id(), twice->run_id());
  // Export: one snapshot per iteration, the last one terminal.
  rein::v1::ExportRunRequest export_request;
  export_request.set_run_id(run->run_id());
  grpc::ClientContext context;
  auto reader = cluster_->router()->ExportRun(&context, export_request);
  rein::v1::RunSnapshot snapshot;
  int snapshots = 0;
  std::string last;
  while (reader->Read(&snapshot)) {
    ++snapshots;
    last = snapshot.state_json();
  }
  EXPECT_TRUE(reader->Finish().ok());
  EXPECT_GE(snapshots, 5);
  EXPECT_NE(last.find("\"FINISHED\""), std::string::npos);
}

TEST_F(EndToEndTest, PauseAfterPlanThenApprove) {
  Boot(ThreeStepScript(0));
  RunSpec spec = Spec();
  spec.add_pause_points(rein::v1::AFTER_PLAN);
  absl::StatusOr<RunMsg> run = cluster_->StartRun(spec);
  ASSERT_TRUE(run.ok());
  absl::StatusOr<RunMsg> paused =
      cluster_->WaitForStage(run->run_id(), rein::v1::PAUSED, absl::Seconds(20));
  ASSERT_TRUE(paused.ok());
  ASSERT_EQ(paused->state().stage(), rein::v1::PAUSED);
  EXPECT_EQ(paused->state().pause().point(), rein::v1::AFTER_PLAN);
  // A stale version loses.
  rein::v1::ResumeRunRequest stale;
  stale.set_run_id(run->run_id());
  stale.set_expected_version(paused->state().version() - 1);
  stale.mutable_review()->mutable_approve();
  RunMsg ignored;
  grpc::ClientContext context;
  EXPECT_EQ(cluster_->router()->ResumeRun(&context, stale, &ignored).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
  ApproveToTheGoal(*paused);
}

TEST_F(EndToEndTest, NeedHumanThenAnswer) {
  Boot(R"({
    "plan": [{"when": {"completed_contains": "ask"}, "reply": {"goalAchieved": true}},
             {"reply": {"subtasks": [{"id": "ask", "description": "find the file", "allowedTools": ["read_file"]}]}}],
    "decide": [{"when": {"has_human_input": false}, "reply": {"humanQuery": "Which file?"}},
               {"reply": {"toolCall": {"tool": "read_file", "args": {"path": "README.md"}}}}],
    "evaluate": [{"reply": {"status": "COMPLETED", "summary": "read it"}}]
  })");
  absl::StatusOr<RunMsg> run = cluster_->StartRun(Spec());
  ASSERT_TRUE(run.ok());
  absl::StatusOr<RunMsg> paused =
      cluster_->WaitForStage(run->run_id(), rein::v1::PAUSED, absl::Seconds(20));
  ASSERT_TRUE(paused.ok()) << paused.status();
  ASSERT_EQ(paused->state().pause().reason(), rein::v1::NEED_HUMAN);
  EXPECT_EQ(paused->state().pause().question(), "Which file?");
  rein::v1::Review answer;
  answer.mutable_answer()->set_text("README.md");
  Resume(*paused, answer);
  std::vector<RunEvent> events = WatchAll(run->run_id());
  EXPECT_EQ(events.back().finished().outcome().reason(), rein::v1::GOAL_ACHIEVED);
  absl::StatusOr<RunMsg> done = cluster_->GetRun(run->run_id());
  ASSERT_TRUE(done.ok());
  ASSERT_EQ(done->state().human_inputs_size(), 1);
  EXPECT_EQ(done->state().human_inputs(0).text(), "README.md");
}

TEST_F(EndToEndTest, RejectWithFeedbackReplans) {
  Boot(R"({
    "plan": [{"when": {"completed_contains": "better"}, "reply": {"goalAchieved": true}},
             {"when": {"human_input_contains": "read the readme"},
              "reply": {"subtasks": [{"id": "better", "description": "read README", "allowedTools": ["read_file"]}]}},
             {"reply": {"subtasks": [{"id": "first", "description": "list", "allowedTools": ["list_files"]}]}}],
    "decide": [{"when": {"subtask": "better"}, "reply": {"toolCall": {"tool": "read_file", "args": {"path": "README.md"}}}}],
    "evaluate": [{"reply": {"status": "COMPLETED", "summary": "ok"}}]
  })");
  RunSpec spec = Spec();
  spec.add_pause_points(rein::v1::AFTER_PLAN);
  absl::StatusOr<RunMsg> run = cluster_->StartRun(spec);
  ASSERT_TRUE(run.ok());
  absl::StatusOr<RunMsg> paused =
      cluster_->WaitForStage(run->run_id(), rein::v1::PAUSED, absl::Seconds(20));
  ASSERT_TRUE(paused.ok()) << paused.status();
  ASSERT_EQ(paused->state().stage(), rein::v1::PAUSED);
  ASSERT_GT(paused->state().subtasks_size(), 0);
  ASSERT_EQ(paused->state().subtasks(0).id(), "first");
  rein::v1::Review reject;
  reject.mutable_reject()->set_feedback("read the readme instead");
  Resume(*paused, reject);
  // The new plan pauses again (AFTER_PLAN): approve it.
  absl::StatusOr<RunMsg> again;
  for (int i = 0; i < 200; ++i) {
    again = cluster_->GetRun(run->run_id());
    if (again.ok() && again->state().stage() == rein::v1::PAUSED &&
        again->state().subtasks_size() > 0 && again->state().subtasks(0).id() == "better") {
      break;
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  ASSERT_TRUE(again.ok());
  ASSERT_GT(again->state().subtasks_size(), 0);
  ASSERT_EQ(again->state().subtasks(0).id(), "better");
  ApproveToTheGoal(*again);
}

TEST_F(EndToEndTest, CancelEndsRunInFlight) {
  Boot(ThreeStepScript(20000));
  absl::StatusOr<RunMsg> run = cluster_->StartRun(Spec());
  ASSERT_TRUE(run.ok());
  ASSERT_EQ(
      cluster_->WaitForStage(run->run_id(), rein::v1::DECIDING, absl::Seconds(20))->state().stage(),
      rein::v1::DECIDING);
  absl::Time start = absl::Now();
  rein::v1::CancelRunRequest cancel;
  cancel.set_run_id(run->run_id());
  cancel.set_reason("no longer needed");
  RunMsg cancelled;
  grpc::ClientContext context;
  ASSERT_TRUE(cluster_->router()->CancelRun(&context, cancel, &cancelled).ok());
  EXPECT_EQ(cancelled.state().stage(), rein::v1::CANCELLED);
  EXPECT_EQ(cancelled.state().outcome().reason(), rein::v1::CANCELLED_BY_USER);
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
  EXPECT_EQ(cancelled.state().retries_used(), 0);  // the cut call is not the run's failure
  EXPECT_EQ(CountFinished(WatchAll(run->run_id())), 1);
}

TEST_F(EndToEndTest, MaxIterationsFails) {
  Boot(R"({
    "plan": [{"reply": {"subtasks": [{"id": "loop", "description": "forever", "allowedTools": ["search_text"]}]}}],
    "decide": [{"reply": {"toolCall": {"tool": "search_text", "args": {"pattern": "TODO ${iteration}"}}}}],
    "evaluate": [{"reply": {"status": "NEEDS_MORE_WORK", "summary": "more"}}]
  })");
  RunSpec spec = Spec();
  spec.mutable_limits()->set_max_iterations(4);
  absl::StatusOr<RunMsg> run = cluster_->StartRun(spec);
  ASSERT_TRUE(run.ok());
  std::vector<RunEvent> events = WatchAll(run->run_id());
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().finished().outcome().reason(), rein::v1::MAX_ITERATIONS)
      << events.back().DebugString();
  EXPECT_EQ(cluster_->GetRun(run->run_id())->state().iteration(), 4);
}

TEST_F(EndToEndTest, DeadlineExceededFails) {
  Boot(ThreeStepScript(30000));
  RunSpec spec = Spec();
  spec.mutable_limits()->mutable_deadline()->set_seconds(2);
  absl::Time start = absl::Now();
  absl::StatusOr<RunMsg> run = cluster_->StartRun(spec);
  ASSERT_TRUE(run.ok());
  std::vector<RunEvent> events = WatchAll(run->run_id());
  EXPECT_EQ(events.back().finished().outcome().reason(), rein::v1::DEADLINE_EXCEEDED);
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
  EXPECT_EQ(cluster_->GetRun(run->run_id())->state().retries_used(), 0);
}

TEST_F(EndToEndTest, RetryBudgetExhaustedWithFailingPlanner) {
  Boot(R"({"plan": [{"error": {"code": "UNAVAILABLE", "message": "model overloaded"}}]})");
  RunSpec spec = Spec();
  spec.mutable_limits()->set_retry_budget(2);
  absl::StatusOr<RunMsg> run = cluster_->StartRun(spec);
  ASSERT_TRUE(run.ok());
  std::vector<RunEvent> events = WatchAll(run->run_id());
  EXPECT_EQ(events.back().finished().outcome().reason(), rein::v1::RETRY_BUDGET_EXHAUSTED);
  int errors = 0;
  for (const auto& e : events) errors += e.has_error() && e.error().retry_spent();
  EXPECT_EQ(errors, 3);
}

TEST_F(EndToEndTest, RouterKilledMidRunFinishesAfterRestart) {
  Boot(ThreeStepScript(400));
  absl::StatusOr<RunMsg> run = cluster_->StartRun(Spec());
  ASSERT_TRUE(run.ok());
  // Let it get into the second subtask, then kill the router without warning.
  absl::StatusOr<RunMsg> before;
  for (int i = 0; i < 500; ++i) {
    before = cluster_->GetRun(run->run_id());
    if (before.ok() && before->state().completed_subtasks_size() >= 1) break;
    absl::SleepFor(absl::Milliseconds(20));
  }
  ASSERT_TRUE(before.ok());
  ASSERT_EQ(before->state().completed_subtasks_size(), 1) << "the kill must land mid-run";
  EXPECT_NE(cluster_->KillRouter(SIGKILL), -1);
  ASSERT_TRUE(cluster_->StartRouter()) << cluster_->Logs();
  EXPECT_NE(cluster_->Logs().find("recovered 1 unfinished runs"), std::string::npos)
      << cluster_->Logs();
  std::vector<RunEvent> events = WatchAll(run->run_id());
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(CountFinished(events), 1);
  EXPECT_EQ(events.back().finished().outcome().reason(), rein::v1::GOAL_ACHIEVED);
  absl::StatusOr<RunMsg> done = cluster_->GetRun(run->run_id());
  ASSERT_TRUE(done.ok());
  ASSERT_EQ(done->state().completed_subtasks_size(), 3);
  for (const auto& task : done->state().completed_subtasks()) {
    EXPECT_EQ(task.status(), rein::v1::SubTask::COMPLETED) << task.id();
  }
  EXPECT_EQ(done->state().retries_used(), 0);
  // Each read-only subtask ran to a result exactly once in the log (a call repeated after the
  // restart keeps its call_id, so a call_id never has two results).
  std::set<std::string> call_ids;
  int results = 0;
  for (const auto& e : events) {
    if (!e.has_tool_result()) continue;
    ++results;
    EXPECT_TRUE(call_ids.insert(e.tool_result().action().call_id()).second)
        << e.tool_result().action().call_id();
  }
  EXPECT_EQ(results, 3);
}

TEST_F(EndToEndTest, RouterStopsCleanlyOnSigtermAndRunContinues) {
  Boot(ThreeStepScript(300));
  absl::StatusOr<RunMsg> run = cluster_->StartRun(Spec());
  ASSERT_TRUE(run.ok());
  ASSERT_EQ(
      cluster_->WaitForStage(run->run_id(), rein::v1::DECIDING, absl::Seconds(20))->state().stage(),
      rein::v1::DECIDING);
  absl::Time start = absl::Now();
  EXPECT_EQ(cluster_->KillRouter(SIGTERM), 0) << cluster_->Logs();
  EXPECT_LT(absl::Now() - start, absl::Seconds(15));
  ASSERT_TRUE(cluster_->StartRouter()) << cluster_->Logs();
  std::vector<RunEvent> events = WatchAll(run->run_id());
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().finished().outcome().reason(), rein::v1::GOAL_ACHIEVED);
  EXPECT_EQ(CountFinished(events), 1);
  EXPECT_EQ(cluster_->GetRun(run->run_id())->state().retries_used(), 0);
}

TEST_F(EndToEndTest, MalformedRequestsLeaveServicesHealthy) {
  Boot(ThreeStepScript(0));
  std::mt19937 rng(42);
  struct Target {
    std::string address;
    std::vector<std::string> methods;
  };
  std::vector<Target> targets = {
      {cluster_->router_target(),
       {"/rein.v1.Router/StartRun", "/rein.v1.Router/GetRun", "/rein.v1.Router/ListRuns",
        "/rein.v1.Router/ResumeRun", "/rein.v1.Router/CancelRun"}},
      {cluster_->planner_target(),
       {"/rein.v1.Planner/Plan", "/rein.v1.Planner/Decide", "/rein.v1.Planner/Evaluate"}},
      {cluster_->executor_target(), {"/rein.v1.Executor/Execute", "/rein.v1.Executor/ListTools"}}};
  int sent = 0;
  for (const Target& target : targets) {
    auto channel = grpc::CreateChannel(target.address, grpc::InsecureChannelCredentials());
    grpc::GenericStub stub(channel);
    for (int i = 0; i < 334; ++i) {
      std::string body(rng() % 200, '\0');
      for (char& c : body) c = static_cast<char>(rng());
      grpc::Slice slice(body);
      grpc::ByteBuffer send(&slice, 1), reply;
      grpc::ClientContext context;
      context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
      grpc::CompletionQueue cq;
      auto call =
          stub.PrepareUnaryCall(&context, target.methods[i % target.methods.size()], send, &cq);
      call->StartCall();
      grpc::Status status;
      call->Finish(&reply, &status, reinterpret_cast<void*>(1));
      void* tag;
      bool ok;
      cq.Next(&tag, &ok);
      ++sent;
    }
  }
  EXPECT_GE(sent, 1000);
  // Semantically bad requests too: each is INVALID_ARGUMENT naming its field, none crashes.
  std::vector<std::pair<std::string, std::function<void(RunSpec&)>>> bad_specs = {
      {"spec.goal", [](RunSpec& s) { s.set_goal(""); }},
      {"spec.goal", [](RunSpec& s) { s.set_goal(std::string(20000, 'g')); }},
      {"spec.workspace", [](RunSpec& s) { s.set_workspace("../../etc"); }},
      {"spec.tools[0]", [](RunSpec& s) { s.add_tools("rm_rf"); }},
      {"spec.limits.max_iterations",
       [](RunSpec& s) { s.mutable_limits()->set_max_iterations(-3); }},
      {"spec.limits.deadline",
       [](RunSpec& s) { s.mutable_limits()->mutable_deadline()->set_seconds(-1); }},
      {"spec.limits.deadline",
       [](RunSpec& s) { s.mutable_limits()->mutable_deadline()->set_seconds(9223372037); }},
      {"spec.limits.stagnation_window",
       [](RunSpec& s) { s.mutable_limits()->set_stagnation_window(1000); }},
      {"spec.pause_points[0]",
       [](RunSpec& s) { s.add_pause_points(static_cast<rein::v1::PausePoint>(42)); }},
      {"spec.model.temperature", [](RunSpec& s) { s.mutable_model()->set_temperature(-2); }},
  };
  for (int round = 0; round < 5; ++round) {
    for (const auto& [field, edit] : bad_specs) {
      RunSpec spec = Spec();
      edit(spec);
      absl::StatusOr<RunMsg> bad = cluster_->StartRun(spec);
      EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument) << field;
      EXPECT_NE(bad.status().message().find(field), std::string::npos)
          << field << ": " << bad.status().message();
    }
  }
  // Reviews of a run that is not paused, and of unknown runs.
  rein::v1::ResumeRunRequest resume;
  resume.set_run_id("run-nope");
  resume.mutable_review()->mutable_approve();
  RunMsg ignored;
  grpc::ClientContext c1;
  EXPECT_EQ(cluster_->router()->ResumeRun(&c1, resume, &ignored).error_code(),
            grpc::StatusCode::NOT_FOUND);
  std::vector<RunEvent> none;
  EXPECT_EQ(cluster_->Watch("run-nope", 0, absl::Seconds(5), &none).error_code(),
            grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(cluster_->GetRun("no-such-run").status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(cluster_->WaitServing(cluster_->router_target(), absl::Seconds(5)));
  EXPECT_TRUE(cluster_->WaitServing(cluster_->planner_target(), absl::Seconds(5)));
  EXPECT_TRUE(cluster_->WaitServing(cluster_->executor_target(), absl::Seconds(5)));
  // This cluster's executor runs unsandboxed (--sandbox=none): its sandbox health says so.
  Process probe(
      "health",
      {RunfilePath("common/rein-health"), cluster_->executor_target(), "rein.v1.Executor.sandbox"},
      cluster_->options().dir + "/probe.log");
  ASSERT_TRUE(probe.Start());
  EXPECT_EQ(probe.Wait(absl::Seconds(10)), 1);
  EXPECT_NE(ReadFile(cluster_->options().dir + "/probe.log").find("NOT_SERVING"),
            std::string::npos);
  absl::StatusOr<RunMsg> run = cluster_->StartRun(Spec());
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(WatchAll(run->run_id()).back().finished().outcome().reason(), rein::v1::GOAL_ACHIEVED);
}

}  // namespace
}  // namespace rein::testing
