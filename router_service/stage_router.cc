// StageRouter: the pure stage logic of a run.
#include "router_service/stage_router.h"

#include <algorithm>
#include <set>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/proto_time.h"
#include "common/status_macros.h"
#include "common/usage_payload.h"
#include "nlohmann/json.hpp"
#include "router_service/price_table.h"
#include "router_service/termination.h"

namespace rein {
namespace {

using rein::v1::Action;
using rein::v1::HumanInput;
using rein::v1::Pause;
using rein::v1::Run;
using rein::v1::RunEvent;
using rein::v1::RunSpec;
using rein::v1::RunState;
using rein::v1::Stage;
using rein::v1::SubTask;
using rein::v1::TerminationReason;
using rein::v1::ToolCall;
using rein::v1::ToolSpec;

constexpr int kMaxSubtasksPerPlan = 64;   // per plan or edited plan
constexpr int kMaxPendingSubtasks = 256;  // on the stack at once
constexpr size_t kMaxTextBytes = 4096;    // a subtask's description or summary
constexpr int kMaxCompletedKept = 200;    // ended subtasks kept in RunState (the log has all)

std::string Cap(const std::string& text, size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  size_t cut = max_bytes;
  // Do not split a UTF-8 sequence.
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return absl::StrCat(text.substr(0, cut), "\n[observation truncated: ", text.size() - cut,
                      " bytes omitted]");
}

bool IsJsonObject(const std::string& text) {
  nlohmann::json parsed = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  return parsed.is_object();
}

// A state handed back by StageRouter::Recycle on this thread, for the next Step to copy into,
// and the largest one kept.
thread_local std::optional<RunState> recycled_state;
constexpr int kMaxRecycledStateBytes = 64 * 1024;

// Builds one transition: a copy of the state with version + 1, and its events.
class Step {
 public:
  Step(const Run& run, absl::Time now) : run_(run), now_(now) {
    if (recycled_state.has_value()) {
      state_ = std::move(*recycled_state);
      recycled_state.reset();
    }
    state_.CopyFrom(run.state());
    state_.set_version(run.state().version() + 1);
  }

  const Run& run() const { return run_; }
  const RunSpec& spec() const { return run_.spec(); }
  const RunState& old() const { return run_.state(); }
  RunState& state() { return state_; }
  const RunState& state() const { return state_; }
  absl::Time now() const { return now_; }

  RunEvent* AddEvent() {
    events_.emplace_back();
    return &events_.back();
  }
  std::vector<RunEvent>& events() { return events_; }

  // A reply of this step could not be priced while the run has a cost budget (ChargeReply):
  // rule 6's cost budget then ends the run, whatever the counters say.
  const std::optional<std::string>& unpriced() const { return unpriced_; }
  void set_unpriced(std::string why) { unpriced_ = std::move(why); }

  void MoveTo(Stage next) {
    if (state_.stage() == next) return;
    auto* changed = AddEvent()->mutable_stage_changed();
    changed->set_from(state_.stage());
    changed->set_to(next);
    state_.set_stage(next);
  }

  Transition Finish() && {
    Transition t;
    for (RunEvent& event : events_) {
      event.set_run_id(run_.run_id());
      *event.mutable_time() = ToProtoTime(now_);
      event.set_version(state_.version());
    }
    bool snapshot = state_.iteration() != old().iteration() ||
                    StageRouter::IsTerminal(state_.stage()) ||
                    (state_.stage() == rein::v1::PAUSED && old().stage() != rein::v1::PAUSED);
    if (snapshot) {
      Snapshot s;
      s.iteration = state_.iteration();
      s.version = state_.version();
      state_.SerializeToString(&s.state);
      t.snapshot = std::move(s);
    }
    t.state = std::move(state_);
    t.events = std::move(events_);
    return t;
  }

 private:
  const Run& run_;
  absl::Time now_;
  RunState state_;
  std::vector<RunEvent> events_;
  std::optional<std::string> unpriced_;
};

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

void ChargeReply(Step& s, const rein::v1::Usage& usage, const std::string& backend,
                 const PriceTable* prices);

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
  if (StageRouter::IsFatalPlannerError(status.code())) {
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
void ChargeReply(Step& s, const rein::v1::Usage& usage, const std::string& backend,
                 const PriceTable* prices) {
  RunState& st = s.state();
  st.set_tokens_used(st.tokens_used() + usage.input_tokens() + usage.output_tokens() +
                     usage.cache_read_input_tokens() + usage.cache_creation_input_tokens());
  if (usage.ByteSizeLong() == 0) return;
  rein::v1::Usage* total = st.mutable_usage();
  total->set_input_tokens(total->input_tokens() + usage.input_tokens());
  total->set_output_tokens(total->output_tokens() + usage.output_tokens());
  total->set_cache_read_input_tokens(total->cache_read_input_tokens() +
                                     usage.cache_read_input_tokens());
  total->set_cache_creation_input_tokens(total->cache_creation_input_tokens() +
                                         usage.cache_creation_input_tokens());
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

const ToolSpec* FindTool(const RunState& st, const std::string& name) {
  for (const ToolSpec& tool : st.tools()) {
    if (tool.name() == name) return &tool;
  }
  return nullptr;
}

// Moves `task` to the ended subtasks with `status` and `summary` (capped), keeping at most
// kMaxCompletedKept of them.
void EndSubtask(RunState& st, const SubTask& task, SubTask::Status status,
                const std::string& summary) {
  SubTask* ended = st.add_completed_subtasks();
  *ended = task;
  ended->set_status(status);
  ended->set_summary(Cap(summary, kMaxTextBytes));
  if (st.completed_subtasks_size() > kMaxCompletedKept) {
    st.mutable_completed_subtasks()->erase(st.mutable_completed_subtasks()->begin(),
                                           st.mutable_completed_subtasks()->begin() +
                                               (st.completed_subtasks_size() - kMaxCompletedKept));
  }
}

// Ends every pending subtask (the stack) as FAILED with `why`.
void DropStack(RunState& st, const std::string& why) {
  const std::string summary = Cap(why, 512);
  google::protobuf::RepeatedPtrField<SubTask> stack;
  stack.Swap(st.mutable_subtasks());
  for (const SubTask& task : stack) EndSubtask(st, task, SubTask::FAILED, summary);
}

// Validates subtasks from the planner or a reviewer; fills in defaults. `field` prefixes
// error messages.
absl::Status ValidateSubtasks(const RunState& st, const std::string& field,
                              google::protobuf::RepeatedPtrField<SubTask>* tasks) {
  if (tasks->size() > kMaxSubtasksPerPlan) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": ", tasks->size(), " subtasks, at most ", kMaxSubtasksPerPlan));
  }
  if (st.subtasks_size() + tasks->size() > kMaxPendingSubtasks) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": the stack would hold ",
                                                   st.subtasks_size() + tasks->size(),
                                                   " subtasks, at most ", kMaxPendingSubtasks));
  }
  std::set<std::string> seen;
  for (const SubTask& t : st.subtasks()) seen.insert(t.id());
  for (const SubTask& t : st.completed_subtasks()) seen.insert(t.id());
  for (int i = 0; i < tasks->size(); ++i) {
    SubTask& task = tasks->at(i);
    std::string at = absl::StrCat(field, "[", i, "]");
    if (task.id().empty() || task.id().size() > 128) {
      return absl::InvalidArgumentError(absl::StrCat(at, ".id: must be 1..128 bytes"));
    }
    if (!seen.insert(task.id()).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(at, ".id: \"", task.id(), "\" is not unique in the run"));
    }
    if (task.description().empty() || task.description().size() > kMaxTextBytes) {
      return absl::InvalidArgumentError(
          absl::StrCat(at, ".description: must be 1..", kMaxTextBytes, " bytes"));
    }
    std::set<std::string> tools;
    for (int k = 0; k < task.allowed_tools_size(); ++k) {
      const std::string& name = task.allowed_tools(k);
      if (FindTool(st, name) == nullptr) {
        return absl::InvalidArgumentError(absl::StrCat(at, ".allowed_tools[", k, "]: \"", name,
                                                       "\" is not one of the run's tools"));
      }
      if (!tools.insert(name).second) {
        return absl::InvalidArgumentError(
            absl::StrCat(at, ".allowed_tools[", k, "]: \"", name, "\" is listed twice"));
      }
    }
    if (task.allowed_tools_size() == 0) {
      for (const ToolSpec& tool : st.tools()) task.add_allowed_tools(tool.name());
    }
    task.set_status(SubTask::PENDING);
    task.clear_summary();
  }
  return absl::OkStatus();
}

