// ChildGroup: the pure rules of child runs.
#include "router_service/children/child_group.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/proto_time.h"
#include "router_service/children/child_share.h"
#include "router_service/step.h"
#include "router_service/subtasks.h"
#include "router_service/termination.h"

namespace rein {
namespace {

// RunSpec.goal's bound (common/limits.h kMaxTextBytes, whose name subtasks.h also uses).
constexpr size_t kMaxGoalBytes = 16 * 1024;

using rein::v1::ChildRun;
using rein::v1::Limits;
using rein::v1::Run;
using rein::v1::RunSpec;
using rein::v1::RunState;
using rein::v1::SubTask;

absl::Status CheckRange(int64_t value, int64_t lo, int64_t hi, const char* field) {
  if (value < lo || value > hi) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": must be in ", lo, "..", hi, ", got ", value));
  }
  return absl::OkStatus();
}

// Consecutive delegated subtasks on top of the stack.
int DelegatedOnTop(const RunState& st) {
  int n = 0;
  while (n < st.subtasks_size() && st.subtasks(n).delegate()) ++n;
  return n;
}

int64_t Tokens(const rein::v1::Usage& u) {
  return u.input_tokens() + u.output_tokens() + u.cache_read_input_tokens() +
         u.cache_creation_input_tokens();
}

const ChildRun* FindObserved(const ChildrenObserved& observed, const std::string& request_id) {
  for (const ChildRun& c : observed.children) {
    if (c.request_id() == request_id) return &c;
  }
  return nullptr;
}

}  // namespace

absl::Status NormalizeChildLimits(RunSpec* spec) {
  Limits* limits = spec->mutable_limits();
  if (auto s = CheckRange(limits->max_children(), 0, kMaxChildren, "spec.limits.max_children");
      !s.ok()) {
    return s;
  }
  if (limits->max_parallel_children() == 0) {
    limits->set_max_parallel_children(kDefaultParallelChildren);
  }
  if (auto s = CheckRange(limits->max_parallel_children(), 1, kMaxParallelChildren,
                          "spec.limits.max_parallel_children");
      !s.ok()) {
    return s;
  }
  if (limits->max_depth() == 0) limits->set_max_depth(kDefaultChildDepth);
  if (auto s = CheckRange(limits->max_depth(), 1, kMaxChildDepth, "spec.limits.max_depth");
      !s.ok()) {
    return s;
  }
  return CheckChildShare(*spec);
}

int ChildrenLeft(const RunSpec& spec, const RunState& st) {
  return std::max(0, spec.limits().max_children() - st.children_size());
}

void OfferDelegation(const RunSpec& spec, const RunState& st, rein::v1::PlanRequest* request) {
  const int left = ChildrenLeft(spec, st);
  if (left == 0) return;
  request->set_allow_delegation(true);
  request->set_max_parallel_children(spec.limits().max_parallel_children());
  request->set_children_left(left);
}

absl::Status CheckDelegation(const RunSpec& spec, const RunState& st,
                             const google::protobuf::RepeatedPtrField<SubTask>& planned,
                             const std::string& field) {
  const int left = ChildrenLeft(spec, st);
  const int parallel = std::max(1, spec.limits().max_parallel_children());
  int delegated = 0;
  int run = 0;
  for (int i = 0; i < planned.size(); ++i) {
    if (!planned[i].delegate()) {
      run = 0;
      continue;
    }
    const std::string at = absl::StrCat(field, "[", i, "].delegate");
    if (left == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(at, ": this run may start no child runs (limits.max_children ",
                       spec.limits().max_children(), ", ", st.children_size(), " started)"));
    }
    if (++delegated > left) {
      return absl::InvalidArgumentError(
          absl::StrCat(at, ": more delegated subtasks than the ", left, " child runs left"));
    }
    // The last planned subtasks continue into the delegated ones on top of the old stack.
    int below = 0;
    if (i == planned.size() - 1) below = DelegatedOnTop(st);
    if (++run + below > parallel) {
      return absl::InvalidArgumentError(absl::StrCat(at, ": ", run + below,
                                                     " consecutive delegated subtasks, at most ",
                                                     parallel, " (limits.max_parallel_children)"));
    }
  }
  return absl::OkStatus();
}

bool OpensGroup(const RunState& st) {
  return st.stage() == rein::v1::DECIDING && st.subtasks_size() > 0 && st.subtasks(0).delegate();
}

