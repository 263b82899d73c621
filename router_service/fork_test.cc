// Tests of forking: StageRouter::Fork's edits and FindForkPoint's points.
#include "router_service/fork.h"

#include "gtest/gtest.h"
#include "router_service/replay.h"
#include "router_service/spec.h"
#include "router_service/stage_router.h"

namespace rein {
namespace {

using rein::v1::ForkEdits;
using rein::v1::Run;
using rein::v1::RunEvent;

const absl::Time kStart = absl::FromUnixSeconds(1700000000);

// A recorded run: plan [a, b]; a reads (iteration 2); b writes (iteration 3, paused
// BEFORE_MUTATING_TOOL, approved), then done.
struct Recorded {
  Run run;
  std::vector<RunEvent> events;
  std::vector<Snapshot> snapshots;
  StageRouter router;
  absl::Time now = kStart;

  void Apply(Transition t) {
    for (auto& e : t.events) {
      e.set_seq(static_cast<int64_t>(events.size()) + 1);
      events.push_back(e);
    }
    if (t.snapshot) snapshots.push_back(*t.snapshot);
    *run.mutable_state() = std::move(t.state);
    now += absl::Seconds(1);
  }

  Recorded() {
    rein::v1::RunSpec spec;
    spec.set_goal("g");
    spec.add_tools("read_file");
    spec.add_tools("write_file");
    spec.add_pause_points(rein::v1::BEFORE_MUTATING_TOOL);
    std::vector<rein::v1::ToolSpec> tools(2);
    tools[0].set_name("read_file");
    tools[1].set_name("write_file");
    tools[1].set_mutating(true);
    spec = *NormalizeSpec(spec, tools);
    Apply(router.NewRun("src", "", spec, now, &run));
    rein::v1::ListToolsResponse listed;
    for (const auto& t : tools) *listed.add_tools() = t;
    Apply(router.OnTools(run, listed, std::nullopt, now));
    rein::v1::PlanResponse plan;
    for (const char* id : {"a", "b"}) {
      auto* task = plan.add_subtasks();
      task->set_id(id);
      task->set_description(id);
    }
    Apply(router.OnPlan(run, plan, now));
    Cycle("read_file", true);
    rein::v1::DecideResponse decide;
    decide.mutable_tool_call()->set_tool("write_file");
    decide.mutable_tool_call()->set_args_json(R"({"path":"x","content":"y"})");
    Apply(router.OnDecide(run, decide, now));  // paused before the write
    rein::v1::Review approve;
    approve.mutable_approve();
    Apply(*router.OnReview(run, approve, run.state().version(), now));
    Apply(router.Next(run, now).transition.value());  // marks the write dispatched
    rein::v1::ExecuteResponse wrote;
    wrote.set_ok(true);
    Apply(router.OnExecute(run, wrote, now));
    rein::v1::EvaluateResponse done;
    done.set_status(RunEvent::Evaluation::COMPLETED);
    done.set_goal_achieved(true);
    Apply(router.OnEvaluate(run, done, now));
  }

  void Cycle(const std::string& tool, bool ok) {
    rein::v1::DecideResponse decide;
    decide.mutable_tool_call()->set_tool(tool);
    decide.mutable_tool_call()->set_args_json("{}");
    Apply(router.OnDecide(run, decide, now));
    rein::v1::ExecuteResponse out;
    out.set_ok(ok);
    out.set_output("read");
    Apply(router.OnExecute(run, out, now));
    rein::v1::EvaluateResponse eval;
    eval.set_status(RunEvent::Evaluation::COMPLETED);
    Apply(router.OnEvaluate(run, eval, now));
  }

  absl::StatusOr<ForkPoint> Point(rein::v1::ForkRunRequest request) {
    request.set_run_id("src");
    return FindForkPoint(router, run, events, snapshots, request);
  }

