// reinctl's output: the live progress line, reports, tables and file names (pure).
#include "cli/format.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cli/child_tree.h"
#include "cli/text.h"
#include "common/proto_time.h"
#include "google/protobuf/util/json_util.h"
#include "nlohmann/json.hpp"

namespace rein::cli {
namespace {

absl::Duration FromProto(const google::protobuf::Duration& d) { return FromProtoDuration(d); }

absl::Time FromProto(const google::protobuf::Timestamp& t) { return FromProtoTime(t); }

bool IsSet(const google::protobuf::Timestamp& t) { return t.seconds() != 0 || t.nanos() != 0; }

bool IsTerminal(v1::Stage stage) {
  return stage == v1::FINISHED || stage == v1::FAILED || stage == v1::CANCELLED;
}

std::string FormatWholeSeconds(absl::Duration d) {
  if (d < absl::ZeroDuration()) d = absl::ZeroDuration();
  return FormatDurationWithUnit(absl::Trunc(d, absl::Seconds(1)));
}

std::string Indent(absl::string_view text, absl::string_view prefix) {
  std::string out;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    absl::StrAppend(&out, prefix, line, "\n");
  }
  return out;
}

}  // namespace

int32_t EffectiveMaxIterations(const v1::RunSpec& spec) {
  return spec.limits().max_iterations() > 0 ? spec.limits().max_iterations() : 50;
}

absl::Duration EffectiveDeadline(const v1::RunSpec& spec) {
  absl::Duration deadline = FromProto(spec.limits().deadline());
  return deadline > absl::ZeroDuration() ? deadline : absl::Minutes(10);
}

int32_t EffectiveRetryBudget(const v1::RunSpec& spec) {
  int32_t budget = spec.limits().retry_budget();
  if (budget == 0) return 5;
  return budget < 0 ? 0 : budget;
}

Progress ProgressOf(const v1::Run& run, absl::Time now) {
  const v1::RunState& state = run.state();
  Progress progress;
  progress.stage = state.stage();
  progress.iteration = state.iteration();
  progress.max_iterations = EffectiveMaxIterations(run.spec());
  const google::protobuf::Timestamp& start =
      IsSet(state.started_at()) ? state.started_at() : run.created_at();
  absl::Time end = now;
  if (IsTerminal(state.stage()) && IsSet(run.updated_at())) end = FromProto(run.updated_at());
  progress.elapsed = IsSet(start) ? end - FromProto(start) : absl::ZeroDuration();
  progress.deadline = EffectiveDeadline(run.spec());
  progress.retries_used = state.retries_used();
  progress.retry_budget = EffectiveRetryBudget(run.spec());
  progress.tokens_used = state.tokens_used();
  progress.token_budget = run.spec().limits().token_budget();
  return progress;
}

std::string ProgressLine(const Progress& p) {
  std::string line = absl::StrFormat(
      "stage %-12s iter %d/%d  elapsed %s/%s  retries %d/%d  tokens %d", v1::Stage_Name(p.stage),
      p.iteration, p.max_iterations, FormatWholeSeconds(p.elapsed),
      absl::FormatDuration(p.deadline), p.retries_used, p.retry_budget, p.tokens_used);
  if (p.token_budget > 0) absl::StrAppend(&line, "/", p.token_budget);
  return line;
}

std::string JsonLine(const google::protobuf::Message& message) {
  std::string out;
  google::protobuf::util::JsonPrintOptions options;
  if (!google::protobuf::util::MessageToJsonString(message, &out, options).ok()) return "{}";
  return out;
}