Limits CarveLimits(const Run& run, int k, absl::Time now) {
  k = std::max(k, 1);
  return CarveLimits(run, k, 1, k, now);
}

Limits CarveLimits(const Run& run, int k, int weight, int total_weight, absl::Time now) {
  const RunSpec& spec = run.spec();
  const RunState& st = run.state();
  const Limits& parent = spec.limits();
  Limits l = parent;
  k = std::max(k, 1);
  // Iterations: the children's are added to the parent's at the join, so their sum may not
  // exceed what the parent has left. Each child gets one (OpenGroup starts at most as many
  // children as iterations are left) plus its part of the rest, so the floors never add up
  // past it; with equal parts this is (left / k).
  const int iter_left = std::max(0, parent.max_iterations() - st.iteration());
  l.set_max_iterations(static_cast<int32_t>(
      1 + SharePart(spec, int64_t{std::max(0, iter_left - k)}, weight, total_weight)));
  // Retries: a run spends at most retry_budget + 1 (rule 4 ends it at the one past its budget),
  // so the children spend at most the sum of their parts of left + 1.
  const int retry_left = std::max(0, parent.retry_budget() - st.retries_used());
  l.set_retry_budget(static_cast<int32_t>(
      std::max<int64_t>(0, SharePart(spec, int64_t{retry_left} + 1, weight, total_weight) - 1)));
  if (parent.token_budget() > 0) {
    const int64_t left = std::max<int64_t>(0, parent.token_budget() - st.tokens_used());
    l.set_token_budget(std::max<int64_t>(1, SharePart(spec, left, weight, total_weight)));
  }
  if (parent.cost_budget_usd() > 0) {
    const double left = std::max(0.0, parent.cost_budget_usd() - st.cost_used_usd());
    l.set_cost_budget_usd(std::max(1e-9, SharePart(spec, left, weight, total_weight)));
  }
  const absl::Time deadline =
      st.has_deadline() ? FromProtoTime(st.deadline()) : now + absl::Hours(24 * 7);
  *l.mutable_deadline() = ToProtoDuration(std::max(absl::Milliseconds(1), deadline - now));
  const int children_left = std::max(0, ChildrenLeft(spec, st) - k);
  l.set_max_children(parent.max_depth() > 1 ? children_left / k : 0);
  l.set_max_depth(std::max(1, parent.max_depth() - 1));
  return l;
}

RunSpec ChildSpec(const Run& parent, const ChildRun& member, const SubTask& task) {
  const RunSpec& p = parent.spec();
  RunSpec c;
  c.set_goal(Cap(
      absl::StrCat(task.description(),
                   "\n\n(This is one part of a larger goal, run as a child run: ", p.goal(), ")"),
      kMaxGoalBytes));
  c.set_workspace(p.workspace());
  *c.mutable_tools() = task.allowed_tools();
  *c.mutable_limits() = member.limits();
  *c.mutable_pause_points() = p.pause_points();
  if (p.has_pause_on_notes()) c.set_pause_on_notes(p.pause_on_notes());
  *c.mutable_model() = p.model();
  *c.mutable_labels() = p.labels();
  if (p.has_combine_evaluate_decide()) c.set_combine_evaluate_decide(p.combine_evaluate_decide());
  if (p.has_combine_plan_decide()) c.set_combine_plan_decide(p.combine_plan_decide());
  *c.mutable_child_share() = p.child_share();
  // A child is its parent's namespace's: seen, acted on and charged there, its tool calls in
  // that namespace's workspaces. It tells the parent's webhooks of its pauses and end, since a
  // child's pause holds its parent.
  c.set_namespace_(p.namespace_());
  *c.mutable_notify() = p.notify();
  c.mutable_parent()->set_run_id(parent.run_id());
  c.mutable_parent()->set_group(member.group());
  c.mutable_parent()->set_subtask_id(member.subtask_id());
  return c;
}

std::vector<ChildRun> CurrentGroup(const RunState& st) {
  std::vector<ChildRun> group;
  for (const ChildRun& c : st.children()) {
    if (c.group() == st.child_groups()) group.push_back(c);
  }
  return group;
}