  absl::StatusOr<Transition> Fork(const ForkPoint& point, const ForkEdits& edits) {
    Run fork;
    fork.set_run_id("fork");
    *fork.mutable_spec() = run.spec();
    *fork.mutable_state() = point.state;
    return router.Fork(fork, point.from, edits, /*workspace_at_fork=*/true, now);
  }
};

int64_t SeqOfPause(const std::vector<RunEvent>& events) {
  for (const auto& e : events) {
    if (e.has_paused()) return e.seq();
  }
  return 0;
}

TEST(ForkTest, RecordedRunFinishesAndReplaysIdentically) {
  Recorded r;
  ASSERT_EQ(r.run.state().stage(), rein::v1::FINISHED);
  absl::StatusOr<ReplayResult> replay = ReplayRun(r.router, r.run, r.events);
  ASSERT_TRUE(replay.ok()) << replay.status();
  EXPECT_FALSE(replay->divergence) << DescribeReplay(*replay);
}

TEST(ForkTest, IterationPointIsTheStateAsItBeganAndNamesTheWriteAfterIt) {
  Recorded r;
  rein::v1::ForkRunRequest request;
  request.set_iteration(3);
  absl::StatusOr<ForkPoint> point = r.Point(request);
  ASSERT_TRUE(point.ok()) << point.status();
  EXPECT_EQ(point->state.stage(), rein::v1::DECIDING);
  EXPECT_EQ(point->state.iteration(), 3);
  EXPECT_EQ(point->state.subtasks(0).id(), "b");
  EXPECT_EQ(point->from.run_id(), "src");
  EXPECT_EQ(point->first_mutating_call_after, "src-2");

  ForkEdits edits;
  auto* task = edits.mutable_plan()->add_subtasks();
  task->set_id("c");
  task->set_description("c instead");
  absl::StatusOr<Transition> t = r.Fork(*point, edits);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->state.version(), 1);
  EXPECT_EQ(t->state.stage(), rein::v1::DECIDING);
  EXPECT_EQ(t->state.subtasks_size(), 1);
  EXPECT_EQ(t->state.subtasks(0).id(), "c");
  EXPECT_EQ(t->state.forked_from().run_id(), "src");
  ASSERT_FALSE(t->events.empty());
  EXPECT_TRUE(t->events[0].has_forked());
  EXPECT_EQ(t->events[0].forked().log_format(), kLogFormat);
}

TEST(ForkTest, EditedCallNeedsAPendingCall) {
  Recorded r;
  ForkEdits edits;
  edits.mutable_call()->set_tool("write_file");
  edits.mutable_call()->set_args_json(R"({"path":"z","content":"w"})");
  rein::v1::ForkRunRequest at_deciding;
  at_deciding.set_iteration(3);
  absl::StatusOr<Transition> refused = r.Fork(*r.Point(at_deciding), edits);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.status().message().find("edits.call"), std::string::npos) << refused.status();

  // Paused before the write: the call is there to edit, and gets the fork's own id.
  rein::v1::ForkRunRequest at_pause;
  at_pause.set_seq(SeqOfPause(r.events));
  absl::StatusOr<ForkPoint> point = r.Point(at_pause);
  ASSERT_TRUE(point.ok()) << point.status();
  EXPECT_EQ(point->state.stage(), rein::v1::PAUSED);
  absl::StatusOr<Transition> t = r.Fork(*point, edits);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->state.stage(), rein::v1::EXECUTING);
  EXPECT_EQ(t->state.pending_call().args_json(), R"({"path":"z","content":"w"})");
  EXPECT_EQ(t->state.pending_call().call_id().rfind("fork-", 0), 0u);
  EXPECT_FALSE(t->state.call_dispatched());

  ForkEdits bad = edits;
  bad.mutable_call()->set_tool("run_command");
  EXPECT_EQ(r.Fork(*point, bad).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ForkTest, ForkOfAPendingCallReplaysOnItsOwn) {
  Recorded r;
  rein::v1::ForkRunRequest at_pause;
  at_pause.set_seq(SeqOfPause(r.events));
  absl::StatusOr<ForkPoint> point = r.Point(at_pause);
  ASSERT_TRUE(point.ok()) << point.status();
  absl::StatusOr<Transition> t = r.Fork(*point, ForkEdits());
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->state.stage(), rein::v1::PAUSED);
  EXPECT_EQ(t->state.pause().pending_call().call_id().rfind("fork-", 0), 0u);
  rein::v1::Run fork;
  fork.set_run_id("fork");
  *fork.mutable_spec() = r.run.spec();
  *fork.mutable_state() = t->state;
  std::vector<RunEvent> log = t->events;
  for (size_t i = 0; i < log.size(); ++i) log[i].set_seq(static_cast<int64_t>(i) + 1);
  absl::StatusOr<ReplayResult> replay = ReplayRun(r.router, fork, log);
  ASSERT_TRUE(replay.ok()) << replay.status();
  EXPECT_FALSE(replay->divergence) << DescribeReplay(*replay);
  EXPECT_EQ(replay->run.state().pause().pending_call().call_id(),
            t->state.pause().pending_call().call_id());
}

