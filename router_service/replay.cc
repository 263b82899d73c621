// Replay of recorded runs through the current StageRouter.
#include "router_service/replay.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/proto_time.h"
#include "common/status_reason.h"
#include "common/usage_payload.h"
#include "google/protobuf/util/message_differencer.h"

namespace rein {
namespace {

using rein::v1::Run;
using rein::v1::RunEvent;

std::string Shorten(std::string text) { return ShortenDescription(std::move(text)); }

absl::StatusCode CodeFromName(const std::string& name) {
  for (int c = 0; c <= 16; ++c) {
    if (absl::StatusCodeToString(static_cast<absl::StatusCode>(c)) == name) {
      return static_cast<absl::StatusCode>(c);
    }
  }
  return absl::StatusCode::kUnknown;
}

// The failed call an Error event records (message without `prefix`, usage attached).
absl::Status StatusOf(const RunEvent::Error& error, absl::string_view prefix) {
  absl::string_view message = error.message();
  absl::ConsumePrefix(&message, prefix);
  absl::Status status(CodeFromName(error.code()), message);
  if (error.has_usage()) status = WithUsage(std::move(status), error.usage());
  return status;
}

// The recorded events of one transition: from `index`, all with the same version.
std::vector<const RunEvent*> TransitionAt(const std::vector<RunEvent>& events, size_t index) {
  std::vector<const RunEvent*> out;
  for (size_t i = index; i < events.size() && events[i].version() == events[index].version(); ++i) {
    out.push_back(&events[i]);
  }
  return out;
}

const RunEvent::Error* FindError(const std::vector<const RunEvent*>& tr) {
  for (const RunEvent* e : tr) {
    if (e->has_error()) return &e->error();
  }
  return nullptr;
}

// What a WAITING parent's driver observed of its children, as the transition recorded it: the
// children as joined (each ended), else those that started (still running).
std::optional<ChildrenObserved> ChildrenReply(const std::vector<const RunEvent*>& tr) {
  for (const RunEvent* e : tr) {
    if (!e->has_children_joined()) continue;
    ChildrenObserved observed;
    for (rein::v1::ChildRun child : e->children_joined().children()) {
      if (child.start_error().empty()) child.set_stage(child.outcome().status());
      observed.children.push_back(std::move(child));
    }
    return observed;
  }
  for (const RunEvent* e : tr) {
    if (!e->has_children_started()) continue;
    ChildrenObserved observed;
    for (rein::v1::ChildRun child : e->children_started().children()) {
      child.set_stage(rein::v1::INITIALIZING);  // started, not ended
      observed.children.push_back(std::move(child));
    }
    return observed;
  }
  return std::nullopt;
}

// A refusal: the NEED_HUMAN pause, asking the model's refusal as its question, of a transition
// that holds no plan, decision or evaluation (the callers look for those first).
std::optional<std::string> FindRefusal(const std::vector<const RunEvent*>& tr) {
  for (const RunEvent* e : tr) {
    if (e->has_paused() && e->paused().pause().reason() == rein::v1::NEED_HUMAN &&
        !e->paused().pause().question().empty()) {
      return e->paused().pause().question();
    }
  }
  return std::nullopt;
}

template <typename Response>
std::optional<absl::StatusOr<Response>> FromError(const std::vector<const RunEvent*>& tr) {
  const RunEvent::Error* error = FindError(tr);
  if (error == nullptr) return std::nullopt;
  if (!error->reply().empty()) {
    Response reply;
    if (reply.ParseFromString(error->reply())) return absl::StatusOr<Response>(reply);
  }
  if (error->code() == "INVALID_OUTPUT") return std::nullopt;
  return absl::StatusOr<Response>(StatusOf(*error, ""));
}

std::optional<absl::StatusOr<rein::v1::PlanResponse>> PlanReply(
    const std::vector<const RunEvent*>& tr) {
  if (auto from_error = FromError<rein::v1::PlanResponse>(tr)) return from_error;
  for (const RunEvent* e : tr) {
    if (!e->has_plan()) continue;
    const auto& p = e->plan();
    rein::v1::PlanResponse reply;
    reply.set_reasoning(p.reasoning());
    *reply.mutable_subtasks() = p.subtasks();
    reply.set_goal_achieved(p.goal_achieved());
    reply.set_notes(p.notes());
    *reply.mutable_usage() = p.usage();
    reply.set_backend(p.planner_backend());
    if (p.has_first_call()) {
      reply.mutable_first_call()->set_tool(p.first_call().tool());
      reply.mutable_first_call()->set_args_json(p.first_call().args_json());
    }
    return reply;
  }
  if (auto refusal = FindRefusal(tr)) {
    rein::v1::PlanResponse reply;
    reply.set_refusal(*refusal);
    return reply;
  }
  return std::nullopt;
}

std::optional<absl::StatusOr<rein::v1::DecideResponse>> DecideReply(
    const std::vector<const RunEvent*>& tr) {
  if (auto from_error = FromError<rein::v1::DecideResponse>(tr)) return from_error;
  for (const RunEvent* e : tr) {
    if (!e->has_decision()) continue;
    const auto& d = e->decision();
    rein::v1::DecideResponse reply;
    reply.set_reasoning(d.reasoning());
    if (d.has_tool_call()) {
      reply.mutable_tool_call()->set_tool(d.tool_call().tool());
      reply.mutable_tool_call()->set_args_json(d.tool_call().args_json());
    } else {
      reply.set_human_query(d.human_query());
    }
    reply.set_notes(d.notes());
    *reply.mutable_usage() = d.usage();
    reply.set_backend(d.planner_backend());
    return reply;
  }
  if (auto refusal = FindRefusal(tr)) {
    rein::v1::DecideResponse reply;
    reply.set_refusal(*refusal);
    return reply;
  }
  return std::nullopt;
}

std::optional<absl::StatusOr<rein::v1::EvaluateResponse>> EvaluateReply(
    const std::vector<const RunEvent*>& tr) {
  if (auto from_error = FromError<rein::v1::EvaluateResponse>(tr)) return from_error;
  for (const RunEvent* e : tr) {
    if (!e->has_evaluation()) continue;
    const auto& v = e->evaluation();
    rein::v1::EvaluateResponse reply;
    reply.set_reasoning(v.reasoning());
    reply.set_status(v.status());
    reply.set_summary(v.summary());
    reply.set_goal_achieved(v.goal_achieved());
    reply.set_notes(v.notes());
    *reply.mutable_usage() = v.usage();
    reply.set_backend(v.planner_backend());
    if (v.has_next_call()) {
      reply.mutable_next_call()->set_tool(v.next_call().tool());
      reply.mutable_next_call()->set_args_json(v.next_call().args_json());
    }
    reply.set_next_call_dropped(v.next_call_dropped());
    return reply;
  }
  if (auto refusal = FindRefusal(tr)) {
    rein::v1::EvaluateResponse reply;
    reply.set_refusal(*refusal);
    return reply;
  }
  return std::nullopt;
}

// The tool output an observation was cut from: the kept prefix and as many bytes as the
// truncation marker says were omitted, so that the router's cap cuts it the same way again.
std::string OutputOf(const std::string& observation) {
  size_t marker = observation.rfind("\n[observation truncated: ");
  int64_t omitted = 0;
  if (marker == std::string::npos || !absl::EndsWith(observation, " bytes omitted]") ||
      !absl::SimpleAtoi(
          absl::string_view(observation).substr(marker + 25, observation.size() - marker - 25 - 15),
          &omitted) ||
      omitted < 0 || omitted > (int64_t{1} << 30)) {
    return observation;
  }
  return absl::StrCat(observation.substr(0, marker), std::string(omitted, ' '));
}

std::optional<absl::StatusOr<rein::v1::ExecuteResponse>> ExecuteReply(
    const std::vector<const RunEvent*>& tr) {
  if (const RunEvent::Error* error = FindError(tr)) {
    return absl::StatusOr<rein::v1::ExecuteResponse>(StatusOf(*error, kExecuteErrorPrefix));
  }
  for (const RunEvent* e : tr) {
    if (!e->has_tool_result()) continue;
    const rein::v1::Action& a = e->tool_result().action();
    rein::v1::ExecuteResponse reply;
    reply.set_ok(a.ok());
    reply.set_output(OutputOf(a.observation()));
    reply.set_truncated(e->tool_result().truncated());
    if (!a.ok()) {
      size_t colon = a.error().find(": ");
      reply.mutable_error()->set_code(a.error().substr(0, colon));
      if (colon != std::string::npos)
        reply.mutable_error()->set_message(a.error().substr(colon + 2));
    }
    *reply.mutable_duration() = a.duration();
    reply.set_executor_id(a.executor_id());
    return reply;
  }
  return std::nullopt;
}

// The reason of a recorded cancel ("cancelled by user: <reason>").
std::string CancelReason(const std::vector<const RunEvent*>& tr) {
  for (const RunEvent* e : tr) {
    if (!e->has_finished()) continue;
    absl::string_view message = e->finished().outcome().message();
    if (absl::ConsumePrefix(&message, "cancelled by user: ")) return std::string(message);
  }
  return "";
}

bool EndsCancelled(const std::vector<const RunEvent*>& tr) {
  for (const RunEvent* e : tr) {
    if (e->has_finished() && e->finished().outcome().reason() == rein::v1::CANCELLED_BY_USER) {
      return true;
    }
  }
  return false;
}

// The replies the log's transition `tr` holds for the call of `effect`, most likely first.
// INITIALIZING's failed attempt may be the tool listing's or the workspace check's: both are
// offered, the tool listing's first (the caller keeps the one whose transition the log holds).
std::vector<StageReply> RecordedReplies(const Effect& effect,
                                        const std::vector<const RunEvent*>& tr,
                                        const Run& recorded) {
  rein::v1::ListToolsResponse tools;
  *tools.mutable_tools() = recorded.state().tools();
  const RunEvent::Error* error = FindError(tr);
  std::vector<StageReply> replies;
  switch (effect.kind) {
    case Effect::Kind::kListTools:
      if (error != nullptr) {
        replies.push_back(ToolsListed{StatusOf(*error, kListToolsErrorPrefix)});
      }
      replies.push_back(ToolsListed{tools});
      break;
    case Effect::Kind::kCheckWorkspace: {
      rein::v1::ExecuteResponse usable;
      usable.set_ok(true);
      replies.push_back(WorkspaceChecked{
          effect.tools, error != nullptr ? absl::StatusOr<rein::v1::ExecuteResponse>(
                                               StatusOf(*error, kWorkspaceCheckErrorPrefix))
                                         : usable});
      break;
    }
    case Effect::Kind::kPlan:
      if (auto reply = PlanReply(tr)) replies.push_back(Planned{*std::move(reply)});
      break;
    case Effect::Kind::kDecide:
      if (auto reply = DecideReply(tr)) replies.push_back(Decided{*std::move(reply)});
      break;
    case Effect::Kind::kExecute:
      if (auto reply = ExecuteReply(tr)) {
        replies.push_back(Executed{*reply});
        // A failed call's ToolError.reason is not in the log: the one that ended the run
        // because its workspace was gone is told apart by the transition the log holds.
        if (reply->ok() && !(*reply)->ok()) {
          (*reply)->mutable_error()->set_reason(reason::kWorkspaceNotFound);
          replies.push_back(Executed{*std::move(reply)});
        }
      }
      break;
    case Effect::Kind::kEvaluate:
      if (auto reply = EvaluateReply(tr)) replies.push_back(Evaluated{*std::move(reply)});
      break;
    case Effect::Kind::kChildren:
      if (auto observed = ChildrenReply(tr)) replies.push_back(*std::move(observed));
      break;
    case Effect::Kind::kNone: break;
  }
  return replies;
}

// Whether the log holds `t`'s events from `index` on.
bool Matches(const Transition& t, const std::vector<RunEvent>& events, size_t index,
             const std::string& run_id) {
  if (index + t.events.size() > events.size()) return false;
  for (size_t i = 0; i < t.events.size(); ++i) {
    RunEvent produced = t.events[i];
    produced.set_run_id(run_id);
    produced.set_seq(static_cast<int64_t>(index + i + 1));
    if (!google::protobuf::util::MessageDifferencer::Equals(events[index + i], produced)) {
      return false;
    }
  }
  return true;
}

}  // namespace

std::string DescribeReplay(const ReplayResult& result) {
  if (!result.divergence) {
    return absl::StrCat("identical (", result.events_replayed, " events)");
  }
  const Divergence& d = *result.divergence;
  return absl::StrCat("diverges at seq ", d.seq, " in ", rein::v1::Stage_Name(d.stage),
                      ": recorded ", d.recorded, "; now ", d.now,
                      d.detail.empty() ? "" : absl::StrCat(" (", d.detail, ")"));
}

absl::StatusOr<ReplayResult> ReplayRun(const StageRouter& router, const Run& recorded,
                                       const std::vector<RunEvent>& events,
                                       const ReplayOptions& options) {
  if (events.empty()) return absl::InvalidArgumentError("events: the log is empty");
  for (size_t i = 0; i < events.size(); ++i) {
    if (events[i].seq() != static_cast<int64_t>(i + 1)) {
      return absl::InvalidArgumentError(absl::StrCat("events: seq ", events[i].seq(),
                                                     " at position ", i + 1, " (gap or disorder)"));
    }
  }
  const RunEvent& first = events[0];
  int32_t format = first.has_forked()          ? first.forked().log_format()
                   : first.has_stage_changed() ? first.stage_changed().log_format()
                                               : -1;
  if (format != kLogFormat) {
    return absl::FailedPreconditionError(
        absl::StrCat("run ", recorded.run_id(), ": replay needs event log format ", kLogFormat,
                     ", the log has format ",
                     format < 0    ? std::string("unknown (no first event)")
                     : format == 0 ? std::string("0 (recorded before formats were)")
                                   : absl::StrCat(format),
                     "; re-record the run with this router"));
  }

  if (recorded.state().cost_used_usd() > 0 && router.options().prices == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        "run ", recorded.run_id(), " was priced (cost_used_usd ", recorded.state().cost_used_usd(),
        "): replay needs the router's price table (reinctl replay --price_table=FILE)"));
  }

  ReplayResult result;
  Run& run = result.run;
  size_t index = 0;
  auto diverge = [&](const std::string& recorded_text, const std::string& now_text,
                     const std::string& detail) {
    Divergence d;
    d.seq = index < events.size() ? events[index].seq() : static_cast<int64_t>(events.size()) + 1;
    d.stage = run.state().stage();
    d.recorded = recorded_text;
    d.now = now_text;
    d.detail = detail;
    result.divergence = std::move(d);
  };
  // Matches a transition's events to the log from `index`; on success applies it.
  auto match = [&](Transition t) -> bool {
    for (size_t i = 0; i < t.events.size(); ++i) {
      RunEvent produced = t.events[i];
      produced.set_run_id(recorded.run_id());
      produced.set_seq(static_cast<int64_t>(index + i + 1));
      if (index + i >= events.size()) {
        index += i;
        diverge("(the log ends)", DescribeEvent(produced), "");
        return false;
      }
      // Who caused a transition (the caller's identity) is recorded, not derived by the rules.
      produced.set_principal(events[index + i].principal());
      // The run's namespace is stamped on events as they are read (RouterApi), not derived.
      produced.set_namespace_(events[index + i].namespace_());
      google::protobuf::util::MessageDifferencer differ;
      std::string detail;
      differ.ReportDifferencesToString(&detail);
      if (!differ.Compare(events[index + i], produced)) {
        index += i;
        diverge(DescribeEvent(events[index]), DescribeEvent(produced), Shorten(detail));
        return false;
      }
    }
    index += t.events.size();
    result.events_replayed = static_cast<int64_t>(index);
    *run.mutable_state() = std::move(t.state);
    return true;
  };
  auto stop = [&] {
    return options.stop_after_seq > 0 && static_cast<int64_t>(index) >= options.stop_after_seq;
  };

  // The first transition.
  if (first.has_forked()) {
    run.set_run_id(recorded.run_id());
    run.set_request_id(recorded.request_id());
    *run.mutable_spec() = recorded.spec();
    *run.mutable_created_at() = first.time();
    *run.mutable_state() = first.forked().start();
    absl::StatusOr<Transition> t =
        router.Fork(run, first.forked().from(), first.forked().edits(),
                    first.forked().workspace_at_fork(), FromProtoTime(first.time()));
    if (!t.ok()) {
      diverge(DescribeEvent(first), absl::StrCat("the fork is refused: ", t.status().ToString()),
              "");
      return result;
    }
    if (!match(std::move(*t))) return result;
  } else {
    Transition t = router.NewRun(recorded.run_id(), recorded.request_id(), recorded.spec(),
                                 FromProtoTime(first.time()), &run);
    if (!match(std::move(t))) return result;
  }

  std::optional<NextStep> cut_call;  // the call a recorded cancel_requested found in flight
  while (index < events.size() && !stop()) {
    if (StageRouter::IsTerminal(run.state().stage())) {
      diverge(DescribeEvent(events[index]), "(the run has ended)", "");
      return result;
    }
    const RunEvent& next = events[index];
    const absl::Time now = FromProtoTime(next.time());
    const std::vector<const RunEvent*> tr = TransitionAt(events, index);
    if (next.has_resumed()) {
      absl::StatusOr<Transition> t =
          router.OnReview(run, next.resumed().review(), run.state().version(), now);
      if (!t.ok()) {
        diverge(DescribeEvent(next), absl::StrCat("the review is refused: ", t.status().ToString()),
                "");
        return result;
      }
      if (!match(std::move(*t))) return result;
      continue;
    }
    if (next.has_cancel_requested()) {  // a cancel that waits for a call or for children
      const bool in_flight = run.state().stage() != rein::v1::WAITING;
      // The call it waited for, if any, is the one the run would have made without it.
      NextStep before = router.Next(run, now);
      std::optional<Transition> t =
          router.OnCancel(run, in_flight, next.cancel_requested().reason(), now);
      if (!t || !match(std::move(*t))) {
        if (!t) diverge(DescribeEvent(next), "(the cancel is ignored)", "");
        return result;
      }
      if (in_flight && before.kind == NextStep::Kind::kCall) cut_call = std::move(before);
      continue;
    }
    if (next.has_stage_changed() && next.stage_changed().to() == rein::v1::CANCELLED &&
        next.version() == run.state().version() + 1) {
      std::optional<Transition> t =
          router.OnCancel(run, /*call_in_flight=*/false, CancelReason(tr), now);
      if (!t || !match(std::move(*t))) {
        if (!t) diverge(DescribeEvent(next), "(the cancel is ignored)", "");
        return result;
      }
      continue;
    }
    NextStep step = router.Next(run, now);
    // After a cancel_requested: the call that was in flight answered (its reply, then the end,
    // in one commit), unless the log ends the run at once (a remote cancel with no call out).
    if (cut_call && step.kind == NextStep::Kind::kCommit &&
        !Matches(*step.transition, events, index, recorded.run_id())) {
      step = *std::move(cut_call);
    }
    cut_call.reset();
    if (step.kind == NextStep::Kind::kCommit) {
      if (!match(std::move(*step.transition))) return result;
      continue;
    }
    if (step.kind != NextStep::Kind::kCall) {
      diverge(DescribeEvent(next),
              step.kind == NextStep::Kind::kEnded ? "(the run has ended)"
                                                  : "(the run waits: paused or idle)",
              "");
      return result;
    }
    // In logs written before cancel_requested was recorded, a cancel requested while the call
    // was in flight committed no event of its own: the call's transition then ended the run, one
    // version later. A WAITING parent's cancel was such a commit too, followed by its children's
    // start or their join (router_service/children).
    if (next.version() == run.state().version() + 2 &&
        (EndsCancelled(tr) || run.state().stage() == rein::v1::WAITING)) {
      std::optional<Transition> t = router.OnCancel(run, /*call_in_flight=*/true, "", now);
      if (t) *run.mutable_state() = std::move(t->state);
    }
    // The calls of the stage (at most two: INITIALIZING's tools, then its workspace check),
    // each answered from the log and applied as the engine applies a reply.
    std::optional<Transition> t;
    Effect effect = step.effect;
    for (int call = 0; call < 2 && !t; ++call) {
      std::vector<StageReply> replies = RecordedReplies(effect, tr, recorded);
      if (replies.empty()) break;
      // Where the log allows more than one reply (a failed INITIALIZING attempt: the tool
      // listing or the workspace check), the one whose transition the log holds is taken.
      std::optional<Applied> applied;
      for (const StageReply& reply : replies) {
        Applied a = router.Apply(run, reply, now);
        if (a.transition.has_value() && replies.size() > 1 &&
            !Matches(*a.transition, events, index, recorded.run_id())) {
          continue;
        }
        applied = std::move(a);
        break;
      }
      if (!applied) applied = router.Apply(run, replies.back(), now);
      if (applied->call.has_value()) {
        effect = *std::move(applied->call);
        continue;
      }
      t = std::move(applied->transition);
    }
    if (!t) {
      diverge(DescribeEvent(next),
              absl::StrCat("the router asks for ",
                           step.effect.kind == Effect::Kind::kPlan       ? "a plan"
                           : step.effect.kind == Effect::Kind::kDecide   ? "a decision"
                           : step.effect.kind == Effect::Kind::kExecute  ? "a tool call"
                           : step.effect.kind == Effect::Kind::kEvaluate ? "an evaluation"
                                                                         : "the tools",
                           " the log does not hold here"),
              "");
      return result;
    }
    if (!match(std::move(*t))) return result;
  }
  return result;
}

}  // namespace rein