Transition OpenGroup(const StageRouterOptions& options, const Run& run, absl::Time now) {
  (void)options;
  Step s(run, now);
  RunState& st = s.state();
  if (EndIfLimited(s, /*begins_iteration=*/false)) return std::move(s).Finish();
  // A call a plan proposed for the top subtask has no use: the subtask runs as a child.
  st.clear_pending_call();
  st.set_call_dispatched(false);
  const Limits& limits = run.spec().limits();
  const int k = std::min({DelegatedOnTop(st), std::max(1, limits.max_parallel_children()),
                          ChildrenLeft(run.spec(), st),
                          std::max(0, limits.max_iterations() - st.iteration())});
  if (k <= 0) {
    // Only a reviewer's edited plan gets here (a plan's delegation is checked): the subtask
    // cannot run as a child, and fails.
    EndSubtask(st, st.subtasks(0), SubTask::FAILED,
               absl::StrCat("cannot run as a child run: no child runs left (limits.max_children ",
                            limits.max_children(), ")"));
    st.mutable_subtasks()->erase(st.mutable_subtasks()->begin());
    ContinueAfterEvaluation(s, NextAfterEvaluation(st), rein::v1::Pause());
    return std::move(s).Finish();
  }
  const int group = st.child_groups() + 1;
  st.set_child_groups(group);
  int total_weight = 0;
  for (int i = 0; i < k; ++i) total_weight += ShareWeight(run.spec(), st.subtasks(i).id());
  auto* event = s.AddEvent()->mutable_child_group();
  event->set_group(group);
  for (int i = 0; i < k; ++i) {
    SubTask* task = st.mutable_subtasks(i);
    task->set_status(SubTask::IN_PROGRESS);
    ChildRun* member = st.add_children();
    member->set_subtask_id(task->id());
    member->set_group(group);
    member->set_request_id(absl::StrCat(kChildRequestIdPrefix, run.run_id(), ":", group, ":", i));
    *member->mutable_limits() =
        CarveLimits(run, k, ShareWeight(run.spec(), task->id()), total_weight, now);
    *event->add_children() = *member;
  }
  s.MoveTo(rein::v1::WAITING);
  return std::move(s).Finish();
}

NextStep NextWaiting(const Run& run, absl::Time now, absl::Time not_before) {
  NextStep next;
  const RunState& st = run.state();
  const absl::Time deadline =
      st.has_deadline() ? FromProtoTime(st.deadline()) : absl::InfiniteFuture();
  const bool cancel = CancelledOrPastDeadline(st, now);
  if (now < not_before && !cancel) {
    next.kind = NextStep::Kind::kWaitUntil;
    next.until = std::min(not_before, deadline);  // the deadline cancels the children
    return next;
  }
  next.kind = NextStep::Kind::kCall;
  Effect& effect = next.effect;
  effect.kind = Effect::Kind::kChildren;
  effect.deadline = deadline;
  ChildrenEffect& children = effect.children;
  children.group = CurrentGroup(st);
  children.cancel = cancel;
  children.cancel_reason =
      st.cancel_requested() ? "the parent run was cancelled" : "the parent run's deadline passed";
  for (const ChildRun& member : children.group) {
    if (!member.run_id().empty() || !member.start_error().empty()) continue;
    SubTask task;
    task.set_id(member.subtask_id());
    task.set_description(member.subtask_id());
    for (const SubTask& t : st.subtasks()) {
      if (t.id() == member.subtask_id()) task = t;
    }
    children.start.push_back({member, ChildSpec(run, member, task), deadline});
  }
  return next;
}

rein::v1::ChildRun ObserveChild(const ChildRun& member, const Run& child, size_t cap) {
  ChildRun v = member;
  const RunState& st = child.state();
  v.set_run_id(child.run_id());
  v.set_stage(st.stage());
  if (!IsTerminalStage(st.stage())) return v;
  *v.mutable_outcome() = st.outcome();
  std::string summary = st.outcome().message();
  if (st.stage() == rein::v1::FINISHED && st.completed_subtasks_size() > 0) {
    summary = st.completed_subtasks(st.completed_subtasks_size() - 1).summary();
  }
  v.set_summary(Cap(summary, cap));
  v.set_iterations(st.iteration());
  v.set_retries_used(st.retries_used());
  return v;
}

