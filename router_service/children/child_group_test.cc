// Tests of the child-run rules driven through StageRouter: delegation checks, opening a group
// with carved budgets, waiting, the join, cancel and deadline, and random trees.
#include "router_service/children/child_group.h"

#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/proto_time.h"
#include "gtest/gtest.h"
#include "router_service/fork.h"
#include "router_service/replay.h"
#include "router_service/spec.h"
#include "router_service/stage_router.h"

namespace rein {
namespace {

using rein::v1::ChildRun;
using rein::v1::Run;
using rein::v1::SubTask;

const absl::Time kStart = absl::FromUnixSeconds(1700000000);

std::vector<rein::v1::ToolSpec> KnownTools() {
  std::vector<rein::v1::ToolSpec> tools(2);
  tools[0].set_name("list_files");
  tools[1].set_name("read_file");
  return tools;
}

rein::v1::PlanResponse DelegatingPlan(int delegated, int plain = 0,
                                      const std::string& prefix = "") {
  rein::v1::PlanResponse reply;
  for (int i = 0; i < delegated; ++i) {
    SubTask* task = reply.add_subtasks();
    task->set_id(absl::StrCat(prefix, "part", i));
    task->set_description(absl::StrCat("audit service ", i));
    task->add_allowed_tools("read_file");
    task->set_delegate(true);
  }
  for (int i = 0; i < plain; ++i) {
    SubTask* task = reply.add_subtasks();
    task->set_id(absl::StrCat(prefix, "report", i));
    task->set_description("write the report");
  }
  reply.set_backend("scripted");
  reply.mutable_usage()->set_input_tokens(100);
  return reply;
}

// A run of `spec` (edited) past INITIALIZING, driven by StageRouter.
class Parent {
 public:
  explicit Parent(std::function<void(rein::v1::RunSpec&)> edit = nullptr) {
    rein::v1::RunSpec spec;
    spec.set_goal("audit three services");
    spec.add_tools("list_files");
    spec.add_tools("read_file");
    spec.set_pause_on_notes(false);
    spec.mutable_limits()->set_max_children(10);
    if (edit) edit(spec);
    auto normalized = NormalizeSpec(spec, KnownTools());
    EXPECT_TRUE(normalized.ok()) << normalized.status();
    Apply(router.NewRun("parent", "", *normalized, now, &run));
    rein::v1::ListToolsResponse tools;
    for (const auto& tool : KnownTools()) *tools.add_tools() = tool;
    Apply(router.OnTools(run, tools, std::nullopt, now));
  }

  void Apply(const Transition& t) {
    *run.mutable_state() = t.state;
    for (const auto& e : t.events) {
      log.push_back(e);
      log.back().set_seq(static_cast<int64_t>(log.size()));
    }
  }
  // Commits what Next says while it is a commit; returns the first other step.
  NextStep Drive() {
    while (true) {
      NextStep next = router.Next(run, now);
      if (next.kind != NextStep::Kind::kCommit) return next;
      Apply(*next.transition);
    }
  }
  // Answers the kChildren effect: every member started as "<request_id>-run", in `stage`.
  ChildrenObserved Observe(rein::v1::Stage stage, rein::v1::Stage failing_stage, int failing = -1) {
    ChildrenObserved observed;
    int i = 0;
    for (const ChildRun& member : CurrentGroup(run.state())) {
      ChildRun v = member;
      v.set_run_id(member.request_id() + "-run");
      v.set_stage(i == failing ? failing_stage : stage);
      if (StageRouter::IsTerminal(v.stage())) {
        v.mutable_outcome()->set_status(v.stage());
        v.mutable_outcome()->set_reason(v.stage() == rein::v1::FINISHED ? rein::v1::GOAL_ACHIEVED
                                                                        : rein::v1::MAX_ITERATIONS);
        v.mutable_outcome()->mutable_usage()->set_input_tokens(50);
        v.mutable_outcome()->set_cost_usd(0.25);
        v.set_summary(absl::StrCat("service ", i, " audited"));
        v.set_iterations(3);
        v.set_retries_used(1);
      }
      observed.children.push_back(v);
      ++i;
    }
    return observed;
  }
  std::optional<Transition> Children(const ChildrenObserved& observed) {
    Applied applied = router.Apply(run, observed, now);
    EXPECT_FALSE(applied.call.has_value());
    return applied.transition;
  }

