// reinctl's command line: parsing argv into a Command (pure).
#include "cli/args.h"

#include <cmath>
#include <map>
#include <set>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cli/flag_values.h"
#include "google/protobuf/descriptor.h"
#include "nlohmann/json.hpp"

namespace rein::cli {
namespace {

absl::Status ParseStartFlags(const FlagValues& values, StartOptions& start) {
  start.goal = Last(values, "goal");
  start.goal_file = Last(values, "goal_file");
  start.spec_file = Last(values, "spec");
  start.workspace = Last(values, "workspace");
  start.model = Last(values, "model");
  start.request_id = Last(values, "request_id").value_or("");
  if (start.goal.has_value() && start.goal_file.has_value()) {
    return UsageError("--goal and --goal_file: give only one of them");
  }
  if (!start.goal.has_value() && !start.goal_file.has_value() && !start.spec_file.has_value()) {
    return UsageError("start needs --goal, --goal_file or --spec");
  }
  if (start.goal.has_value() && absl::StripAsciiWhitespace(*start.goal).empty()) {
    return UsageError("--goal: the goal is empty");
  }
  if (auto it = values.find("tools"); it != values.end()) start.tools = SplitList(it->second);
  if (auto it = values.find("pause"); it != values.end()) {
    std::vector<v1::PausePoint> points;
    for (const std::string& name : SplitList(it->second)) {
      absl::StatusOr<v1::PausePoint> point =
          ParseEnum<v1::PausePoint>("pause", name, v1::PausePoint_descriptor());
      if (!point.ok()) return point.status();
      points.push_back(*point);
    }
    start.pause_points = std::move(points);
  }
  if (auto value = Last(values, "max_iterations")) {
    absl::StatusOr<int32_t> parsed = ParseInt<int32_t>("max_iterations", *value, 1);
    if (!parsed.ok()) return parsed.status();
    start.max_iterations = *parsed;
  }
  if (auto value = Last(values, "retry_budget")) {
    absl::StatusOr<int32_t> parsed = ParseInt<int32_t>("retry_budget", *value, -1);
    if (!parsed.ok()) return parsed.status();
    start.retry_budget = *parsed;
  }
  if (auto value = Last(values, "token_budget")) {
    absl::StatusOr<int64_t> parsed = ParseInt<int64_t>("token_budget", *value, 0);
    if (!parsed.ok()) return parsed.status();
    start.token_budget = *parsed;
  }
  if (auto value = Last(values, "cost_budget_usd")) {
    absl::StatusOr<double> parsed = ParseDollars("cost_budget_usd", *value, /*allow_zero=*/true);
    if (!parsed.ok()) return parsed.status();
    start.cost_budget_usd = *parsed;
  }
  if (auto value = Last(values, "deadline")) {
    absl::StatusOr<absl::Duration> parsed = ParsePositiveDuration("deadline", *value);
    if (!parsed.ok()) return parsed.status();
    start.deadline = *parsed;
  }
  if (auto value = Last(values, "stage_timeout")) {
    absl::StatusOr<absl::Duration> parsed = ParsePositiveDuration("stage_timeout", *value);
    if (!parsed.ok()) return parsed.status();
    start.stage_timeout = *parsed;
  }
  if (auto value = Last(values, "on_stagnation")) {
    absl::StatusOr<v1::OnStagnation> parsed =
        ParseEnum<v1::OnStagnation>("on_stagnation", *value, v1::OnStagnation_descriptor());
    if (!parsed.ok()) return parsed.status();
    start.on_stagnation = *parsed;
  }
  if (auto value = Last(values, "no_pause_on_notes")) start.no_pause_on_notes = *value == "true";
  if (auto value = Last(values, "no_combine_evaluate_decide")) {
    start.no_combine_evaluate_decide = *value == "true";
  }
  if (auto value = Last(values, "no_combine_plan_decide")) {
    start.no_combine_plan_decide = *value == "true";
  }
  if (auto it = values.find("label"); it != values.end()) {
    std::set<std::string> seen;
    for (const std::string& label : it->second) {
      std::pair<std::string, std::string> kv = absl::StrSplit(label, absl::MaxSplits('=', 1));
      if (kv.first.empty() || !absl::StrContains(label, '=')) {
        return UsageError(absl::StrCat("--label: \"", label, "\" is not KEY=VALUE"));
      }
      if (!seen.insert(kv.first).second) {
        return UsageError(absl::StrCat("--label: key \"", kv.first, "\" given twice"));
      }
      start.labels.push_back(std::move(kv));
    }
  }
  return absl::OkStatus();
}

absl::Status RequireNonEmpty(const FlagValues& values, const char* flag, std::string& out,
                             absl::string_view subcommand);

// --tool and --args, as edit-call takes them: both non-empty, args a JSON object.
absl::Status ParseToolCallFlags(const FlagValues& values, absl::string_view subcommand,
                                std::string& tool, std::string& args_json) {
  absl::Status status = RequireNonEmpty(values, "tool", tool, subcommand);
  if (!status.ok()) return status;
  status = RequireNonEmpty(values, "args", args_json, subcommand);
  if (!status.ok()) return status;
  nlohmann::json parsed = nlohmann::json::parse(args_json, /*cb=*/nullptr,
                                                /*allow_exceptions=*/false);
  if (parsed.is_discarded()) return UsageError("--args: not valid JSON");
  if (!parsed.is_object()) return UsageError("--args: must be a JSON object");
  return absl::OkStatus();
}

absl::Status ParseForkFlags(const FlagValues& values, ForkOptions& fork) {
  if (auto value = Last(values, "at")) {
    absl::StatusOr<int32_t> parsed = ParseInt<int32_t>("at", *value, 0);
    if (!parsed.ok()) return parsed.status();
    fork.at_iteration = *parsed;
  }
  if (auto value = Last(values, "at_seq")) {
    absl::StatusOr<int64_t> parsed = ParseInt<int64_t>("at_seq", *value, 1);
    if (!parsed.ok()) return parsed.status();
    fork.at_seq = *parsed;
  }
  if (fork.at_iteration.has_value() == fork.at_seq.has_value()) {
    return UsageError("fork needs exactly one of --at=ITERATION and --at_seq=SEQ");
  }
  if (auto value = Last(values, "plan_file")) {
    absl::Status status = RequireNonEmpty(values, "plan_file", fork.plan_file, "fork");
    if (!status.ok()) return status;
  }
  if (Last(values, "tool") || Last(values, "args")) {
    absl::Status status = ParseToolCallFlags(values, "fork", fork.tool, fork.args_json);
    if (!status.ok()) return status;
    if (!fork.plan_file.empty()) {
      return UsageError("--plan_file and --tool/--args: give only one of them");
    }
  }
  if (auto value = Last(values, "answer")) {
    if (absl::StripAsciiWhitespace(*value).empty())
      return UsageError("--answer: the text is empty");
    fork.answer = *value;
  }
  if (auto value = Last(values, "max_iterations")) {
    absl::StatusOr<int32_t> parsed = ParseInt<int32_t>("max_iterations", *value, 1);
    if (!parsed.ok()) return parsed.status();
    fork.max_iterations = *parsed;
  }
  if (auto value = Last(values, "retry_budget")) {
    absl::StatusOr<int32_t> parsed = ParseInt<int32_t>("retry_budget", *value, -1);
    if (!parsed.ok()) return parsed.status();
    fork.retry_budget = *parsed;
  }
  if (auto value = Last(values, "deadline")) {
    absl::StatusOr<absl::Duration> parsed = ParsePositiveDuration("deadline", *value);
    if (!parsed.ok()) return parsed.status();
    fork.deadline = *parsed;
  }
  // A fork can raise or lower a budget but not remove one (0 would leave the source's).
  if (auto value = Last(values, "token_budget")) {
    absl::StatusOr<int64_t> parsed = ParseInt<int64_t>("token_budget", *value, 1);
    if (!parsed.ok()) return parsed.status();
    fork.token_budget = *parsed;
  }
  if (auto value = Last(values, "cost_budget_usd")) {
    absl::StatusOr<double> parsed = ParseDollars("cost_budget_usd", *value, /*allow_zero=*/false);
    if (!parsed.ok()) return parsed.status();
    fork.cost_budget_usd = *parsed;
  }
  fork.workspace_at_fork = Last(values, "workspace_at_fork") == std::optional<std::string>("true");
  fork.request_id = Last(values, "request_id").value_or("");
  return absl::OkStatus();
}

absl::Status RequireNonEmpty(const FlagValues& values, const char* flag, std::string& out,
                             absl::string_view subcommand) {
  std::optional<std::string> value = Last(values, flag);
  if (!value.has_value()) {
    return UsageError(absl::StrCat(subcommand, " needs --", flag));
  }
  if (absl::StripAsciiWhitespace(*value).empty()) {
    return UsageError(absl::StrCat("--", flag, ": the value is empty"));
  }
  out = *value;
  return absl::OkStatus();
}

absl::Status ParseNotificationsFlags(const FlagValues& values, Command& command) {
  const bool failed = Last(values, "failed") == std::optional<std::string>("true");
  const bool pending = Last(values, "pending") == std::optional<std::string>("true");
  if (failed && pending)
    return UsageError("notifications: --failed and --pending exclude each other");
  command.notice_status =
      failed ? v1::NOTICE_FAILED : (pending ? v1::NOTICE_PENDING : v1::NOTICE_STATUS_UNSPECIFIED);
  command.namespace_name = Last(values, "namespace").value_or("");
  if (auto value = Last(values, "page_size")) {
    absl::StatusOr<int32_t> parsed = ParseInt<int32_t>("page_size", *value, 1);
    if (!parsed.ok()) return parsed.status();
    if (*parsed > 1000) return UsageError("--page_size: at most 1000");
    command.page_size = *parsed;
  }
  return absl::OkStatus();
}

absl::Status ParseSubcommandFlags(const SubcommandDef& def, const FlagValues& values,
                                  Command& command) {
  command.watch = Last(values, "watch") == std::optional<std::string>("true");
  command.json = Last(values, "json") == std::optional<std::string>("true");
  if (auto value = Last(values, "version")) {
    absl::StatusOr<int64_t> parsed = ParseInt<int64_t>("version", *value, 0);
    if (!parsed.ok()) return parsed.status();
    command.expected_version = *parsed;
  }
  switch (def.subcommand) {
    case Subcommand::kStart: return ParseStartFlags(values, command.start);
    case Subcommand::kWatch:
      if (auto value = Last(values, "after_seq")) {
        absl::StatusOr<int64_t> parsed = ParseInt<int64_t>("after_seq", *value, 0);
        if (!parsed.ok()) return parsed.status();
        command.after_seq = *parsed;
      }
      return absl::OkStatus();
    case Subcommand::kApprove: return absl::OkStatus();
    case Subcommand::kReject:
      command.abort = Last(values, "abort") == std::optional<std::string>("true");
      return RequireNonEmpty(values, "feedback", command.feedback, def.name);
    case Subcommand::kAnswer: return RequireNonEmpty(values, "text", command.text, def.name);
    case Subcommand::kEditPlan:
      return RequireNonEmpty(values, "plan_file", command.plan_file, def.name);
    case Subcommand::kEditCall:
      return ParseToolCallFlags(values, def.name, command.tool, command.args_json);
    case Subcommand::kCancel:
      command.reason = Last(values, "reason").value_or("");
      return absl::OkStatus();
    case Subcommand::kList:
      if (auto value = Last(values, "stage")) {
        absl::StatusOr<v1::Stage> parsed =
            ParseEnum<v1::Stage>("stage", *value, v1::Stage_descriptor());
        if (!parsed.ok()) return parsed.status();
        command.stage_filter = *parsed;
      }
      if (auto value = Last(values, "outcome")) {
        absl::StatusOr<v1::TerminationReason> parsed =
            ParseEnum<v1::TerminationReason>("outcome", *value, v1::TerminationReason_descriptor());
        if (!parsed.ok()) return parsed.status();
        command.outcome_filter = *parsed;
      }
      if (auto value = Last(values, "page_size")) {
        absl::StatusOr<int32_t> parsed = ParseInt<int32_t>("page_size", *value, 1);
        if (!parsed.ok()) return parsed.status();
        command.page_size = *parsed;
      }
      command.page_token = Last(values, "page_token").value_or("");
      command.parent_run_id = Last(values, "parent").value_or("");
      command.all_pages = Last(values, "all") == std::optional<std::string>("true");
      command.show_usage = Last(values, "usage") == std::optional<std::string>("true");
      return absl::OkStatus();
    case Subcommand::kShow: return absl::OkStatus();
    case Subcommand::kQuota:
      command.namespace_name = Last(values, "namespace").value_or("");
      return absl::OkStatus();
    case Subcommand::kNotifications: return ParseNotificationsFlags(values, command);
    case Subcommand::kExport: return RequireNonEmpty(values, "out", command.out_dir, def.name);
    case Subcommand::kTools:
      command.namespace_name = Last(values, "namespace").value_or("");
      if (values.count("executor")) {
        return RequireNonEmpty(values, "executor", command.executor, def.name);
      }
      return absl::OkStatus();
    case Subcommand::kFork: return ParseForkFlags(values, command.fork);
    case Subcommand::kReplay:
      command.out_dir = Last(values, "save").value_or("");
      command.price_table = Last(values, "price_table").value_or("");
      return absl::OkStatus();
    case Subcommand::kDiff:
    case Subcommand::kHelp: break;
  }
  return absl::OkStatus();
}

// Splits "--name=value" / "--name" / "-name" into name and optional value.
std::pair<std::string, std::optional<std::string>> SplitFlag(absl::string_view token) {
  token.remove_prefix(absl::StartsWith(token, "--") ? 2 : 1);
  size_t eq = token.find('=');
  if (eq == absl::string_view::npos) return {std::string(token), std::nullopt};
  return {std::string(token.substr(0, eq)), std::string(token.substr(eq + 1))};
}

bool IsFlag(absl::string_view token) { return token.size() > 1 && token[0] == '-'; }

}  // namespace

absl::StatusOr<Command> ParseArgs(const std::vector<std::string>& args) {
  Command command;
  size_t i = 0;
  // Global flags before the subcommand.
  for (; i < args.size() && IsFlag(args[i]); ++i) {
    auto [name, value] = SplitFlag(args[i]);
    if (name == "help" || name == "h") {
      command.subcommand = Subcommand::kHelp;
      return command;
    }
    if (name != "router") {
      return UsageError(absl::StrCat("unknown flag --", name,
                                     " (flags other than --router go after the subcommand)"));
    }
    if (!value.has_value()) {
      if (i + 1 >= args.size()) return UsageError("--router needs a value");
      value = args[++i];
    }
    if (value->empty()) return UsageError("--router: the target is empty");
    command.router = *value;
  }
  if (i >= args.size()) {
    return UsageError("missing subcommand (run `reinctl help`)");
  }
  const std::string& name = args[i++];
  if (name == "help") {
    command.subcommand = Subcommand::kHelp;
    if (i < args.size()) {
      if (FindSubcommand(args[i]) == nullptr) {
        return UsageError(absl::StrCat("help: unknown subcommand \"", args[i], "\""));
      }
      command.help_topic = args[i];
    }
    return command;
  }
  const SubcommandDef* def = FindSubcommand(name);
  if (def == nullptr) {
    return UsageError(absl::StrCat("unknown subcommand \"", name, "\" (run `reinctl help`)"));
  }
  command.subcommand = def->subcommand;

  FlagValues values;
  std::vector<std::string> positional;
  bool flags_done = false;
  for (; i < args.size(); ++i) {
    const std::string& token = args[i];
    if (flags_done || !IsFlag(token)) {
      positional.push_back(token);
      continue;
    }
    if (token == "--") {
      flags_done = true;
      continue;
    }
    auto [flag, value] = SplitFlag(token);
    if (flag == "help" || flag == "h") {
      command.subcommand = Subcommand::kHelp;
      command.help_topic = def->name;
      return command;
    }
    bool takes_value = true;
    bool repeatable = false;
    if (flag != "router") {
      const FlagDef* found = nullptr;
      for (const FlagDef& candidate : def->flags) {
        if (flag == candidate.name) found = &candidate;
      }
      if (found == nullptr) {
        return UsageError(absl::StrCat("unknown flag --", flag, " for ", def->name));
      }
      takes_value = found->takes_value;
      repeatable = found->repeatable;
    }
    if (takes_value) {
      if (!value.has_value()) {
        if (i + 1 >= args.size()) return UsageError(absl::StrCat("--", flag, " needs a value"));
        value = args[++i];
      }
    } else {
      bool on = true;
      if (value.has_value()) {
        absl::StatusOr<bool> parsed = ParseBool(flag, *value);
        if (!parsed.ok()) return parsed.status();
        on = *parsed;
      }
      value = on ? "true" : "false";
    }
    std::vector<std::string>& slot = values[flag];
    if (!repeatable && !slot.empty() && flag != "router") {
      return UsageError(absl::StrCat("--", flag, " given twice"));
    }
    slot.push_back(*value);
  }
  if (auto router = Last(values, "router")) {
    if (router->empty()) return UsageError("--router: the target is empty");
    command.router = *router;
  }

  if (def->takes_run_id) {
    if (positional.empty()) return UsageError(absl::StrCat(def->name, " needs RUN_ID"));
    if (positional[0].empty()) return UsageError(absl::StrCat(def->name, ": RUN_ID is empty"));
    command.run_id = positional[0];
    positional.erase(positional.begin());
  }
  if (def->subcommand == Subcommand::kDiff) {
    if (positional.empty() || positional[0].empty()) return UsageError("diff needs RUN_A RUN_B");
    command.other_run_id = positional[0];
    positional.erase(positional.begin());
  }
  if (!positional.empty()) {
    return UsageError(absl::StrCat(def->name, ": unexpected argument \"", positional[0], "\""));
  }
  absl::Status status = ParseSubcommandFlags(*def, values, command);
  if (!status.ok()) return status;
  return command;
}

std::string Usage(absl::string_view topic) {
  std::string out;
  if (topic.empty()) {
    out =
        "reinctl: the command-line client of the rein router.\n\n"
        "usage: reinctl [--router=TARGET] SUBCOMMAND [ARGS] [FLAGS]\n"
        "  --router=TARGET   the router's gRPC target (default 127.0.0.1:50051); may also\n"
        "                    follow the subcommand\n"
        "  --tls_ca=PEM      connect over TLS, trusting this CA; --tls_cert=PEM and\n"
        "                    --tls_key=PEM add a client certificate\n"
        "  --token_file=F    send the bearer token in F (else $REIN_TOKEN, if set)\n\n"
        "Enum values are the proto names, case-insensitive. Durations: 500ms, 90s, 10m, 1h.\n"
        "Exit codes: 0 finished, 1 failed or cancelled, 2 usage error, 3 paused for review,\n"
        "4 error talking to the router.\n\nsubcommands:\n";
  }
  for (const SubcommandDef& def : Subcommands()) {
    if (!topic.empty() && topic != def.name) continue;
    absl::StrAppend(&out, "  ", def.usage, "\n");
  }
  if (topic.empty()) absl::StrAppend(&out, "  help [SUBCOMMAND]\n    Prints this help.\n");
  return out;
}

}  // namespace rein::cli