std::optional<Transition> OnChildren(const StageRouterOptions& options, const Run& run,
                                     const ChildrenObserved& observed, absl::Time now) {
  if (!observed.status.ok() || run.state().stage() != rein::v1::WAITING) return std::nullopt;
  Step s(run, now);
  RunState& st = s.state();
  const int group = st.child_groups();
  bool all_ended = true;
  rein::v1::RunEvent::ChildrenStarted started;
  started.set_group(group);
  for (ChildRun& m : *st.mutable_children()) {
    if (m.group() != group) continue;
    const ChildRun* v = FindObserved(observed, m.request_id());
    if (v == nullptr) {
      all_ended = false;
      continue;
    }
    if (m.run_id().empty() && m.start_error().empty() &&
        (!v->run_id().empty() || !v->start_error().empty())) {
      m.set_run_id(v->run_id());
      m.set_start_error(v->start_error());
      *started.add_children() = m;
    }
    if (m.start_error().empty() && !IsTerminalStage(v->stage())) all_ended = false;
  }
  if (started.children_size() > 0) *s.AddEvent()->mutable_children_started() = started;
  if (!all_ended) {
    if (started.children_size() == 0) return std::nullopt;
    return std::move(s).Finish();
  }
  auto* joined = s.AddEvent()->mutable_children_joined();
  joined->set_group(group);
  std::string observation;
  for (ChildRun& m : *st.mutable_children()) {
    if (m.group() != group) continue;
    if (!m.start_error().empty()) {
      m.mutable_outcome()->set_status(rein::v1::FAILED);
      m.mutable_outcome()->set_reason(rein::v1::INTERNAL);
      m.mutable_outcome()->set_message(m.start_error());
      m.set_summary(Cap(absl::StrCat("the child run could not start: ", m.start_error()),
                        options.max_observation_bytes));
    } else {
      const ChildRun& v = *FindObserved(observed, m.request_id());
      *m.mutable_outcome() = v.outcome();
      m.set_summary(Cap(v.summary(), options.max_observation_bytes));
      m.set_iterations(v.iterations());
      m.set_retries_used(v.retries_used());
      m.set_stage(v.stage());
    }
    const rein::v1::Outcome& o = m.outcome();
    st.set_iteration(st.iteration() + m.iterations());
    st.set_retries_used(st.retries_used() + m.retries_used());
    st.set_tokens_used(st.tokens_used() + Tokens(o.usage()));
    if (o.usage().ByteSizeLong() > 0) {
      AddUsage(st.mutable_usage(), o.usage());
      AddUsage(joined->mutable_usage(), o.usage());
    }
    st.set_cost_used_usd(st.cost_used_usd() + o.cost_usd());
    // The child's own row counts what it spent in its namespace's usage.
    st.set_inherited_tokens(st.inherited_tokens() + Tokens(o.usage()));
    st.set_inherited_cost_usd(st.inherited_cost_usd() + o.cost_usd());
    joined->set_cost_usd(joined->cost_usd() + o.cost_usd());
    *joined->add_children() = m;
    const bool ok = o.status() == rein::v1::FINISHED;
    const std::string result =
        absl::StrCat("child run ", m.run_id().empty() ? "(not started)" : m.run_id(), " ",
                     rein::v1::Stage_Name(o.status()), " (",
                     rein::v1::TerminationReason_Name(o.reason()), "): ", m.summary());
    absl::StrAppend(&observation, m.subtask_id(), ": ", result, "\n");
    for (int i = 0; i < st.subtasks_size(); ++i) {
      if (st.subtasks(i).id() != m.subtask_id()) continue;
      EndSubtask(st, st.subtasks(i), ok ? SubTask::COMPLETED : SubTask::FAILED, result);
      st.mutable_subtasks()->erase(st.mutable_subtasks()->begin() + i);
      break;
    }
  }
  st.set_latest_observation(Cap(observation, options.max_observation_bytes));
  ContinueAfterEvaluation(s, NextAfterEvaluation(st), rein::v1::Pause());
  return std::move(s).Finish();
}

void ClampChildDeadline(absl::Time parent_deadline, Transition* t, Run* child) {
  if (parent_deadline == absl::InfiniteFuture()) return;
  if (FromProtoTime(child->state().deadline()) <= parent_deadline) return;
  *child->mutable_state()->mutable_deadline() = ToProtoTime(parent_deadline);
  *t->state.mutable_deadline() = ToProtoTime(parent_deadline);
}

}  // namespace rein
