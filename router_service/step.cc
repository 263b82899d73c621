// Step: the builder of one transition, and the rules every transition applies.
#include "router_service/step.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/proto_time.h"
#include "common/status_reason.h"
#include "common/usage_payload.h"
#include "router_service/termination.h"

namespace rein {

using rein::v1::Pause;
using rein::v1::Run;
using rein::v1::RunEvent;
using rein::v1::RunSpec;
using rein::v1::RunState;
using rein::v1::Stage;
using rein::v1::SubTask;
using rein::v1::TerminationReason;
namespace {

// A state handed back by StageRouter::Recycle on this thread, for the next Step to copy into,
// and the largest one kept.
thread_local std::optional<RunState> recycled_state;
constexpr int kMaxRecycledStateBytes = 64 * 1024;

}  // namespace

bool IsFatalPlannerError(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kUnauthenticated:
    case absl::StatusCode::kPermissionDenied:
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kOutOfRange:
    case absl::StatusCode::kUnimplemented: return true;
    default: return false;
  }
}

void RecycleState(RunState&& used) {
  // A state keeps the capacity of its strings when cleared: a large one (long observations)
  // is not kept, so that each thread holds at most kMaxRecycledStateBytes. Its size as last
  // serialized (every committed state was) costs nothing to read.
  if (!recycled_state.has_value() && used.GetCachedSize() <= kMaxRecycledStateBytes) {
    recycled_state.emplace(std::move(used));
  }
}

Step::Step(const Run& run, absl::Time now) : run_(run), now_(now) {
  if (recycled_state.has_value()) {
    state_ = std::move(*recycled_state);
    recycled_state.reset();
  }
  state_.CopyFrom(run.state());
  state_.set_version(run.state().version() + 1);
}

Transition Step::Finish() && {
  Transition t;
  for (RunEvent& event : events_) {
    event.set_run_id(run_.run_id());
    *event.mutable_time() = ToProtoTime(now_);
    event.set_version(state_.version());
  }
  bool snapshot = state_.iteration() != old().iteration() || IsTerminalStage(state_.stage()) ||
                  (state_.stage() == rein::v1::PAUSED && old().stage() != rein::v1::PAUSED);
  if (snapshot) {
    Snapshot s;
    s.iteration = state_.iteration();
    s.version = state_.version();
    state_.SerializeToString(&s.state);
    t.snapshot = std::move(s);
  }
  t.attempt_failed =
      std::any_of(events_.begin(), events_.end(), [](const RunEvent& e) { return e.has_error(); });
  t.void_when_stopping = t.attempt_failed && !old().cancel_requested();
  t.dispatches_mutating_call = state_.call_dispatched() && !old().call_dispatched();
  if (IsTerminalStage(state_.stage()) && !IsTerminalStage(old().stage())) {
    t.forget_run.emplace().set_run_id(run_.run_id());
  }
  t.state = std::move(state_);
  t.events = std::move(events_);
  return t;
}

void Terminate(Step& s, Stage status, TerminationReason reason, const std::string& message) {
  RunState& st = s.state();
  st.clear_pause();
  st.clear_pending_call();
  st.set_call_dispatched(false);
  st.set_cancel_requested(false);
  auto* outcome = st.mutable_outcome();
  outcome->set_status(status);
  outcome->set_reason(reason);
  outcome->set_message(message);
  if (st.has_usage()) *outcome->mutable_usage() = st.usage();
  outcome->set_cost_usd(st.cost_used_usd());
  s.MoveTo(status);
  *s.AddEvent()->mutable_finished()->mutable_outcome() = *outcome;
}

// Applies rules 1-6; returns true when the run ended. A reply that could not be priced under a
// cost budget counts as over it (the last check of rule 6).
bool EndIfLimited(Step& s, bool begins_iteration) {
  std::optional<Verdict> verdict = CheckLimits(s.spec(), s.state(), s.now(), begins_iteration);
  if (!verdict && s.unpriced()) verdict = Verdict{rein::v1::COST_BUDGET_EXHAUSTED, *s.unpriced()};
  if (verdict) {
    Terminate(s, TerminalStageFor(verdict->reason), verdict->reason, verdict->message);
    return true;
  }
  return false;
}

void SetPause(Step& s, Pause pause) {
  s.state().clear_pending_call();
  s.MoveTo(rein::v1::PAUSED);
  *s.state().mutable_pause() = pause;
  *s.AddEvent()->mutable_paused()->mutable_pause() = std::move(pause);
}

// Pauses after rules 1-6 (a limit that fires wins over the pause).
void PauseRun(Step& s, Pause pause) {
  if (EndIfLimited(s, /*begins_iteration=*/false)) return;
  SetPause(s, std::move(pause));
}