std::string ToolTable(const v1::ListToolsResponse& response) {
  std::string out;
  for (const v1::ToolSpec& tool : response.tools()) {
    absl::StrAppend(&out, tool.name(), "  ", tool.origin().empty() ? "builtin" : tool.origin(),
                    "  ", tool.mutating() ? "mutating" : "read-only");
    if (tool.has_default_timeout()) {
      absl::StrAppend(&out, "  timeout ",
                      absl::FormatDuration(FromProtoDuration(tool.default_timeout())));
    }
    absl::StrAppend(&out, "\n");
    for (absl::string_view line : absl::StrSplit(tool.description(), '\n')) {
      absl::StrAppend(&out, "  ", line, "\n");
    }
    nlohmann::json schema = nlohmann::json::parse(tool.input_schema_json(), /*cb=*/nullptr,
                                                  /*allow_exceptions=*/false);
    absl::StrAppend(&out, "  schema: ",
                    schema.is_discarded() ? tool.input_schema_json()
                                          : schema.dump(-1, ' ', /*ensure_ascii=*/false,
                                                        nlohmann::json::error_handler_t::replace),
                    "\n\n");
  }
  absl::StrAppend(&out, response.tools_size(), response.tools_size() == 1 ? " tool" : " tools",
                  " from executor ", response.executor_id(), " (sandbox: ", response.sandbox(),
                  ")\n");
  return out;
}

std::string PrettyMessageJson(const google::protobuf::Message& message) {
  std::string out;
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  if (!google::protobuf::util::MessageToJsonString(message, &out, options).ok()) return "{}\n";
  return out;
}

std::string PrettyJson(absl::string_view json) {
  nlohmann::json parsed =
      nlohmann::json::parse(json.begin(), json.end(), /*cb=*/nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) return std::string(json);
  return parsed.dump(/*indent=*/2, /*indent_char=*/' ', /*ensure_ascii=*/false,
                     nlohmann::json::error_handler_t::replace) +
         "\n";
}

std::string FinalReport(const v1::Run& run) {
  const v1::RunState& state = run.state();
  const v1::Outcome& outcome = state.outcome();
  std::string out = absl::StrCat(
      "run ", run.run_id(), ": ",
      v1::Stage_Name(outcome.status() != v1::STAGE_UNSPECIFIED ? outcome.status() : state.stage()),
      " (", v1::TerminationReason_Name(outcome.reason()), ")\n");
  if (!outcome.message().empty()) {
    absl::StrAppend(&out, "message: ", OneLine(outcome.message(), 1000), "\n");
  }
  absl::StrAppend(&out, "iterations ", state.iteration(), "/", EffectiveMaxIterations(run.spec()),
                  "  retries ", state.retries_used(), "/", EffectiveRetryBudget(run.spec()),
                  "  tokens ", state.tokens_used());
  if (run.spec().limits().token_budget() > 0) {
    absl::StrAppend(&out, "/", run.spec().limits().token_budget());
  }
  absl::StrAppend(&out, "\n");
  if (state.has_usage() || state.cost_used_usd() > 0 || run.spec().limits().cost_budget_usd() > 0) {
    absl::StrAppend(
        &out, "usage: ",
        UsageText(state.usage(), state.cost_used_usd(), run.spec().limits().cost_budget_usd()),
        "\n");
  }
  if (state.completed_subtasks_size() == 0) {
    absl::StrAppend(&out, "completed subtasks: none\n");
  } else {
    absl::StrAppend(&out, "completed subtasks:\n");
    for (const v1::SubTask& subtask : state.completed_subtasks()) {
      // The whole summary, one indented line per line: it is the run's result.
      const std::string& text =
          subtask.summary().empty() ? subtask.description() : subtask.summary();
      std::vector<std::string> lines = absl::StrSplit(text, '\n');
      absl::StrAppend(&out, "  [", v1::SubTask::Status_Name(subtask.status()), "] ",
                      OneLine(subtask.id(), 40), ": ", OneLine(lines[0], kLineBytes), "\n");
      for (size_t i = 1; i < lines.size() && i <= 200; ++i) {
        if (!lines[i].empty()) absl::StrAppend(&out, "      ", OneLine(lines[i], kLineBytes), "\n");
      }
    }
  }
  if (state.subtasks_size() > 0) {
    absl::StrAppend(&out, "pending subtasks: ", state.subtasks_size(), "\n");
  }
  return out;
}