// A call chosen for the top subtask; error when the tool is not allowed or args are bad.
absl::StatusOr<ToolCall> MakeCall(const Run& run, RunState& st, const std::string& tool,
                                  const std::string& args_json, const std::string& field) {
  if (st.subtasks_size() == 0) {
    return absl::FailedPreconditionError("no subtask to call a tool for");
  }
  const SubTask& top = st.subtasks(0);
  if (std::find(top.allowed_tools().begin(), top.allowed_tools().end(), tool) ==
      top.allowed_tools().end()) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ".tool: \"", tool, "\" is not allowed for subtask \"", top.id(),
                     "\" (allowed: ", absl::StrJoin(top.allowed_tools(), ", "), ")"));
  }
  const ToolSpec* spec = FindTool(st, tool);
  if (spec == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(field, ".tool: unknown tool \"", tool, "\""));
  }
  if (!IsJsonObject(args_json)) {
    return absl::InvalidArgumentError(absl::StrCat(field, ".args_json: must be a JSON object"));
  }
  ToolCall call;
  st.set_call_counter(st.call_counter() + 1);
  call.set_call_id(absl::StrCat(run.run_id(), "-", st.call_counter()));
  call.set_tool(tool);
  call.set_args_json(args_json);
  call.set_mutating(spec->mutating());
  return call;
}

// Why the call an evaluation proposed cannot be the next decision, or nullopt when it can:
// asked for, with NEEDS_MORE_WORK and no goal claim, and a call a Decide reply could carry (a
// tool the top subtask may use, a JSON object of arguments).
std::optional<std::string> ProposalProblem(const Run& run, const RunState& st,
                                           const rein::v1::EvaluateResponse& reply) {
  if (!CombinesEvaluateDecide(run.spec())) {
    return "not asked for: the run's combine_evaluate_decide is false";
  }
  if (reply.status() != rein::v1::RunEvent::Evaluation::NEEDS_MORE_WORK || reply.goal_achieved()) {
    return "a next call comes only with status NEEDS_MORE_WORK and goal_achieved false";
  }
  RunState scratch = st;  // MakeCall bumps the call counter: the real call is made later
  absl::StatusOr<ToolCall> call =
      MakeCall(run, scratch, reply.next_call().tool(), reply.next_call().args_json(), "next_call");
  if (!call.ok()) return std::string(call.status().message());
  return std::nullopt;
}

// Why the first call a plan proposed cannot be the next decision, or nullopt when it can: asked
// for, and a call a Decide reply for the plan's top subtask could carry. `st` holds the applied
// plan (its top subtask on top of the stack).
std::optional<std::string> FirstCallProblem(const Run& run, const RunState& st,
                                            const rein::v1::PlanResponse& reply, int planned) {
  if (!CombinesPlanDecide(run.spec())) {
    return "not asked for: the run's combine_plan_decide is false";
  }
  if (planned == 0) return "the plan has no subtasks";
  if (reply.first_call().tool().empty()) return "first_call.tool: missing";
  RunState scratch = st;  // MakeCall bumps the call counter: the real call is made later
  absl::StatusOr<ToolCall> call = MakeCall(run, scratch, reply.first_call().tool(),
                                           reply.first_call().args_json(), "first_call");
  if (!call.ok()) return std::string(call.status().message());
  return std::nullopt;
}

// Keeps the proposed call `call` as the DECIDING stage's pending call when the transition in
// `s` went on to DECIDING: Next commits it as the decision (OnProposedCall), after the checks of
// rules 1 and 3, as if a Decide reply had come. Otherwise returns why it was not kept.
std::optional<std::string> KeepProposedCall(Step& s, const ToolCall& call) {
  RunState& st = s.state();
  if (st.stage() == rein::v1::DECIDING) {
    st.mutable_pending_call()->set_tool(call.tool());
    st.mutable_pending_call()->set_args_json(call.args_json());
    return std::nullopt;
  }
  return absl::StrCat("the run went on to ", rein::v1::Stage_Name(st.stage()),
                      st.stage() == rein::v1::PAUSED
                          ? absl::StrCat(" (", rein::v1::PauseReason_Name(st.pause().reason()), ")")
                          : "",
                      ", not DECIDING");
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
bool IsWorkspaceMissing(const Run& run, const rein::v1::ToolError& error) {
  return error.code() == "NOT_FOUND" &&
         absl::StartsWith(error.message(),
                          absl::StrCat("workspace \"", run.spec().workspace(), "\""));
}

std::string WorkspaceGoneMessage(const Run& run, const rein::v1::ToolError& error) {
  return absl::StrCat("workspace \"", run.spec().workspace(), "\" ",
                      IsWorkspaceMissing(run, error) ? "no longer exists" : "is not usable",
                      " on the executors (", error.code(), ": ", error.message(), ")");
}

}  // namespace