  StageRouter router;
  absl::Time now = kStart;
  Run run;
  std::vector<rein::v1::RunEvent> log;
};

TEST(ChildGroupTest, PlanOffersDelegationOnlyWhenChildrenAllowed) {
  Parent allowed;
  Effect effect = allowed.router.NextEffect(allowed.run, allowed.now);
  ASSERT_EQ(effect.kind, Effect::Kind::kPlan);
  EXPECT_TRUE(effect.plan.allow_delegation());
  EXPECT_EQ(effect.plan.max_parallel_children(), 4);
  EXPECT_EQ(effect.plan.children_left(), 10);

  Parent none([](rein::v1::RunSpec& s) { s.mutable_limits()->set_max_children(0); });
  effect = none.router.NextEffect(none.run, none.now);
  EXPECT_FALSE(effect.plan.allow_delegation());
}

TEST(ChildGroupTest, DelegatingWithoutChildrenAllowedIsInvalidOutput) {
  Parent p([](rein::v1::RunSpec& s) { s.mutable_limits()->set_max_children(0); });
  p.Apply(p.router.OnPlan(p.run, DelegatingPlan(1), p.now));
  EXPECT_EQ(p.run.state().stage(), rein::v1::PLANNING);
  EXPECT_EQ(p.run.state().retries_used(), 1);
  ASSERT_TRUE(p.log.back().has_error());
  EXPECT_NE(p.log.back().error().message().find("subtasks[0].delegate"), std::string::npos);
}

TEST(ChildGroupTest, MoreParallelChildrenThanTheLimitIsInvalidOutput) {
  Parent p([](rein::v1::RunSpec& s) { s.mutable_limits()->set_max_parallel_children(2); });
  p.Apply(p.router.OnPlan(p.run, DelegatingPlan(3), p.now));
  EXPECT_EQ(p.run.state().stage(), rein::v1::PLANNING);
  ASSERT_TRUE(p.log.back().has_error());
  EXPECT_NE(p.log.back().error().message().find("subtasks[2].delegate: 3 consecutive"),
            std::string::npos);
  EXPECT_EQ(p.run.state().children_size(), 0);  // never a partially started group
}

TEST(ChildGroupTest, SpecRefusesBadChildLimits) {
  rein::v1::RunSpec spec;
  spec.set_goal("g");
  spec.mutable_limits()->set_max_children(101);
  auto normalized = NormalizeSpec(spec, KnownTools());
  ASSERT_FALSE(normalized.ok());
  EXPECT_NE(normalized.status().message().find("spec.limits.max_children"), std::string::npos);
  spec.mutable_limits()->set_max_children(1);
  spec.mutable_limits()->set_max_depth(9);
  normalized = NormalizeSpec(spec, KnownTools());
  ASSERT_FALSE(normalized.ok());
  EXPECT_NE(normalized.status().message().find("spec.limits.max_depth"), std::string::npos);
}

TEST(ChildGroupTest, GroupOpensWaitsAndJoinsThenGoesOn) {
  Parent p([](rein::v1::RunSpec& s) {
    s.mutable_limits()->set_max_iterations(40);
    s.mutable_limits()->set_token_budget(10000);
  });
  p.Apply(p.router.OnPlan(p.run, DelegatingPlan(3, 1), p.now));
  NextStep next = p.Drive();
  ASSERT_EQ(p.run.state().stage(), rein::v1::WAITING);
  ASSERT_EQ(next.kind, NextStep::Kind::kCall);
  ASSERT_EQ(next.effect.kind, Effect::Kind::kChildren);
  ASSERT_EQ(next.effect.children.start.size(), 3u);
  EXPECT_FALSE(next.effect.children.cancel);
  const ChildrenEffect::Start& first = next.effect.children.start[0];
  EXPECT_EQ(first.member.request_id(), "child:parent:1:0");
  EXPECT_EQ(first.spec.parent().run_id(), "parent");
  EXPECT_EQ(first.spec.parent().subtask_id(), "part0");
  EXPECT_EQ(first.spec.parent().group(), 1);
  EXPECT_NE(first.spec.goal().find("audit service 0"), std::string::npos);
  EXPECT_NE(first.spec.goal().find("audit three services"), std::string::npos);
  ASSERT_EQ(first.spec.tools_size(), 1);
  EXPECT_EQ(first.spec.tools(0), "read_file");
  // Carved: (40 - 2 iterations used) / 3, the retry budget (5 + 1) / 3 - 1, tokens left / 3.
  EXPECT_EQ(first.spec.limits().max_iterations(), 12);
  EXPECT_EQ(first.spec.limits().retry_budget(), 1);
  EXPECT_EQ(first.spec.limits().token_budget(), (10000 - 100) / 3);
  EXPECT_EQ(first.spec.limits().max_depth(), 1);
  EXPECT_EQ(first.spec.limits().max_children(), (10 - 3) / 3);
  EXPECT_EQ(first.deadline, FromProtoTime(p.run.state().deadline()));

  // Started, still running: recorded once, then nothing more to commit.
  std::optional<Transition> started = p.Children(p.Observe(rein::v1::PLANNING, rein::v1::PLANNING));
  ASSERT_TRUE(started.has_value());
  p.Apply(*started);
  EXPECT_EQ(p.run.state().children(0).run_id(), "child:parent:1:0-run");
  EXPECT_TRUE(p.log.back().has_children_started());
  EXPECT_FALSE(p.Children(p.Observe(rein::v1::DECIDING, rein::v1::DECIDING)).has_value());
  next = p.router.Next(p.run, p.now);
  ASSERT_EQ(next.effect.kind, Effect::Kind::kChildren);
  EXPECT_TRUE(next.effect.children.start.empty());

  // The last child ends: one join; a failed child fails its subtask and not its siblings.
  const int iteration = p.run.state().iteration();
  std::optional<Transition> joined =
      p.Children(p.Observe(rein::v1::FINISHED, rein::v1::FAILED, /*failing=*/1));
  ASSERT_TRUE(joined.has_value());
  p.Apply(*joined);
  EXPECT_EQ(p.run.state().stage(), rein::v1::DECIDING);  // the report subtask is next
  ASSERT_EQ(p.run.state().subtasks_size(), 1);
  EXPECT_EQ(p.run.state().subtasks(0).id(), "report0");
  ASSERT_EQ(p.run.state().completed_subtasks_size(), 3);
  EXPECT_EQ(p.run.state().completed_subtasks(0).status(), SubTask::COMPLETED);
  EXPECT_EQ(p.run.state().completed_subtasks(1).status(), SubTask::FAILED);
  EXPECT_NE(p.run.state().completed_subtasks(1).summary().find("MAX_ITERATIONS"),
            std::string::npos);
  EXPECT_EQ(p.run.state().iteration(), iteration + 9 + 1);  // 3 x 3, then DECIDING
  EXPECT_EQ(p.run.state().retries_used(), 3);
  EXPECT_EQ(p.run.state().tokens_used(), 100 + 150);
  EXPECT_DOUBLE_EQ(p.run.state().cost_used_usd(), 0.75);
  bool has_join = false;
  for (const auto& e : p.log) {
    if (e.has_children_joined()) {
      has_join = true;
      EXPECT_EQ(e.children_joined().children_size(), 3);
      EXPECT_EQ(e.children_joined().usage().input_tokens(), 150);
    }
  }
  EXPECT_TRUE(has_join);
  EXPECT_FALSE(p.Children(p.Observe(rein::v1::FINISHED, rein::v1::FINISHED)).has_value());
}

TEST(ChildGroupTest, ParentsLogReplaysThroughAGroupAlone) {
  Parent p;
  p.Apply(p.router.OnPlan(p.run, DelegatingPlan(2, 1), p.now));
  p.Drive();
  p.Apply(*p.Children(p.Observe(rein::v1::DECIDING, rein::v1::DECIDING)));
  p.now += absl::Seconds(5);
  ChildrenObserved ended = p.Observe(rein::v1::FINISHED, rein::v1::FAILED, /*failing=*/0);
  for (ChildRun& c : ended.children) c.mutable_outcome()->set_cost_usd(0);  // unpriced here
  p.Apply(*p.Children(ended));
  ASSERT_EQ(p.run.state().stage(), rein::v1::DECIDING);
  absl::StatusOr<ReplayResult> replayed = ReplayRun(p.router, p.run, p.log);
  ASSERT_TRUE(replayed.ok()) << replayed.status();
  EXPECT_FALSE(replayed->divergence.has_value()) << DescribeReplay(*replayed);
  EXPECT_EQ(replayed->events_replayed, static_cast<int64_t>(p.log.size()));
}

// A cancel recorded while a group runs (a commit whose one event is cancel_requested) replays:
// before the children's ids are recorded and after.
TEST(ChildGroupTest, CancelRecordedMidGroupReplaysDeterministically) {
  for (bool before_started : {true, false}) {
    Parent p;
    p.Apply(p.router.OnPlan(p.run, DelegatingPlan(2, 1), p.now));
    p.Drive();
    ASSERT_EQ(p.run.state().stage(), rein::v1::WAITING);
    auto cancel = [&p] {
      p.now += absl::Seconds(2);
      std::optional<Transition> t =
          p.router.OnCancel(p.run, /*call_in_flight=*/false, "enough", p.now);
      ASSERT_TRUE(t.has_value());
      ASSERT_EQ(t->events.size(), 1u);
      EXPECT_EQ(t->events[0].cancel_requested().reason(), "enough");
      p.Apply(*t);
    };
    if (before_started) cancel();
    p.now += absl::Seconds(1);
    p.Apply(*p.Children(p.Observe(rein::v1::DECIDING, rein::v1::DECIDING)));
    if (!before_started) cancel();
    p.now += absl::Seconds(3);
    ChildrenObserved ended = p.Observe(rein::v1::CANCELLED, rein::v1::FINISHED, /*failing=*/1);
    for (ChildRun& c : ended.children) c.mutable_outcome()->set_cost_usd(0);  // unpriced here
    p.Apply(*p.Children(ended));
    ASSERT_EQ(p.run.state().stage(), rein::v1::CANCELLED);
    absl::StatusOr<ReplayResult> replayed = ReplayRun(p.router, p.run, p.log);
    ASSERT_TRUE(replayed.ok()) << replayed.status();
    EXPECT_FALSE(replayed->divergence.has_value())
        << "before_started " << before_started << ": " << DescribeReplay(*replayed);
    EXPECT_EQ(replayed->events_replayed, static_cast<int64_t>(p.log.size()));
  }
}

// A fork inside a group would share the source's children: refused, naming where to fork.
TEST(ChildGroupTest, ForkInsideAGroupIsRefusedAndAroundItIsNot) {
  Parent p;
  p.Apply(p.router.OnPlan(p.run, DelegatingPlan(2, 1), p.now));
  p.Drive();
  p.Apply(*p.Children(p.Observe(rein::v1::DECIDING, rein::v1::DECIDING)));
  ChildrenObserved ended = p.Observe(rein::v1::FINISHED, rein::v1::FINISHED);
  for (ChildRun& c : ended.children) c.mutable_outcome()->set_cost_usd(0);  // unpriced here
  p.Apply(*p.Children(ended));
  int64_t group = 0, started = 0, joined = 0;
  for (const auto& e : p.log) {
    if (e.has_child_group()) group = e.seq();
    if (e.has_children_started()) started = e.seq();
    if (e.has_children_joined()) joined = e.seq();
  }
  auto fork_at = [&p](int64_t seq) {
    rein::v1::ForkRunRequest request;
    request.set_seq(seq);
    return FindForkPoint(p.router, p.run, p.log, {}, request);
  };
  absl::StatusOr<ForkPoint> inside = fork_at(started);
  ASSERT_FALSE(inside.ok());
  EXPECT_EQ(inside.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(inside.status().message().find(absl::StrCat("fork at seq ", group - 1, " or earlier")),
            std::string::npos)
      << inside.status();
  EXPECT_NE(inside.status().message().find(absl::StrCat("at seq ", joined, " or later")),
            std::string::npos)
      << inside.status();
  EXPECT_TRUE(fork_at(group - 1).ok()) << fork_at(group - 1).status();
  absl::StatusOr<ForkPoint> after = fork_at(joined);
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(after->state.stage(), rein::v1::DECIDING);
  EXPECT_EQ(after->state.completed_subtasks_size(), 2);  // the children's outcomes, as joined
}

TEST(ChildGroupTest, CancelWaitsForTheChildrenThenCancelsTheParent) {
  Parent p;
  p.Apply(p.router.OnPlan(p.run, DelegatingPlan(2), p.now));
  p.Drive();
  ASSERT_EQ(p.run.state().stage(), rein::v1::WAITING);
  std::optional<Transition> cancel =
      p.router.OnCancel(p.run, /*call_in_flight=*/false, "stop", p.now);
  ASSERT_TRUE(cancel.has_value());
  p.Apply(*cancel);
  EXPECT_EQ(p.run.state().stage(), rein::v1::WAITING);  // not before its children
  EXPECT_TRUE(p.run.state().cancel_requested());
  NextStep next = p.router.Next(p.run, p.now, /*not_before=*/p.now + absl::Hours(1));
  ASSERT_EQ(next.kind, NextStep::Kind::kCall);  // the cancel does not wait for the poll
  EXPECT_TRUE(next.effect.children.cancel);
  EXPECT_EQ(next.effect.children.cancel_reason, "the parent run was cancelled");
  std::optional<Transition> started = p.Children(p.Observe(rein::v1::DECIDING, rein::v1::DECIDING));
  ASSERT_TRUE(started.has_value());  // the children's run ids, recorded
  p.Apply(*started);
  EXPECT_EQ(p.run.state().stage(), rein::v1::WAITING);
  EXPECT_FALSE(p.Children(p.Observe(rein::v1::DECIDING, rein::v1::DECIDING)).has_value());
  std::optional<Transition> end = p.Children(p.Observe(rein::v1::CANCELLED, rein::v1::CANCELLED));
  ASSERT_TRUE(end.has_value());
  p.Apply(*end);
  EXPECT_EQ(p.run.state().stage(), rein::v1::CANCELLED);
  EXPECT_EQ(p.run.state().outcome().reason(), rein::v1::CANCELLED_BY_USER);
}

TEST(ChildGroupTest, DeadlineCancelsTheChildrenAndEndsTheParentWithItsReason) {
  Parent p;
  p.Apply(p.router.OnPlan(p.run, DelegatingPlan(1), p.now));
  p.Drive();
  p.now = FromProtoTime(p.run.state().deadline());
  NextStep next = p.router.Next(p.run, p.now);
  ASSERT_EQ(next.effect.kind, Effect::Kind::kChildren);
  EXPECT_TRUE(next.effect.children.cancel);
  std::optional<Transition> end = p.Children(p.Observe(rein::v1::FAILED, rein::v1::FAILED));
  ASSERT_TRUE(end.has_value());
  p.Apply(*end);
  EXPECT_EQ(p.run.state().stage(), rein::v1::FAILED);
  EXPECT_EQ(p.run.state().outcome().reason(), rein::v1::DEADLINE_EXCEEDED);
}

TEST(ChildGroupTest, ChildrenSpendingTheParentsIterationsEndTheParent) {
  Parent p([](rein::v1::RunSpec& s) { s.mutable_limits()->set_max_iterations(8); });
  p.Apply(p.router.OnPlan(p.run, DelegatingPlan(2, 1), p.now));
  NextStep next = p.Drive();
  const int share = next.effect.children.start[0].spec.limits().max_iterations();
  EXPECT_EQ(share, (8 - 2) / 2);
  ChildrenObserved observed = p.Observe(rein::v1::FAILED, rein::v1::FAILED);
  for (ChildRun& c : observed.children) c.set_iterations(share);
  p.Apply(*p.Children(observed));
  EXPECT_EQ(p.run.state().stage(), rein::v1::FAILED);
  EXPECT_EQ(p.run.state().outcome().reason(), rein::v1::MAX_ITERATIONS);
}

TEST(ChildGroupTest, SharesCarveByPercentAndWeightAndTheParentKeepsTheRest) {
  Parent p([](rein::v1::RunSpec& s) {
    s.mutable_limits()->set_max_iterations(42);
    s.mutable_limits()->set_token_budget(10000);
    s.mutable_child_share()->set_group_percent(50);
    (*s.mutable_child_share()->mutable_weights())["part0"] = 2;
  });
  p.Apply(p.router.OnPlan(p.run, DelegatingPlan(2, 1), p.now));
  NextStep next = p.Drive();
  ASSERT_EQ(next.effect.children.start.size(), 2u);
  // 40 iterations left: one for each child, and half of the other 38 shared 2:1.
  const rein::v1::Limits& big = next.effect.children.start[0].spec.limits();
  const rein::v1::Limits& small = next.effect.children.start[1].spec.limits();
  EXPECT_EQ(big.max_iterations(), 1 + 19 * 2 / 3);
  EXPECT_EQ(small.max_iterations(), 1 + 19 / 3);
  EXPECT_LT(big.token_budget() + small.token_budget(),
            (10000 - p.run.state().tokens_used()) / 2 + 1);
  EXPECT_GT(big.token_budget(), small.token_budget());
  // Children inherit the share for their own groups.
  EXPECT_EQ(next.effect.children.start[0].spec.child_share().group_percent(), 50);
  // Children spending all they got leave the parent its half of the 38 for the report.
  ChildrenObserved observed = p.Observe(rein::v1::FINISHED, rein::v1::FINISHED);
  observed.children[0].set_iterations(big.max_iterations());
  observed.children[1].set_iterations(small.max_iterations());
  p.Apply(*p.Children(observed));
  EXPECT_EQ(p.run.state().stage(), rein::v1::DECIDING);
  EXPECT_GE(42 - p.run.state().iteration(), 38 / 2);
}

// Each child gets at least one iteration; with uneven weights those floors must not take the
// parts past what the parent has left (weights 1, 1 and 100 over 3 iterations: 1 + 1 + 1).
TEST(ChildGroupTest, FloorsOfUnevenSharesNeverSumPastTheIterationsLeft) {
  Parent p([](rein::v1::RunSpec& s) {
    s.mutable_limits()->set_max_iterations(5);
    (*s.mutable_child_share()->mutable_weights())["part2"] = 100;
  });
  p.Apply(p.router.OnPlan(p.run, DelegatingPlan(3), p.now));
  NextStep next = p.Drive();
  ASSERT_EQ(next.effect.children.start.size(), 3u);
  const int left = 5 - p.run.state().iteration();
  int sum = 0;
  for (const ChildrenEffect::Start& start : next.effect.children.start) {
    EXPECT_GE(start.spec.limits().max_iterations(), 1);
    sum += start.spec.limits().max_iterations();
  }
  EXPECT_LE(sum, left);
  // Children that work all they got leave the parent within its max_iterations.
  ChildrenObserved observed = p.Observe(rein::v1::FINISHED, rein::v1::FINISHED);
  for (size_t i = 0; i < observed.children.size(); ++i) {
    observed.children[i].set_iterations(
        next.effect.children.start[i].spec.limits().max_iterations());
  }
  p.Apply(*p.Children(observed));
  EXPECT_LE(p.run.state().iteration(), 5);
}

TEST(ChildGroupTest, ChildThatCannotStartFailsItsSubtaskAtTheJoin) {
  Parent p;
  p.Apply(p.router.OnPlan(p.run, DelegatingPlan(2), p.now));
  p.Drive();
  ChildrenObserved observed = p.Observe(rein::v1::FINISHED, rein::v1::FINISHED);
  observed.children[1].clear_run_id();
  observed.children[1].set_start_error("the store is down");
  p.Apply(*p.Children(observed));
  ASSERT_EQ(p.run.state().stage(), rein::v1::PLANNING);
  EXPECT_EQ(p.run.state().completed_subtasks(1).status(), SubTask::FAILED);
  EXPECT_NE(p.run.state().completed_subtasks(1).summary().find("the store is down"),
            std::string::npos);
}

TEST(ChildGroupTest, ReadErrorCommitsNothing) {
  Parent p;
  p.Apply(p.router.OnPlan(p.run, DelegatingPlan(1), p.now));
  p.Drive();
  ChildrenObserved observed;
  observed.status = absl::UnavailableError("store down");
  EXPECT_FALSE(p.Children(observed).has_value());
}

TEST(ChildGroupTest, ChildDeadlineNeverPassesTheParents) {
  StageRouter router;
  rein::v1::RunSpec spec;
  spec.set_goal("child");
  *spec.mutable_limits()->mutable_deadline() = ToProtoDuration(absl::Minutes(10));
  rein::v1::Run child;
  Transition t = router.NewRun("c", "", spec, kStart, &child);
  ClampChildDeadline(kStart + absl::Minutes(1), &t, &child);
  EXPECT_EQ(FromProtoTime(child.state().deadline()), kStart + absl::Minutes(1));
  EXPECT_EQ(FromProtoTime(t.state.deadline()), kStart + absl::Minutes(1));
}

// Random trees: a parent whose groups' children end at random with random usage, cancels and
// deadlines at random. The parent always ends or pauses within its limits, never leaves WAITING
// while a child runs, and the tree's iterations never exceed the parent's max_iterations.
TEST(ChildGroupTest, RandomTreesEndWithinTheParentsLimits) {
  std::mt19937 rng(30);
  for (int trial = 0; trial < 300; ++trial) {
    const int max_iterations = 4 + static_cast<int>(rng() % 30);
    Parent p([&](rein::v1::RunSpec& s) {
      s.mutable_limits()->set_max_iterations(max_iterations);
      s.mutable_limits()->set_max_children(1 + static_cast<int>(rng() % 12));
      s.mutable_limits()->set_max_parallel_children(1 + static_cast<int>(rng() % 4));
      if (rng() % 2) s.mutable_child_share()->set_group_percent(static_cast<int>(rng() % 101));
    });
    int steps = 0;
    while (!StageRouter::IsTerminal(p.run.state().stage()) &&
           p.run.state().stage() != rein::v1::PAUSED) {
      ASSERT_LT(++steps, 2000) << "trial " << trial << " does not end";
      p.now += absl::Seconds(static_cast<int>(rng() % 20));
      if (rng() % 50 == 0) {
        if (auto t = p.router.OnCancel(p.run, /*call_in_flight=*/false, "", p.now)) p.Apply(*t);
      }
      NextStep next = p.Drive();
      if (StageRouter::IsTerminal(p.run.state().stage())) break;
      ASSERT_EQ(next.kind, NextStep::Kind::kCall);
      if (next.effect.kind == Effect::Kind::kPlan) {
        const int left = ChildrenLeft(p.run.spec(), p.run.state());
        const int group = std::min<int>(left, p.run.spec().limits().max_parallel_children());
        const int delegated = group == 0 ? 0 : 1 + static_cast<int>(rng() % group);
        p.Apply(p.router.OnPlan(
            p.run, DelegatingPlan(delegated, rng() % 2, absl::StrCat("s", steps, "-")), p.now));
        continue;
      }
      if (next.effect.kind == Effect::Kind::kChildren) {
        const rein::v1::Stage stages[] = {rein::v1::DECIDING, rein::v1::FINISHED, rein::v1::FAILED,
                                          rein::v1::CANCELLED};
        ChildrenObserved observed =
            p.Observe(stages[rng() % 4], stages[rng() % 4], static_cast<int>(rng() % 3));
        for (size_t i = 0; i < observed.children.size(); ++i) {
          const int cap = next.effect.children.group[i].limits().max_iterations();
          observed.children[i].set_iterations(static_cast<int>(rng() % (cap + 1)));
          observed.children[i].set_retries_used(0);
        }
        bool running = false;
        for (const ChildRun& c : observed.children) {
          running = running || !StageRouter::IsTerminal(c.stage());
        }
        std::optional<Transition> t = p.Children(observed);
        if (t) p.Apply(*t);
        if (running) {
          ASSERT_EQ(p.run.state().stage(), rein::v1::WAITING);
        }
        continue;
      }
      // Any other call: the subtask is judged done at once.
      if (next.effect.kind == Effect::Kind::kDecide) {
        rein::v1::DecideResponse d;
        d.mutable_tool_call()->set_tool("read_file");
        d.mutable_tool_call()->set_args_json(absl::StrCat(R"({"path":")", steps, R"("})"));
        p.Apply(p.router.OnDecide(p.run, d, p.now));
      } else if (next.effect.kind == Effect::Kind::kExecute) {
        rein::v1::ExecuteResponse e;
        e.set_ok(true);
        e.set_output(absl::StrCat(steps));
        p.Apply(p.router.OnExecute(p.run, e, p.now));
      } else if (next.effect.kind == Effect::Kind::kEvaluate) {
        rein::v1::EvaluateResponse e;
        e.set_status(rein::v1::RunEvent::Evaluation::COMPLETED);
        e.set_summary("done");
        p.Apply(p.router.OnEvaluate(p.run, e, p.now));
      } else {
        FAIL() << "unexpected call " << static_cast<int>(next.effect.kind);
      }
    }
    EXPECT_LE(p.run.state().iteration(), max_iterations) << "trial " << trial;
    EXPECT_LE(p.run.state().children_size(), p.run.spec().limits().max_children());
  }
}

}  // namespace
}  // namespace rein