void FinishRun(Step& s) {
  if (EndIfLimited(s, /*begins_iteration=*/false)) return;
  Terminate(
      s, rein::v1::FINISHED, rein::v1::GOAL_ACHIEVED,
      s.state().completed_subtasks_size() > 0
          ? absl::StrCat(
                "goal achieved; last: ",
                s.state().completed_subtasks(s.state().completed_subtasks_size() - 1).summary())
          : "goal achieved");
}

// Moves into a working stage after rules 1-6; an iteration begins when entering PLANNING or
// DECIDING from another stage.
void Enter(Step& s, Stage next) {
  bool begins =
      (next == rein::v1::PLANNING || next == rein::v1::DECIDING) && s.state().stage() != next;
  if (EndIfLimited(s, begins)) return;
  if (begins) s.state().set_iteration(s.state().iteration() + 1);
  s.state().clear_pause();
  s.MoveTo(next);
}

// Spends one unit of the retry budget for a failed stage attempt and stays in the stage.
// Returns the error event (valid until the next AddEvent) so callers can add to it.
RunEvent::Error* SpendRetry(Step& s, Stage stage, const std::string& code,
                            const std::string& message) {
  const bool spent = !CancelledOrPastDeadline(s.state(), s.now());
  if (spent) s.state().set_retries_used(s.state().retries_used() + 1);
  const size_t index = s.events().size();
  auto* error = s.AddEvent()->mutable_error();
  error->set_stage(stage);
  error->set_code(code);
  error->set_message(message);
  error->set_retry_spent(spent);
  EndIfLimited(s, /*begins_iteration=*/false);
  return s.events()[index].mutable_error();
}

// A planner error: fatal ones end the run at once, others spend a retry.
void PlannerFailed(Step& s, Stage stage, const absl::Status& status, const PriceTable* prices) {
  // A reply that failed validation still cost tokens (recorded in the event for replay). The
  // error does not say which model served it: the run's last one, else the one it asks for.
  std::optional<rein::v1::Usage> usage = UsageOf(status);
  if (usage) {
    ChargeReply(s, *usage,
                !s.state().planner_backend().empty()
                    ? s.state().planner_backend()
                    : absl::StrCat("anthropic:", s.spec().model().model()),
                prices);
  }
  if (IsFatalPlannerError(status.code())) {
    if (CancelledOrPastDeadline(s.state(), s.now())) {  // rules 1 and 3 come first
      auto* error = SpendRetry(s, stage, absl::StatusCodeToString(status.code()),
                               std::string(status.message()));
      if (usage) *error->mutable_usage() = *usage;
      return;
    }
    auto* error = s.AddEvent()->mutable_error();
    error->set_stage(stage);
    error->set_code(absl::StatusCodeToString(status.code()));
    error->set_message(std::string(status.message()));
    error->set_retry_spent(false);
    if (usage) *error->mutable_usage() = *usage;
    Terminate(s, rein::v1::FAILED, rein::v1::PLANNER_ERROR,
              absl::StrCat("planner error: ", status.message()));
    return;
  }
  auto* error =
      SpendRetry(s, stage, absl::StatusCodeToString(status.code()), std::string(status.message()));
  if (usage) *error->mutable_usage() = *usage;
}

// The router judged the planner's `reply` invalid; the reply is kept in the event for replay.
void InvalidOutput(Step& s, Stage stage, const std::string& what,
                   const google::protobuf::Message& reply) {
  auto* error = SpendRetry(s, stage, "INVALID_OUTPUT", absl::StrCat("invalid output: ", what));
  error->set_reply(reply.SerializeAsString());
}

// Adds one model reply's usage to the run: tokens_used (input, cache reads and writes, and
// output: the token budget's counter), the usage split and its cost at `backend`'s price
// ("anthropic:<model>"; other backends cost nothing). A reply that cannot be priced adds no
// cost; under a cost budget it marks the step (Step::unpriced), which ends the run.
void AddUsage(rein::v1::Usage* total, const rein::v1::Usage& usage) {
  total->set_input_tokens(total->input_tokens() + usage.input_tokens());
  total->set_output_tokens(total->output_tokens() + usage.output_tokens());
  total->set_cache_read_input_tokens(total->cache_read_input_tokens() +
                                     usage.cache_read_input_tokens());
  total->set_cache_creation_input_tokens(total->cache_creation_input_tokens() +
                                         usage.cache_creation_input_tokens());
}