std::string ReviewHint(const v1::Run& run, absl::string_view router_flag) {
  const v1::Pause& pause = run.state().pause();
  const std::string id = run.run_id();
  const std::string version = absl::StrCat(" --version=", run.state().version());
  std::string out = absl::StrCat("run ", id, " is paused (", PauseText(pause), ") at version ",
                                 run.state().version(), ".\n");
  if (pause.has_pending_call()) {
    absl::StrAppend(&out, "pending call: ", CallText(pause.pending_call()), "\n");
  }
  absl::StrAppend(&out, "review it with one of:\n");
  if (pause.reason() == v1::NEED_HUMAN) {
    absl::StrAppend(&out, "  reinctl", router_flag, " answer ", id, version, " --text=TEXT\n");
  }
  absl::StrAppend(&out, "  reinctl", router_flag, " approve ", id, version, "\n");
  absl::StrAppend(&out, "  reinctl", router_flag, " reject ", id, version,
                  " --feedback=TEXT [--abort]\n");
  absl::StrAppend(&out, "  reinctl", router_flag, " edit-plan ", id, version,
                  " --plan_file=PLAN.json\n");
  if (pause.has_pending_call()) {
    absl::StrAppend(&out, "  reinctl", router_flag, " edit-call ", id, version,
                    " --tool=NAME --args=JSON\n");
  }
  absl::StrAppend(&out, "  reinctl", router_flag, " show ", id, "\n");
  return out;
}

std::string FormatTime(const google::protobuf::Timestamp& t, absl::TimeZone zone) {
  if (!IsSet(t)) return "-";
  return absl::FormatTime("%Y-%m-%d %H:%M:%S", FromProto(t), zone);
}

std::string AlignedTable(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> widths;
  for (const auto& row : rows) {
    widths.resize(std::max(widths.size(), row.size()), 0);
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      if (i + 1 == row.size()) {
        absl::StrAppend(&line, row[i]);
      } else {
        absl::StrAppend(&line, row[i], std::string(widths[i] - row[i].size() + 2, ' '));
      }
    }
    absl::StrAppend(&out, absl::StripTrailingAsciiWhitespace(line), "\n");
  }
  return out;
}

std::string RunTable(const std::vector<v1::Run>& runs, absl::TimeZone zone, bool usage) {
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"RUN ID", "STAGE", "REASON", "ITER", "CREATED"});
  if (usage) {
    for (const char* column : {"INPUT", "OUTPUT", "CACHE READ", "CACHE WRITE", "COST USD"}) {
      rows.back().push_back(column);
    }
  }
  rows.back().push_back("GOAL");
  for (const v1::Run& run : runs) {
    const v1::TerminationReason reason = run.state().outcome().reason();
    rows.push_back(
        {OneLine(run.run_id(), 64), v1::Stage_Name(run.state().stage()),
         reason == v1::TERMINATION_REASON_UNSPECIFIED ? "-" : v1::TerminationReason_Name(reason),
         absl::StrCat(run.state().iteration()), FormatTime(run.created_at(), zone)});
    if (usage) {
      const v1::Usage& u = run.state().usage();
      for (int64_t tokens : {u.input_tokens(), u.output_tokens(), u.cache_read_input_tokens(),
                             u.cache_creation_input_tokens()}) {
        rows.back().push_back(absl::StrCat(tokens));
      }
      rows.back().push_back(absl::StrFormat("%.6f", run.state().cost_used_usd()));
    }
    rows.back().push_back(OneLine(run.spec().goal(), 50));
  }
  return AlignedTable(rows);
}

namespace {

// A child run's parent, and a parent's children as a tree (ChildTree).
std::string ChildrenText(const v1::Run& run, const std::map<std::string, v1::Run>& descendants) {
  std::string out;
  if (run.spec().has_parent()) {
    const v1::ParentRun& parent = run.spec().parent();
    absl::StrAppend(&out, "parent: ", parent.run_id(), "  (group ", parent.group(), ", subtask ",
                    parent.subtask_id(), ")\n");
  }
  return out + ChildTree(run, descendants);
}

}  // namespace