void StageRouter::Recycle(RunState&& used) {
  // A state keeps the capacity of its strings when cleared: a large one (long observations)
  // is not kept, so that each thread holds at most kMaxRecycledStateBytes. Its size as last
  // serialized (every committed state was) costs nothing to read.
  if (!recycled_state.has_value() && used.GetCachedSize() <= kMaxRecycledStateBytes) {
    recycled_state.emplace(std::move(used));
  }
}

bool StageRouter::IsTerminal(Stage stage) {
  return stage == rein::v1::FINISHED || stage == rein::v1::FAILED || stage == rein::v1::CANCELLED;
}

bool StageRouter::IsFatalPlannerError(absl::StatusCode code) {
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

Transition StageRouter::NewRun(const std::string& run_id, const std::string& request_id,
                               const RunSpec& spec, absl::Time now, Run* run) const {
  run->set_run_id(run_id);
  run->set_request_id(request_id);
  *run->mutable_spec() = spec;
  *run->mutable_created_at() = ToProtoTime(now);
  *run->mutable_updated_at() = ToProtoTime(now);
  RunState* st = run->mutable_state();
  st->set_stage(rein::v1::STAGE_UNSPECIFIED);
  st->set_version(0);
  *st->mutable_started_at() = ToProtoTime(now);
  *st->mutable_deadline() = ToProtoTime(now + FromProtoDuration(spec.limits().deadline()));
  Step s(*run, now);
  s.MoveTo(rein::v1::INITIALIZING);
  s.events().back().mutable_stage_changed()->set_log_format(kLogFormat);
  Transition t = std::move(s).Finish();
  *run->mutable_state() = t.state;
  return t;
}

Effect StageRouter::NextEffect(const Run& run, absl::Time now) const {
  Effect effect;
  const RunState& st = run.state();
  const RunSpec& spec = run.spec();
  absl::Time deadline = st.has_deadline() ? FromProtoTime(st.deadline()) : absl::InfiniteFuture();
  effect.deadline = std::min(now + FromProtoDuration(spec.limits().stage_timeout()), deadline);
  switch (st.stage()) {
    case rein::v1::INITIALIZING: effect.kind = Effect::Kind::kListTools; break;
    case rein::v1::PLANNING: {
      effect.kind = Effect::Kind::kPlan;
      auto& req = effect.plan;
      req.set_run_id(run.run_id());
      req.set_goal(spec.goal());
      int first = std::max(0, st.completed_subtasks_size() - options_.max_completed_in_plan);
      for (int i = first; i < st.completed_subtasks_size(); ++i) {
        *req.add_completed() = st.completed_subtasks(i);
      }
      req.set_latest_observation(st.latest_observation());
      int h = std::max(0, st.human_inputs_size() - options_.max_human_inputs_in_request);
      for (int i = h; i < st.human_inputs_size(); ++i) *req.add_human_inputs() = st.human_inputs(i);
      *req.mutable_tools() = st.tools();
      req.set_replan_reason(st.replan_reason());
      req.set_propose_first_call(CombinesPlanDecide(spec));
      *req.mutable_model() = spec.model();
      req.set_iteration(st.iteration());
      break;
    }
    case rein::v1::DECIDING: {
      if (st.subtasks_size() == 0) break;  // cannot happen: DECIDING needs a subtask
      effect.kind = Effect::Kind::kDecide;
      auto& req = effect.decide;
      req.set_run_id(run.run_id());
      req.set_goal(spec.goal());
      *req.mutable_subtask() = st.subtasks(0);
      for (const std::string& name : st.subtasks(0).allowed_tools()) {
        if (const ToolSpec* tool = FindTool(st, name)) *req.add_tools() = *tool;
      }
      *req.mutable_run_tools() = st.tools();
      int a = std::max(0, st.recent_actions_size() - options_.decide_actions);
      for (int i = a; i < st.recent_actions_size(); ++i) {
        *req.add_recent_actions() = st.recent_actions(i);
      }
      int h = std::max(0, st.human_inputs_size() - options_.max_human_inputs_in_request);
      for (int i = h; i < st.human_inputs_size(); ++i) *req.add_human_inputs() = st.human_inputs(i);
      *req.mutable_model() = spec.model();
      req.set_iteration(st.iteration());
      break;
    }
    case rein::v1::EXECUTING: {
      effect.kind = Effect::Kind::kExecute;
      auto& req = effect.execute;
      req.set_call_id(st.pending_call().call_id());
      req.set_run_id(run.run_id());
      req.set_workspace(spec.workspace());
      req.set_tool(st.pending_call().tool());
      req.set_args_json(st.pending_call().args_json());
      // The schema the run pinned at INITIALIZING: the executor refuses a changed tool.
      if (const ToolSpec* tool = FindTool(st, st.pending_call().tool())) {
        req.set_tool_schema_hash(tool->schema_hash());
      }
      *req.mutable_limits()->mutable_timeout() =
          ToProtoDuration(std::max(absl::ZeroDuration(), effect.deadline - now));
      break;
    }
    case rein::v1::EVALUATING: {
      if (st.subtasks_size() == 0 || st.recent_actions_size() == 0) break;
      effect.kind = Effect::Kind::kEvaluate;
      auto& req = effect.evaluate;
      req.set_run_id(run.run_id());
      req.set_goal(spec.goal());
      *req.mutable_subtask() = st.subtasks(0);
      *req.mutable_action() = st.recent_actions(st.recent_actions_size() - 1);
      req.set_observation(st.latest_observation());
      *req.mutable_run_tools() = st.tools();
      req.set_propose_next(CombinesEvaluateDecide(spec));
      *req.mutable_model() = spec.model();
      req.set_iteration(st.iteration());
      break;
    }
    default: break;
  }
  return effect;
}

Transition StageRouter::OnTools(
    const Run& run, const absl::StatusOr<rein::v1::ListToolsResponse>& tools,
    const std::optional<absl::StatusOr<rein::v1::ExecuteResponse>>& workspace,
    absl::Time now) const {
  Step s(run, now);
  if (!tools.ok()) {
    SpendRetry(s, rein::v1::INITIALIZING, absl::StatusCodeToString(tools.status().code()),
               absl::StrCat("executor ListTools: ", tools.status().message()));
    return std::move(s).Finish();
  }
  if (workspace.has_value()) {
    if (!workspace->ok()) {
      SpendRetry(s, rein::v1::INITIALIZING, absl::StatusCodeToString(workspace->status().code()),
                 absl::StrCat("executor workspace check: ", workspace->status().message()));
      return std::move(s).Finish();
    }
    if (!(*workspace)->ok()) {
      if (EndIfLimited(s, /*begins_iteration=*/false)) return std::move(s).Finish();
      // No tool can run without the workspace, and retrying cannot bring it back.
      Terminate(s, rein::v1::FAILED, rein::v1::CONSECUTIVE_TOOL_FAILURES,
                WorkspaceGoneMessage(run, (*workspace)->error()));
      return std::move(s).Finish();
    }
  }
  RunState& st = s.state();
  st.clear_tools();
  if (run.spec().tools_size() == 0) {
    for (const ToolSpec& tool : tools->tools()) {
      if (!tool.mutating()) *st.add_tools() = tool;
    }
  } else {
    for (const std::string& name : run.spec().tools()) {
      auto it = std::find_if(tools->tools().begin(), tools->tools().end(),
                             [&](const ToolSpec& t) { return t.name() == name; });
      if (it == tools->tools().end()) {
        if (EndIfLimited(s, /*begins_iteration=*/false)) return std::move(s).Finish();
        Terminate(s, rein::v1::FAILED, rein::v1::INTERNAL,
                  absl::StrCat("tool \"", name, "\" is not offered by the executor"));
        return std::move(s).Finish();
      }
      *st.add_tools() = *it;
    }
  }
  Enter(s, rein::v1::PLANNING);
  return std::move(s).Finish();
}

Transition StageRouter::OnPlan(const Run& run, const absl::StatusOr<rein::v1::PlanResponse>& reply,
                               absl::Time now) const {
  Step s(run, now);
  RunState& st = s.state();
  if (!reply.ok()) {
    PlannerFailed(s, rein::v1::PLANNING, reply.status(), options_.prices.get());
    return std::move(s).Finish();
  }
  ChargeReply(s, reply->usage(), BackendOf(st, reply->backend()), options_.prices.get());
  if (!reply->backend().empty()) st.set_planner_backend(reply->backend());
  if (!reply->refusal().empty()) {
    Pause pause = MakePause(rein::v1::NEED_HUMAN, rein::v1::PLANNING,
                            absl::StrCat("the model refused to plan: ", reply->refusal()));
    pause.set_question(reply->refusal());
    PauseRun(s, std::move(pause));
    return std::move(s).Finish();
  }
  google::protobuf::RepeatedPtrField<SubTask> planned = reply->subtasks();
  if (absl::Status valid = ValidateSubtasks(st, "subtasks", &planned); !valid.ok()) {
    InvalidOutput(s, rein::v1::PLANNING, std::string(valid.message()), *reply);
    return std::move(s).Finish();
  }
  const size_t event_index = s.events().size();
  auto* event = s.AddEvent()->mutable_plan();
  event->set_reasoning(reply->reasoning());
  *event->mutable_subtasks() = planned;
  event->set_goal_achieved(reply->goal_achieved());
  event->set_notes(reply->notes());
  event->set_planner_backend(reply->backend());
  *event->mutable_usage() = reply->usage();
  // A proposed first call: recorded as received, then kept or dropped (saying why) below.
  const bool proposed = reply->has_first_call();
  if (proposed) {
    event->mutable_first_call()->set_tool(reply->first_call().tool());
    event->mutable_first_call()->set_args_json(reply->first_call().args_json());
  }
  auto drop_first_call = [&](const std::string& why) {
    if (proposed) s.events()[event_index].mutable_plan()->set_first_call_dropped(why);
  };
  st.set_goal_achieved(reply->goal_achieved());
  AddNote(s, reply->notes(), options_.max_notes);
  if (planned.empty() && !reply->goal_achieved()) {
    drop_first_call("the plan has no subtasks");
    SpendRetry(s, rein::v1::PLANNING, "INVALID_OUTPUT",
               "the plan has no subtasks and the goal is not achieved")
        ->set_reply(reply->SerializeAsString());
    return std::move(s).Finish();
  }
  st.clear_replan_reason();
  // New subtasks go on top of the stack, in the planner's order.
  google::protobuf::RepeatedPtrField<SubTask> stack = planned;
  for (const SubTask& task : st.subtasks()) *stack.Add() = task;
  *st.mutable_subtasks() = std::move(stack);
  if (st.subtasks_size() == 0) {  // goal achieved, nothing pending
    drop_first_call("the plan has no subtasks");
    if (!reply->notes().empty() && PausesOnNotes(run.spec())) {
      PauseRun(s, MakePause(rein::v1::NOTES, rein::v1::FINISHED, reply->notes()));
    } else {
      FinishRun(s);
    }
    return std::move(s).Finish();
  }
  // Checked against the applied plan (its top subtask on top), before any pause or limit.
  std::optional<std::string> dropped;
  if (proposed) dropped = FirstCallProblem(run, st, *reply, planned.size());
  if (!reply->notes().empty() && PausesOnNotes(run.spec())) {
    PauseRun(s, MakePause(rein::v1::NOTES, rein::v1::DECIDING, reply->notes()));
  } else if (!planned.empty() && HasPausePoint(run.spec(), rein::v1::AFTER_PLAN)) {
    Pause pause = MakePause(rein::v1::PAUSE_POINT, rein::v1::DECIDING,
                            absl::StrCat("plan of ", planned.size(), " subtasks ready for review"));
    pause.set_point(rein::v1::AFTER_PLAN);
    PauseRun(s, std::move(pause));
  } else {
    Enter(s, rein::v1::DECIDING);
  }
  if (proposed && !dropped) dropped = KeepProposedCall(s, reply->first_call());
  if (dropped) drop_first_call(*dropped);
  return std::move(s).Finish();
}

Transition StageRouter::OnDecide(const Run& run,
                                 const absl::StatusOr<rein::v1::DecideResponse>& reply,
                                 absl::Time now) const {
  Step s(run, now);
  RunState& st = s.state();
  if (!reply.ok()) {
    PlannerFailed(s, rein::v1::DECIDING, reply.status(), options_.prices.get());
    return std::move(s).Finish();
  }
  ChargeReply(s, reply->usage(), BackendOf(st, reply->backend()), options_.prices.get());
  if (!reply->backend().empty()) st.set_planner_backend(reply->backend());
  if (st.subtasks_size() == 0) {
    Terminate(s, rein::v1::FAILED, rein::v1::INTERNAL, "DECIDING with an empty subtask stack");
    return std::move(s).Finish();
  }
  st.mutable_subtasks(0)->set_status(SubTask::IN_PROGRESS);
  if (!reply->refusal().empty()) {
    Pause pause = MakePause(rein::v1::NEED_HUMAN, rein::v1::DECIDING,
                            absl::StrCat("the model refused to decide: ", reply->refusal()));
    pause.set_question(reply->refusal());
    PauseRun(s, std::move(pause));
    return std::move(s).Finish();
  }
  auto* event = s.AddEvent()->mutable_decision();
  event->set_reasoning(reply->reasoning());
  event->set_subtask_id(st.subtasks(0).id());
  event->set_notes(reply->notes());
  event->set_planner_backend(reply->backend());
  *event->mutable_usage() = reply->usage();
  if (reply->has_tool_call()) {
    absl::StatusOr<ToolCall> call =
        MakeCall(run, st, reply->tool_call().tool(), reply->tool_call().args_json(), "tool_call");
    if (!call.ok()) {
      // Drop the decision (and the call counter MakeCall bumped): the output was invalid.
      Step retry(run, now);
      retry.state().mutable_subtasks(0)->set_status(SubTask::IN_PROGRESS);
      ChargeReply(retry, reply->usage(), BackendOf(st, reply->backend()), options_.prices.get());
      InvalidOutput(retry, rein::v1::DECIDING, std::string(call.status().message()), *reply);
      return std::move(retry).Finish();
    }
    *event->mutable_tool_call() = *call;
    AddNote(s, reply->notes(), options_.max_notes);
    *st.mutable_pending_call() = *call;
    Pause pause;
    if (!reply->notes().empty() && PausesOnNotes(run.spec())) {
      pause = MakePause(rein::v1::NOTES, rein::v1::EXECUTING, reply->notes());
    } else if (HasPausePoint(run.spec(), rein::v1::BEFORE_TOOL) ||
               (call->mutating() && HasPausePoint(run.spec(), rein::v1::BEFORE_MUTATING_TOOL))) {
      rein::v1::PausePoint point = HasPausePoint(run.spec(), rein::v1::BEFORE_TOOL)
                                       ? rein::v1::BEFORE_TOOL
                                       : rein::v1::BEFORE_MUTATING_TOOL;
      pause = MakePause(rein::v1::PAUSE_POINT, rein::v1::EXECUTING,
                        absl::StrCat("about to call ", call->tool(), " ", call->args_json()));
      pause.set_point(point);
    }
    if (pause.reason() != rein::v1::PAUSE_REASON_UNSPECIFIED) {
      *pause.mutable_pending_call() = *call;
      PauseRun(s, std::move(pause));
      return std::move(s).Finish();
    }
    Enter(s, rein::v1::EXECUTING);
    return std::move(s).Finish();
  }
  if (!reply->human_query().empty()) {
    event->set_human_query(reply->human_query());
    AddNote(s, reply->notes(), options_.max_notes);
    Pause pause = MakePause(rein::v1::NEED_HUMAN, rein::v1::DECIDING, reply->human_query());
    pause.set_question(reply->human_query());
    PauseRun(s, std::move(pause));
    return std::move(s).Finish();
  }
  Step retry(run, now);
  ChargeReply(retry, reply->usage(), BackendOf(st, reply->backend()), options_.prices.get());
  InvalidOutput(retry, rein::v1::DECIDING, "the decision has neither a tool_call nor a human_query",
                *reply);
  return std::move(retry).Finish();
}

Transition StageRouter::MarkDispatched(const Run& run, absl::Time now) const {
  Step s(run, now);
  s.state().set_call_dispatched(true);
  return std::move(s).Finish();
}

Transition StageRouter::OnExecute(const Run& run,
                                  const absl::StatusOr<rein::v1::ExecuteResponse>& reply,
                                  absl::Time now) const {
  Step s(run, now);
  RunState& st = s.state();
  if (!reply.ok() && (reply.status().code() == absl::StatusCode::kResourceExhausted ||
                      reply.status().code() == absl::StatusCode::kAborted)) {
    // The executor is full and did not run the call (RESOURCE_EXHAUSTED), or the call is still
    // running on a live executor ("in progress", ABORTED): it is asked again after a backoff
    // (the same call_id; the round_robin channel takes the next executor) without charging
    // the run's budget.
    auto* error = s.AddEvent()->mutable_error();
    error->set_stage(rein::v1::EXECUTING);
    error->set_code(absl::StatusCodeToString(reply.status().code()));
    error->set_message(absl::StrCat("executor: ", reply.status().message()));
    error->set_retry_spent(false);
    EndIfLimited(s, /*begins_iteration=*/false);
    return std::move(s).Finish();
  }
  if (!reply.ok()) {
    // A mutating call that was sent may have run even though no reply came back. It is asked
    // again, after a backoff, with the same call_id: the executors' call journal then answers
    // with its recorded reply, waits for it, or says that its outcome is unknown (below).
    SpendRetry(s, rein::v1::EXECUTING, absl::StatusCodeToString(reply.status().code()),
               absl::StrCat("executor: ", reply.status().message()));
    return std::move(s).Finish();
  }
  if (reply->outcome_unknown() && st.pending_call().mutating()) {
    // The executor that started the call died mid-call: whether it ran is unknown, and only a
    // person can say whether to run it again. No budget is spent: nothing failed that a retry
    // could fix.
    Pause pause = MakePause(
        rein::v1::RECOVERY, rein::v1::EXECUTING,
        absl::StrCat("mutating call ", st.pending_call().call_id(), " (", st.pending_call().tool(),
                     " ", st.pending_call().args_json(), "): executor ", reply->executor_id(),
                     " died mid-call, so whether it ran is unknown (", reply->error().message(),
                     "); approve to run it again as a new call, edit it, or reject"));
    *pause.mutable_pending_call() = st.pending_call();
    st.set_call_dispatched(false);
    PauseRun(s, std::move(pause));
    return std::move(s).Finish();
  }
  if (reply->replayed()) {
    auto* replayed = s.AddEvent()->mutable_call_replayed();
    replayed->set_call_id(st.pending_call().call_id());
    replayed->set_executor_id(reply->executor_id());
  }
  const ToolCall& call = st.pending_call();
  Action action;
  action.set_iteration(st.iteration());
  action.set_subtask_id(st.subtasks_size() > 0 ? st.subtasks(0).id() : "");
  action.set_call_id(call.call_id());
  action.set_tool(call.tool());
  action.set_args_json(call.args_json());
  action.set_ok(reply->ok());
  action.set_observation(Cap(reply->output(), options_.max_observation_bytes));
  if (!reply->ok()) {
    action.set_error(absl::StrCat(reply->error().code(), ": ", reply->error().message()));
  }
  *action.mutable_duration() = reply->duration();
  action.set_executor_id(reply->executor_id());
  st.set_latest_observation(
      reply->ok() ? action.observation()
                  : Cap(absl::StrCat("error ", action.error(), reply->output().empty() ? "" : "\n",
                                     reply->output()),
                        options_.max_observation_bytes));
  st.set_consecutive_tool_failures(reply->ok() ? 0 : st.consecutive_tool_failures() + 1);
  *st.add_recent_actions() = action;
  while (st.recent_actions_size() > run.spec().limits().action_window()) {
    st.mutable_recent_actions()->erase(st.mutable_recent_actions()->begin());
  }
  st.set_actions_total(st.actions_total() + 1);
  auto* event = s.AddEvent()->mutable_tool_result();
  *event->mutable_action() = action;
  event->set_truncated(reply->truncated());
  event->set_snapshot_skipped(reply->snapshot_skipped());
  st.clear_pending_call();
  st.set_call_dispatched(false);
  if (!reply->ok() && IsWorkspaceMissing(run, reply->error())) {
    // The workspace disappeared under the run: every further call would fail the same way.
    if (EndIfLimited(s, /*begins_iteration=*/false)) return std::move(s).Finish();
    Terminate(s, rein::v1::FAILED, rein::v1::CONSECUTIVE_TOOL_FAILURES,
              WorkspaceGoneMessage(run, reply->error()));
    return std::move(s).Finish();
  }
  Enter(s, rein::v1::EVALUATING);
  return std::move(s).Finish();
}

Transition StageRouter::OnEvaluate(const Run& run,
                                   const absl::StatusOr<rein::v1::EvaluateResponse>& reply,
                                   absl::Time now) const {
  Step s(run, now);
  RunState& st = s.state();
  if (!reply.ok()) {
    PlannerFailed(s, rein::v1::EVALUATING, reply.status(), options_.prices.get());
    return std::move(s).Finish();
  }
  ChargeReply(s, reply->usage(), BackendOf(st, reply->backend()), options_.prices.get());
  if (!reply->backend().empty()) st.set_planner_backend(reply->backend());
  if (!reply->refusal().empty()) {
    Pause pause = MakePause(rein::v1::NEED_HUMAN, rein::v1::EVALUATING,
                            absl::StrCat("the model refused to evaluate: ", reply->refusal()));
    pause.set_question(reply->refusal());
    PauseRun(s, std::move(pause));
    return std::move(s).Finish();
  }
  using Status = rein::v1::RunEvent::Evaluation;
  if (reply->status() != Status::COMPLETED && reply->status() != Status::FAILED &&
      reply->status() != Status::NEEDS_MORE_WORK) {
    InvalidOutput(s, rein::v1::EVALUATING,
                  absl::StrCat("status: must be COMPLETED, FAILED or NEEDS_MORE_WORK, got ",
                               static_cast<int>(reply->status())),
                  *reply);
    return std::move(s).Finish();
  }
  if (st.subtasks_size() == 0) {
    Terminate(s, rein::v1::FAILED, rein::v1::INTERNAL, "EVALUATING with an empty subtask stack");
    return std::move(s).Finish();
  }
  const size_t event_index = s.events().size();
  auto* event = s.AddEvent()->mutable_evaluation();
  event->set_reasoning(reply->reasoning());
  event->set_subtask_id(st.subtasks(0).id());
  event->set_status(reply->status());
  event->set_summary(reply->summary());
  event->set_goal_achieved(reply->goal_achieved());
  event->set_notes(reply->notes());
  event->set_planner_backend(reply->backend());
  *event->mutable_usage() = reply->usage();
  // A proposed next call (checked against the state before the subtask can be popped).
  const bool proposed = !reply->next_call().tool().empty();
  std::optional<std::string> dropped;
  if (proposed) {
    event->mutable_next_call()->set_tool(reply->next_call().tool());
    event->mutable_next_call()->set_args_json(reply->next_call().args_json());
    dropped = ProposalProblem(run, st, *reply);
  } else if (!reply->next_call_dropped().empty()) {
    dropped = reply->next_call_dropped();  // the planner's reason
  }
  if (reply->status() != Status::NEEDS_MORE_WORK) {
    EndSubtask(st, st.subtasks(0),
               reply->status() == Status::COMPLETED ? SubTask::COMPLETED : SubTask::FAILED,
               reply->summary());
    st.mutable_subtasks()->erase(st.mutable_subtasks()->begin());
  }
  st.set_goal_achieved(reply->goal_achieved());
  AddNote(s, reply->notes(), options_.max_notes);
  Stage next = NextAfterEvaluation(st);
  Pause pause;
  if (!reply->notes().empty() && PausesOnNotes(run.spec())) {
    pause = MakePause(rein::v1::NOTES, next, reply->notes());
  } else if (HasPausePoint(run.spec(), rein::v1::AFTER_EVALUATE)) {
    pause = MakePause(rein::v1::PAUSE_POINT, next,
                      absl::StrCat("subtask ", event->subtask_id(), " evaluated ",
                                   Status::Status_Name(reply->status())));
    pause.set_point(rein::v1::AFTER_EVALUATE);
  }
  ContinueAfterEvaluation(s, next, std::move(pause));
  if (proposed && !dropped) dropped = KeepProposedCall(s, reply->next_call());
  if (dropped) s.events()[event_index].mutable_evaluation()->set_next_call_dropped(*dropped);
  return std::move(s).Finish();
}

Transition StageRouter::OnProposedCall(const Run& run, absl::Time now) const {
  // Exactly a Decide reply carrying the call, with no usage of its own. A plan's call is for a
  // subtask nothing has been decided for yet (PENDING); an evaluation's is for the subtask it
  // judged, which its decision set IN_PROGRESS.
  const bool from_plan =
      run.state().subtasks_size() > 0 && run.state().subtasks(0).status() != SubTask::IN_PROGRESS;
  rein::v1::DecideResponse reply;
  reply.mutable_tool_call()->set_tool(run.state().pending_call().tool());
  reply.mutable_tool_call()->set_args_json(run.state().pending_call().args_json());
  reply.set_backend(run.state().planner_backend());
  Run deciding = run;
  deciding.mutable_state()->clear_pending_call();
  Transition t = OnDecide(deciding, reply, now);
  for (rein::v1::RunEvent& event : t.events) {
    if (!event.has_decision()) continue;
    if (from_plan) {
      event.mutable_decision()->set_from_plan(true);
    } else {
      event.mutable_decision()->set_from_evaluation(true);
    }
  }
  return t;
}

absl::StatusOr<Transition> StageRouter::OnReview(const Run& run, const rein::v1::Review& review,
                                                 int64_t expected_version, absl::Time now) const {
  const RunState& old = run.state();
  if (old.stage() != rein::v1::PAUSED) {
    return absl::FailedPreconditionError(absl::StrCat(
        "run ", run.run_id(), " is ", rein::v1::Stage_Name(old.stage()), ", not PAUSED"));
  }
  if (expected_version != old.version()) {
    return absl::FailedPreconditionError(
        absl::StrCat("stale version: the review was made against version ", expected_version,
                     ", the run is at version ", old.version()));
  }
  const Pause& pause = old.pause();
  Step s(run, now);
  RunState& st = s.state();
  auto resumed = [&](Stage to) {
    auto* event = s.AddEvent()->mutable_resumed();
    *event->mutable_review() = review;
    event->set_to(to);
  };
  // Goes on to the pause's resume stage (the pending call, if any, is run).
  auto go_on = [&](Stage to) {
    resumed(to);
    if (pause.reason() == rein::v1::STAGNATED) st.set_stagnation_mark(st.actions_total());
    if (to == rein::v1::EXECUTING) {
      *st.mutable_pending_call() = pause.pending_call();
      st.set_call_dispatched(false);
      if (pause.reason() == rein::v1::RECOVERY) {
        // Approving a call whose outcome is unknown runs it again: under a new call_id, since
        // the journal answers the old one with "unknown" for ever.
        st.set_call_counter(st.call_counter() + 1);
        st.mutable_pending_call()->set_call_id(absl::StrCat(run.run_id(), "-", st.call_counter()));
      }
    }
    if (to == rein::v1::FINISHED) {
      FinishRun(s);
    } else {
      Enter(s, to);
    }
  };
  switch (review.kind_case()) {
    case rein::v1::Review::kApprove:
      if (pause.reason() == rein::v1::NEED_HUMAN) {
        return absl::FailedPreconditionError(
            "the run waits for an answer (NEED_HUMAN): use answer, reject or edit_plan");
      }
      go_on(pause.resume_stage());
      break;
    case rein::v1::Review::kAnswer: {
      if (review.answer().text().empty()) {
        return absl::InvalidArgumentError("review.answer.text: must not be empty");
      }
      if (review.answer().text().size() > 16 * 1024) {
        return absl::InvalidArgumentError("review.answer.text: at most 16 KiB");
      }
      HumanInput* input = st.add_human_inputs();
      input->set_kind(HumanInput::ANSWER);
      input->set_text(review.answer().text());
      input->set_question(pause.question().empty() ? pause.detail() : pause.question());
      input->set_iteration(st.iteration());
      while (st.human_inputs_size() > options_.max_human_inputs) {
        st.mutable_human_inputs()->erase(st.mutable_human_inputs()->begin());
      }
      go_on(pause.resume_stage());
      break;
    }
    case rein::v1::Review::kReject: {
      if (review.reject().feedback().size() > 16 * 1024) {
        return absl::InvalidArgumentError("review.reject.feedback: at most 16 KiB");
      }
      resumed(review.reject().abort() ? rein::v1::FAILED : rein::v1::PLANNING);
      if (review.reject().abort()) {
        Terminate(s, rein::v1::FAILED, rein::v1::REJECTED_BY_REVIEWER,
                  absl::StrCat("rejected by reviewer: ", review.reject().feedback()));
        break;
      }
      if (!review.reject().feedback().empty()) {
        HumanInput* input = st.add_human_inputs();
        input->set_kind(HumanInput::FEEDBACK);
        input->set_text(review.reject().feedback());
        input->set_iteration(st.iteration());
      }
      st.set_replan_reason(absl::StrCat("rejected by reviewer: ", review.reject().feedback()));
      DropStack(st, absl::StrCat("dropped: rejected by reviewer: ", review.reject().feedback()));
      st.clear_pending_call();
      st.set_call_dispatched(false);
      st.set_goal_achieved(false);
      Enter(s, rein::v1::PLANNING);
      break;
    }
    case rein::v1::Review::kEditPlan: {
      google::protobuf::RepeatedPtrField<SubTask> tasks = review.edit_plan().subtasks();
      if (tasks.empty()) {
        return absl::InvalidArgumentError("review.edit_plan.subtasks: must not be empty");
      }
      RunState without_stack = st;
      without_stack.clear_subtasks();
      if (absl::Status valid = ValidateSubtasks(without_stack, "review.edit_plan.subtasks", &tasks);
          !valid.ok()) {
        return valid;
      }
      resumed(rein::v1::DECIDING);
      DropStack(st, "dropped: replaced by the reviewer's plan");
      *st.mutable_subtasks() = std::move(tasks);
      st.clear_pending_call();
      st.set_call_dispatched(false);
      st.set_goal_achieved(false);
      if (pause.reason() == rein::v1::STAGNATED) st.set_stagnation_mark(st.actions_total());
      Enter(s, rein::v1::DECIDING);
      break;
    }
    case rein::v1::Review::kEditToolCall: {
      if (!pause.has_pending_call() || pause.pending_call().tool().empty()) {
        return absl::FailedPreconditionError(
            absl::StrCat("the run is paused for ", rein::v1::PauseReason_Name(pause.reason()),
                         " with no pending tool call; edit_tool_call needs one"));
      }
      absl::StatusOr<ToolCall> call =
          MakeCall(run, st, review.edit_tool_call().tool(), review.edit_tool_call().args_json(),
                   "review.edit_tool_call");
      if (!call.ok()) return call.status();
      resumed(rein::v1::EXECUTING);
      *st.mutable_pending_call() = *call;
      st.set_call_dispatched(false);
      Enter(s, rein::v1::EXECUTING);
      break;
    }
    default:
      return absl::InvalidArgumentError(
          "review: one of approve, reject, edit_plan, edit_tool_call, answer is required");
  }
  return std::move(s).Finish();
}

std::optional<Transition> StageRouter::OnCancel(const Run& run, bool call_in_flight,
                                                const std::string& reason, absl::Time now) const {
  if (IsTerminal(run.state().stage())) return std::nullopt;
  Step s(run, now);
  if (call_in_flight) {
    if (run.state().cancel_requested()) return std::nullopt;
    s.state().set_cancel_requested(true);
  } else {
    Terminate(s, rein::v1::CANCELLED, rein::v1::CANCELLED_BY_USER,
              reason.empty() ? "cancelled by user" : absl::StrCat("cancelled by user: ", reason));
  }
  return std::move(s).Finish();
}

NextStep StageRouter::Next(const Run& run, absl::Time now, absl::Time not_before) const {
  NextStep next;
  const RunState& st = run.state();
  if (IsTerminal(st.stage())) {
    next.kind = NextStep::Kind::kEnded;
    return next;
  }
  if (std::optional<Transition> end = OnTick(run, now)) {
    next.kind = NextStep::Kind::kCommit;
    next.transition = std::move(end);
    return next;
  }
  const absl::Time deadline =
      st.has_deadline() ? FromProtoTime(st.deadline()) : absl::InfiniteFuture();
  if (st.stage() == rein::v1::PAUSED) {
    next.kind = st.has_deadline() ? NextStep::Kind::kWaitUntil : NextStep::Kind::kIdle;
    next.until = deadline;
    return next;
  }
  if (now < not_before) {
    next.kind = NextStep::Kind::kWaitUntil;
    next.until = std::min(not_before, deadline);  // the deadline may come first (rule 3)
    return next;
  }
  if (st.stage() == rein::v1::DECIDING && st.has_pending_call()) {
    // The last evaluation proposed the call: it is the decision, with no Decide request.
    next.kind = NextStep::Kind::kCommit;
    next.transition = OnProposedCall(run, now);
    return next;
  }
  if (st.stage() == rein::v1::EXECUTING && st.pending_call().mutating() && !st.call_dispatched()) {
    // Recorded before the call is sent, so that recovery never repeats it silently.
    next.kind = NextStep::Kind::kCommit;
    next.transition = MarkDispatched(run, now);
    return next;
  }
  Effect effect = NextEffect(run, now);
  if (effect.kind == Effect::Kind::kNone) {
    // A working stage with nothing to call: end the run rather than leave it hanging.
    next.kind = NextStep::Kind::kCommit;
    next.transition = FailInternal(run,
                                   absl::StrCat("the router found nothing to call in stage ",
                                                rein::v1::Stage_Name(st.stage())),
                                   now);
    return next;
  }
  next.kind = NextStep::Kind::kCall;
  next.effect = std::move(effect);
  return next;
}

absl::StatusOr<Transition> StageRouter::Fork(const Run& run, const rein::v1::ForkedFrom& from,
                                             const rein::v1::ForkEdits& edits,
                                             bool workspace_at_fork, absl::Time now) const {
  const RunState& point = run.state();
  if (IsTerminal(point.stage()) || point.stage() == rein::v1::STAGE_UNSPECIFIED) {
    return absl::FailedPreconditionError(
        absl::StrCat("at: run ", from.run_id(), " was ", rein::v1::Stage_Name(point.stage()),
                     " at that point (seq ", from.seq(), "); fork from a point before it ended"));
  }
  if (edits.has_plan() && edits.has_call()) {
    return absl::InvalidArgumentError("edits: plan and call cannot both be set");
  }
  // The starting state: the source's, with what belongs to the source's life reset.
  Run start = run;
  RunState& st0 = *start.mutable_state();
  st0.set_version(0);
  st0.clear_outcome();
  st0.set_cancel_requested(false);
  st0.set_call_dispatched(false);
  *st0.mutable_forked_from() = from;
  *st0.mutable_started_at() = ToProtoTime(now);
  *st0.mutable_deadline() = ToProtoTime(now + FromProtoDuration(run.spec().limits().deadline()));
  // A pending call gets an id of the fork's own: the executors' journal must not answer it
  // with the source's reply.
  if (st0.has_pending_call() || st0.pause().has_pending_call()) {
    st0.set_call_counter(st0.call_counter() + 1);
    const std::string id = absl::StrCat(run.run_id(), "-", st0.call_counter());
    if (st0.has_pending_call()) st0.mutable_pending_call()->set_call_id(id);
    if (st0.pause().has_pending_call())
      st0.mutable_pause()->mutable_pending_call()->set_call_id(id);
  }
  Step s(start, now);
  RunState& st = s.state();
  auto* forked = s.AddEvent()->mutable_forked();
  *forked->mutable_from() = from;
  *forked->mutable_edits() = edits;
  forked->set_workspace(run.spec().workspace());
  forked->set_workspace_at_fork(workspace_at_fork);
  forked->set_log_format(kLogFormat);
  *forked->mutable_start() = point;  // as given: replay resets it the same way again
  const bool need_human =
      point.stage() == rein::v1::PAUSED && point.pause().reason() == rein::v1::NEED_HUMAN;
  if (edits.has_human_input()) {
    const std::string& text = edits.human_input().text();
    if (text.empty()) {
      return absl::InvalidArgumentError("edits.human_input.text: must not be empty");
    }
    if (text.size() > 16 * 1024) {
      return absl::InvalidArgumentError("edits.human_input.text: at most 16 KiB");
    }
    HumanInput* input = st.add_human_inputs();
    input->set_kind(HumanInput::ANSWER);
    input->set_text(text);
    if (need_human) input->set_question(point.pause().question());
    input->set_iteration(st.iteration());
    while (st.human_inputs_size() > options_.max_human_inputs) {
      st.mutable_human_inputs()->erase(st.mutable_human_inputs()->begin());
    }
  }
  if (edits.has_plan()) {
    google::protobuf::RepeatedPtrField<SubTask> tasks = edits.plan().subtasks();
    if (tasks.empty()) return absl::InvalidArgumentError("edits.plan.subtasks: must not be empty");
    RunState without_stack = st;
    without_stack.clear_subtasks();
    RETURN_IF_ERROR(ValidateSubtasks(without_stack, "edits.plan.subtasks", &tasks));
    DropStack(st, "dropped: replaced by the fork's plan");
    *st.mutable_subtasks() = std::move(tasks);
    st.clear_pending_call();
    st.clear_pause();
    st.set_goal_achieved(false);
    s.MoveTo(rein::v1::DECIDING);
  } else if (edits.has_call()) {
    const bool pending = (st.stage() == rein::v1::EXECUTING && st.has_pending_call()) ||
                         (st.stage() == rein::v1::PAUSED && st.pause().has_pending_call() &&
                          !st.pause().pending_call().tool().empty());
    if (!pending) {
      return absl::FailedPreconditionError(absl::StrCat(
          "edits.call: run ", from.run_id(), " had no pending tool call at that point (stage ",
          rein::v1::Stage_Name(point.stage()),
          "); fork at a point in EXECUTING or paused before a tool"));
    }
    ASSIGN_OR_RETURN(ToolCall call, MakeCall(start, st, edits.call().tool(),
                                             edits.call().args_json(), "edits.call"));
    *st.mutable_pending_call() = call;
    st.clear_pause();
    s.MoveTo(rein::v1::EXECUTING);
  } else if (edits.has_human_input() && need_human) {
    const Stage resume = point.pause().resume_stage();
    st.clear_pause();
    s.MoveTo(resume);
  }
  Transition t = std::move(s).Finish();
  if (!t.snapshot) {
    Snapshot snap;
    snap.iteration = t.state.iteration();
    snap.version = t.state.version();
    t.state.SerializeToString(&snap.state);
    t.snapshot = std::move(snap);
  }
  return t;
}

std::optional<Transition> StageRouter::OnTick(const Run& run, absl::Time now) const {
  const RunState& st = run.state();
  if (IsTerminal(st.stage())) return std::nullopt;
  if (!CancelledOrPastDeadline(st, now)) return std::nullopt;
  Step s(run, now);
  EndIfLimited(s, /*begins_iteration=*/false);
  return std::move(s).Finish();
}

Transition StageRouter::FailInternal(const Run& run, const std::string& message,
                                     absl::Time now) const {
  Step s(run, now);
  Terminate(s, rein::v1::FAILED, rein::v1::INTERNAL, message);
  return std::move(s).Finish();
}

std::optional<Transition> StageRouter::OnRecovery(const Run& /*run*/, absl::Time /*now*/) const {
  // A model call or a read-only tool call is simply repeated. A mutating call that was sent
  // and whose result was not committed is asked again with the same call_id: the executors'
  // call journal answers (OnExecute), and the run pauses RECOVERY only when it says the
  // outcome is unknown. So nothing needs committing before the run goes on.
  return std::nullopt;
}

}  // namespace rein