void ChargeReply(Step& s, const rein::v1::Usage& usage, const std::string& backend,
                 const PriceTable* prices) {
  RunState& st = s.state();
  st.set_tokens_used(st.tokens_used() + usage.input_tokens() + usage.output_tokens() +
                     usage.cache_read_input_tokens() + usage.cache_creation_input_tokens());
  if (usage.ByteSizeLong() == 0) return;
  AddUsage(st.mutable_usage(), usage);
  absl::StatusOr<double> cost = ReplyCostUsd(prices, backend, usage);
  if (cost.ok()) {
    st.set_cost_used_usd(st.cost_used_usd() + *cost);
  } else if (s.spec().limits().cost_budget_usd() > 0) {
    s.set_unpriced(absl::StrCat(cost.status().message(), "; the cost budget cannot be kept"));
  }
}

// The backend a reply names, else (an older planner) the run's last one.
std::string BackendOf(const RunState& st, const std::string& backend) {
  return backend.empty() ? st.planner_backend() : backend;
}

void AddNote(Step& s, const std::string& notes, int max_notes) {
  if (notes.empty()) return;
  auto* list = s.state().mutable_notes();
  list->Add(std::string(notes));
  while (list->size() > max_notes) list->erase(list->begin());
}

bool PausesOnNotes(const RunSpec& spec) {
  return !spec.has_pause_on_notes() || spec.pause_on_notes();
}

bool CombinesEvaluateDecide(const RunSpec& spec) {
  return !spec.has_combine_evaluate_decide() || spec.combine_evaluate_decide();
}

bool CombinesPlanDecide(const RunSpec& spec) {
  return !spec.has_combine_plan_decide() || spec.combine_plan_decide();
}

bool HasPausePoint(const RunSpec& spec, rein::v1::PausePoint point) {
  for (int p : spec.pause_points()) {
    if (p == point) return true;
  }
  return false;
}

Pause MakePause(rein::v1::PauseReason reason, Stage resume, const std::string& detail) {
  Pause pause;
  pause.set_reason(reason);
  pause.set_resume_stage(resume);
  pause.set_detail(detail);
  return pause;
}

// Where the loop goes after EVALUATING (or after a review that finished an evaluation).
Stage NextAfterEvaluation(const RunState& st) {
  if (MayFinish(st)) return rein::v1::FINISHED;  // rule 8
  return st.subtasks_size() > 0 ? rein::v1::DECIDING : rein::v1::PLANNING;
}

// Goes to `next` from EVALUATING: rules 1-6, then stagnation (rule 7), then pauses, then the
// move. `pause` is a candidate pause (reason unset = none).
void ContinueAfterEvaluation(Step& s, Stage next, Pause pause) {
  if (EndIfLimited(s, next == rein::v1::DECIDING || next == rein::v1::PLANNING)) return;
  if (auto pattern = DetectStagnation(s.spec(), s.state())) {
    RunState& st = s.state();
    st.set_stagnation_mark(st.actions_total());
    auto mode = s.spec().limits().on_stagnation();
    if (mode == rein::v1::FAIL) {
      Terminate(s, rein::v1::FAILED, rein::v1::STAGNATION, *pattern);
      return;
    }
    if (mode == rein::v1::REPLAN_THEN_PAUSE && st.stagnation_replans() == 0) {
      st.set_stagnation_replans(st.stagnation_replans() + 1);
      st.set_replan_reason(absl::StrCat("stagnation: ", *pattern));
      if (st.subtasks_size() > 0) {
        EndSubtask(st, st.subtasks(0), SubTask::FAILED, absl::StrCat("stagnated: ", *pattern));
        st.mutable_subtasks()->erase(st.mutable_subtasks()->begin());
      }
      Enter(s, rein::v1::PLANNING);
      return;
    }
    SetPause(s, MakePause(rein::v1::STAGNATED, next, *pattern));
    return;
  }
  if (pause.reason() != rein::v1::PAUSE_REASON_UNSPECIFIED) {
    pause.set_resume_stage(next);
    SetPause(s, std::move(pause));
    return;
  }
  if (next == rein::v1::FINISHED) {
    FinishRun(s);
    return;
  }
  Enter(s, next);
}

// Whether a tool error says the run's workspace does not exist (the executor's NOT_FOUND
// "workspace \"<name>\" does not exist ...").
bool IsWorkspaceMissing(const rein::v1::ToolError& error) {
  return error.reason() == reason::kWorkspaceNotFound;
}

std::string WorkspaceGoneMessage(const Run& run, const rein::v1::ToolError& error) {
  return absl::StrCat("workspace \"", run.spec().workspace(), "\" ",
                      IsWorkspaceMissing(error) ? "no longer exists" : "is not usable",
                      " on the executors (", error.code(), ": ", error.message(), ")");
}

}  // namespace rein