std::string RunSummary(const v1::Run& run, absl::TimeZone zone,
                       const std::map<std::string, v1::Run>& descendants) {
  const v1::RunSpec& spec = run.spec();
  const v1::RunState& state = run.state();
  std::string out = absl::StrCat("run ", run.run_id());
  if (!run.request_id().empty()) absl::StrAppend(&out, "  (request ", run.request_id(), ")");
  absl::StrAppend(&out, "\ncreated ", FormatTime(run.created_at(), zone), "  updated ",
                  FormatTime(run.updated_at(), zone), "\n");
  absl::StrAppend(&out, "goal:\n", Indent(absl::StripTrailingAsciiWhitespace(spec.goal()), "  "));
  absl::StrAppend(
      &out, "workspace: ", spec.workspace().empty() ? "default" : spec.workspace(),
      "\ntools: ", spec.tools().empty() ? "(read-only tools)" : absl::StrJoin(spec.tools(), ", "),
      "\n");
  std::vector<std::string> points;
  for (int point : spec.pause_points()) {
    points.push_back(v1::PausePoint_Name(static_cast<v1::PausePoint>(point)));
  }
  absl::StrAppend(
      &out, "pause points: ", points.empty() ? "none" : absl::StrJoin(points, ", "),
      "  pause on notes: ", (!spec.has_pause_on_notes() || spec.pause_on_notes()) ? "yes" : "no",
      (!spec.has_combine_evaluate_decide() || spec.combine_evaluate_decide())
          ? ""
          : "  one reply for evaluate and decide: no",
      (!spec.has_combine_plan_decide() || spec.combine_plan_decide())
          ? ""
          : "  one reply for plan and decide: no",
      "\n");
  const v1::Limits& limits = spec.limits();
  absl::StrAppend(
      &out, "limits: max_iterations ", EffectiveMaxIterations(spec), "  deadline ",
      absl::FormatDuration(EffectiveDeadline(spec)), "  stage_timeout ",
      limits.has_stage_timeout() ? FormatDurationProto(limits.stage_timeout()) : "120s",
      "  retry_budget ", EffectiveRetryBudget(spec), "  token_budget ",
      limits.token_budget() > 0 ? absl::StrCat(limits.token_budget()) : "none",
      "  cost_budget_usd ",
      limits.cost_budget_usd() > 0 ? absl::StrFormat("%.6f", limits.cost_budget_usd()) : "none",
      "  on_stagnation ",
      v1::OnStagnation_Name(limits.on_stagnation() == v1::ON_STAGNATION_UNSPECIFIED
                                ? v1::REPLAN_THEN_PAUSE
                                : limits.on_stagnation()),
      "\n");
  if (!spec.model().model().empty()) absl::StrAppend(&out, "model: ", spec.model().model(), "\n");
  if (!spec.labels().empty()) {
    std::vector<std::string> labels;
    for (const auto& [key, value] : spec.labels()) labels.push_back(absl::StrCat(key, "=", value));
    std::sort(labels.begin(), labels.end());
    absl::StrAppend(&out, "labels: ", absl::StrJoin(labels, " "), "\n");
  }
  if (!state.planner_backend().empty()) {
    absl::StrAppend(&out, "planner: ", state.planner_backend(), "\n");
  }

  absl::StrAppend(&out, "\nstage: ", v1::Stage_Name(state.stage()), "  (version ", state.version(),
                  ")\n");
  absl::StrAppend(&out, ChildrenText(run, descendants));
  if (state.stage() == v1::PAUSED) {
    const v1::Pause& pause = state.pause();
    absl::StrAppend(&out, "pause: ", PauseText(pause), "\n");
    if (pause.has_pending_call()) {
      absl::StrAppend(&out, "  pending call: ", CallText(pause.pending_call()), "\n");
    }
    if (!pause.question().empty()) {
      absl::StrAppend(&out, "  question: ", OneLine(pause.question(), 1000), "\n");
    }
    if (pause.resume_stage() != v1::STAGE_UNSPECIFIED) {
      absl::StrAppend(&out, "  resumes at: ", v1::Stage_Name(pause.resume_stage()), "\n");
    }
  }
  absl::StrAppend(&out, "counters: iteration ", state.iteration(), "/",
                  EffectiveMaxIterations(spec), "  retries ", state.retries_used(), "/",
                  EffectiveRetryBudget(spec), "  consecutive tool failures ",
                  state.consecutive_tool_failures(), "  tokens ", state.tokens_used(), "\n");
  absl::StrAppend(&out, "usage: ",
                  UsageText(state.usage(), state.cost_used_usd(), limits.cost_budget_usd()), "\n");

  absl::StrAppend(&out, "\nsubtasks (top first):", state.subtasks().empty() ? " none" : "", "\n");
  for (const v1::SubTask& subtask : state.subtasks()) {
    absl::StrAppend(&out, "  ", OneLine(subtask.id(), 40), " [",
                    v1::SubTask::Status_Name(subtask.status()), "] ",
                    OneLine(subtask.description(), kLineBytes));
    if (!subtask.allowed_tools().empty()) {
      absl::StrAppend(&out, "  (tools: ", absl::StrJoin(subtask.allowed_tools(), ", "), ")");
    }
    absl::StrAppend(&out, "\n");
  }
  absl::StrAppend(&out, "completed:", state.completed_subtasks().empty() ? " none" : "", "\n");
  for (const v1::SubTask& subtask : state.completed_subtasks()) {
    absl::StrAppend(&out, "  [", v1::SubTask::Status_Name(subtask.status()), "] ",
                    OneLine(subtask.id(), 40), ": ", OneLine(subtask.summary(), kLineBytes), "\n");
  }
  absl::StrAppend(
      &out, "recent actions (newest last):", state.recent_actions().empty() ? " none" : "", "\n");
  for (const v1::Action& action : state.recent_actions()) {
    absl::StrAppend(&out, "  iter ", action.iteration(), " ", OneLine(action.subtask_id(), 40), " ",
                    OneLine(action.tool(), 64), " ", OneLine(action.args_json(), 80), " ",
                    action.ok() ? "ok" : "FAILED", " ", FormatDurationProto(action.duration()));
    const std::string& text =
        action.ok() || action.error().empty() ? action.observation() : action.error();
    if (!text.empty()) absl::StrAppend(&out, ": ", OneLine(text, 100));
    absl::StrAppend(&out, "\n");
  }
  if (!state.notes().empty()) {
    absl::StrAppend(&out, "notes:\n");
    for (const std::string& note : state.notes()) {
      absl::StrAppend(&out, "  ", OneLine(note, kLineBytes), "\n");
    }
  }
  if (!state.human_inputs().empty()) {
    absl::StrAppend(&out, "human inputs:\n");
    for (const v1::HumanInput& input : state.human_inputs()) {
      absl::StrAppend(&out, "  iter ", input.iteration(), " ",
                      v1::HumanInput::Kind_Name(input.kind()), ": ",
                      OneLine(input.text(), kLineBytes), "\n");
    }
  }
  if (state.outcome().status() != v1::STAGE_UNSPECIFIED) {
    const v1::Outcome& outcome = state.outcome();
    absl::StrAppend(&out, "\noutcome: ", v1::Stage_Name(outcome.status()), " ",
                    v1::TerminationReason_Name(outcome.reason()));
    if (!outcome.message().empty()) {
      absl::StrAppend(&out, ": ", OneLine(outcome.message(), 1000));
    }
    absl::StrAppend(&out, "\n");
  }
  return out;
}

std::string SnapshotFileName(const v1::RunSnapshot& snapshot) {
  std::string id = snapshot.run_id().empty() ? "run" : snapshot.run_id();
  for (char& c : id) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') {
      c = '_';
    }
  }
  return absl::StrFormat("%s-%04d-v%d.json", id, snapshot.iteration(), snapshot.version());
}

}  // namespace rein::cli