TEST(ForkTest, PointsThatDoNotExistOrHaveEndedAreRefused) {
  Recorded r;
  rein::v1::ForkRunRequest request;
  EXPECT_EQ(r.Point(request).status().code(), absl::StatusCode::kInvalidArgument);
  request.set_iteration(42);
  EXPECT_EQ(r.Point(request).status().code(), absl::StatusCode::kInvalidArgument);
  request.set_seq(0);
  EXPECT_EQ(r.Point(request).status().code(), absl::StatusCode::kInvalidArgument);
  request.set_seq(static_cast<int64_t>(r.events.size()) + 1);
  EXPECT_EQ(r.Point(request).status().code(), absl::StatusCode::kInvalidArgument);
  request.set_seq(static_cast<int64_t>(r.events.size()));
  absl::StatusOr<ForkPoint> end = r.Point(request);
  ASSERT_TRUE(end.ok()) << end.status();
  absl::StatusOr<Transition> t = r.Fork(*end, ForkEdits());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(t.status().message().find("at:"), std::string::npos) << t.status();
}

TEST(ForkTest, SeqPointBetweenSnapshotsIsRebuiltByReplay) {
  Recorded r;
  // The event right after the first decision: no snapshot has that version.
  int64_t seq = 0;
  for (const auto& e : r.events) {
    if (e.has_decision()) {
      seq = e.seq();
      break;
    }
  }
  rein::v1::ForkRunRequest request;
  request.set_seq(seq);
  absl::StatusOr<ForkPoint> point = r.Point(request);
  ASSERT_TRUE(point.ok()) << point.status();
  EXPECT_EQ(point->state.stage(), rein::v1::EXECUTING);
  EXPECT_EQ(point->state.pending_call().tool(), "read_file");
  EXPECT_EQ(point->from.version(), r.events[seq - 1].version());
  // A fork from a paused NEED_HUMAN point is not needed here; an answer is still recorded.
  ForkEdits edits;
  edits.mutable_human_input()->set_text("use x");
  absl::StatusOr<Transition> t = r.Fork(*point, edits);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->state.human_inputs_size(), 1);
  EXPECT_EQ(t->state.stage(), rein::v1::EXECUTING);
}

TEST(ForkTest, SeqPointOfARunStartedWithATokenIsRebuilt) {
  Recorded r;
  // The engine records the caller (StartRun's and the review's events carry a principal).
  for (RunEvent& e : r.events) {
    if (e.has_stage_changed() || e.has_resumed()) e.set_principal("token:alice");
  }
  int64_t seq = 0;
  for (const auto& e : r.events) {
    if (e.has_decision()) seq = e.seq();  // the last decision: after the reviewed write
  }
  rein::v1::ForkRunRequest request;
  request.set_seq(seq);
  absl::StatusOr<ForkPoint> point = r.Point(request);
  ASSERT_TRUE(point.ok()) << point.status();
  EXPECT_EQ(point->from.version(), r.events[seq - 1].version());
  absl::StatusOr<ReplayResult> replayed = ReplayRun(r.router, r.run, r.events, ReplayOptions{});
  ASSERT_TRUE(replayed.ok()) << replayed.status();
  EXPECT_FALSE(replayed->divergence.has_value()) << DescribeReplay(*replayed);
}

}  // namespace
}  // namespace rein
