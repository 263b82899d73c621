// Loads the stage prompts and renders bounded views of planner requests into them.
#include "planner_service/stage_prompts.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"

namespace rein {
namespace {

constexpr size_t kMaxPromptFileBytes = 256 * 1024;
constexpr const char* kStages[] = {"plan", "decide", "evaluate"};

struct StageVariables {
  std::set<std::string> provided;
  std::set<std::string> required;
};

// What each stage's templates may use. The context template is the first block of the user
// message and ends at a cache breakpoint, so it takes only what is the same for every call of a
// run (the goal, the run's tools); the user template takes what changes from call to call.
struct TemplateVariables {
  StageVariables context;
  StageVariables user;
};

const std::map<std::string, TemplateVariables>& StageTemplateVariables() {
  static const auto* const vars = new std::map<std::string, TemplateVariables>{
      {"plan",
       {{{"goal_text", "tool_list"}, {"goal_text"}},
        {{"done_list", "observation_text", "human_notes", "replan_text", "id_prefix",
          "first_call_text", "delegation_text"},
         {}}}},
      {"decide",
       {{{"goal_text", "tool_list"}, {"goal_text", "tool_list"}},
        {{"subtask_text", "allowed_tool_names", "action_lines", "human_notes"},
         {"subtask_text", "allowed_tool_names"}}}},
      {"evaluate",
       {{{"goal_text", "tool_list"}, {"goal_text"}},
        {{"subtask_text", "action_text", "observation_text", "next_call_text"},
         {"subtask_text", "observation_text"}}}},
  };
  return *vars;
}

constexpr const char* kParts[] = {"system", "context", "user"};

// The heading of a stage's part of the shared system prompt.
std::string SystemHeading(const std::string& stage) {
  if (stage == "plan") return "## When asked to call submit_plan (the PLANNING stage)";
  if (stage == "decide") return "## When asked to call submit_decision (the DECIDING stage)";
  return "## When asked to call submit_evaluation (the EVALUATING stage)";
}

bool IsDirectory(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

absl::StatusOr<std::string> ReadPromptFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(absl::StrCat(path, ": cannot read: ", std::strerror(errno)));
  }
  std::string text;
  char buffer[8192];
  while (in.read(buffer, sizeof(buffer)) || in.gcount() > 0) {
    text.append(buffer, static_cast<size_t>(in.gcount()));
    if (text.size() > kMaxPromptFileBytes) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": larger than ", kMaxPromptFileBytes, " bytes"));
    }
  }
  return text;
}

std::string OrNone(std::string text) { return text.empty() ? "(none)" : text; }

std::string SubtaskLine(const rein::v1::SubTask& task, size_t description_bytes) {
  return absl::StrCat("[", CapText(task.id(), 128), "] ",
                      CapText(task.description(), description_bytes));
}

std::string HumanNotes(const google::protobuf::RepeatedPtrField<rein::v1::HumanInput>& inputs,
                       const PromptBounds& b) {
  std::vector<std::string> lines;
  const int n = inputs.size();
  const int first =
      n > static_cast<int>(b.human_inputs_shown) ? n - static_cast<int>(b.human_inputs_shown) : 0;
  if (first > 0) lines.push_back(absl::StrCat("(", first, " earlier inputs not shown)"));
  for (int i = first; i < n; ++i) {
    const rein::v1::HumanInput& in = inputs[i];
    std::string line = "- ";
    if (in.kind() == rein::v1::HumanInput::ANSWER) {
      absl::StrAppend(&line, "answer to \"", CapText(in.question(), 200), "\": ");
    } else if (in.kind() == rein::v1::HumanInput::FEEDBACK) {
      absl::StrAppend(&line, "reviewer feedback: ");
    }
    absl::StrAppend(
        &line, CapText(in.text(), i == n - 1 ? b.human_input_bytes : b.older_human_input_bytes));
    lines.push_back(std::move(line));
  }
  return OrNone(absl::StrJoin(lines, "\n"));
}

std::string StatusWord(rein::v1::SubTask::Status status) {
  switch (status) {
    case rein::v1::SubTask::COMPLETED: return "COMPLETED";
    case rein::v1::SubTask::FAILED: return "FAILED";
    case rein::v1::SubTask::IN_PROGRESS: return "IN_PROGRESS";
    case rein::v1::SubTask::PENDING: return "PENDING";
    default: return "ENDED";
  }
}

std::string DoneList(const rein::v1::PlanRequest& r, const PromptBounds& b) {
  std::vector<std::string> lines;
  const int n = r.completed_size();
  const int first =
      n > static_cast<int>(b.completed_shown) ? n - static_cast<int>(b.completed_shown) : 0;
  if (first > 0) lines.push_back(absl::StrCat("(", first, " earlier subtasks not shown)"));
  for (int i = first; i < n; ++i) {
    const rein::v1::SubTask& task = r.completed(i);
    const bool newest = i == n - 1;  // the ones before it shorter, so the list stays flat
    lines.push_back(absl::StrCat(
        "- ", SubtaskLine(task, newest ? b.description_bytes : b.older_description_bytes), " -> ",
        StatusWord(task.status()), ": ",
        CapText(task.summary(), newest ? b.summary_bytes : b.older_summary_bytes)));
  }
  return OrNone(absl::StrJoin(lines, "\n"));
}

// Each tool with what it does (no schema).
std::string ToolList(const google::protobuf::RepeatedPtrField<rein::v1::ToolSpec>& tools,
                     const PromptBounds& b) {
  std::vector<std::string> lines;
  for (const rein::v1::ToolSpec& tool : tools) {
    lines.push_back(absl::StrCat("- ", CapText(tool.name(), 128),
                                 tool.mutating() ? " (changes the workspace)" : "", ": ",
                                 CapText(tool.description(), b.tool_description_bytes)));
  }
  return OrNone(absl::StrJoin(lines, "\n"));
}

// Tools with their argument schemas.
std::string ToolsWithSchemas(const google::protobuf::RepeatedPtrField<rein::v1::ToolSpec>& tools,
                             const PromptBounds& b) {
  std::vector<std::string> lines;
  for (const rein::v1::ToolSpec& tool : tools) {
    lines.push_back(absl::StrCat(
        "- ", CapText(tool.name(), 128), tool.mutating() ? " (changes the workspace)" : "", ": ",
        CapText(tool.description(), b.tool_description_bytes), "\n  arguments schema: ",
        CapText(tool.input_schema_json().empty() ? "{}" : tool.input_schema_json(),
                b.tool_schema_bytes)));
  }
  return OrNone(absl::StrJoin(lines, "\n"));
}

// Every tool of the run with its argument schema (the subtask's tools when the router sent no
// run_tools).
std::string DecideTools(const rein::v1::DecideRequest& r, const PromptBounds& b) {
  return ToolsWithSchemas(r.run_tools().empty() ? r.tools() : r.run_tools(), b);
}

// What Plan sees of the latest observation. After a subtask that ended COMPLETED, with no
// reason to plan again, its evaluation's summary (in the list of ended subtasks) stands for the
// observation, which is not repeated; otherwise (a failure, a replan, a first plan after a
// human input) the observation is shown, capped.
std::string PlanObservation(const rein::v1::PlanRequest& r, const PromptBounds& b) {
  if (r.replan_reason().empty() && !r.latest_observation().empty() && r.completed_size() > 0 &&
      r.completed(r.completed_size() - 1).status() == rein::v1::SubTask::COMPLETED) {
    return "(summarized by the newest ended subtask above)";
  }
  return OrNone(CapText(r.latest_observation(), b.plan_observation_bytes));
}

// What Evaluate is told per call about next_tool_call (the rule is in its system prompt): the
// tools it may use, or to leave it out.
std::string NextCallText(const rein::v1::EvaluateRequest& r) {
  if (!r.propose_next()) return "Leave next_tool_call out.";
  std::vector<std::string> names;
  for (const std::string& name : r.subtask().allowed_tools()) names.push_back(CapText(name, 128));
  return absl::StrCat("Tools for next_tool_call: ", OrNone(absl::StrJoin(names, ", ")), ".");
}

// What Plan is told per call about first_tool_call (the rule is in its system prompt).
std::string FirstCallText(const rein::v1::PlanRequest& r) {
  return r.propose_first_call() ? "Also fill first_tool_call." : "Leave first_tool_call out.";
}

// What Plan is told about child runs: nothing unless the run may start them
// (PlanRequest.allow_delegation), when the schema offers SubTask.delegate.
std::string DelegationText(const rein::v1::PlanRequest& r) {
  if (!r.allow_delegation()) return "";
  return absl::StrCat(
      "\n\nYou may hand subtasks to child runs that work in parallel: mark them delegate. "
      "Each child gets the subtask's description as its goal (with this goal as context) and "
      "only the subtask's allowed tools, plans and works on its own in the same workspace at "
      "the same time, and its final summary comes back as the subtask's result. Consecutive "
      "delegated subtasks run together (at most ",
      r.max_parallel_children(), " in a row, ", r.children_left(),
      " children left in all); the subtasks after them wait until all have ended. Delegate "
      "independent work that only reads (auditing, searching, reviewing parts); keep subtasks "
      "that write undelegated, after the group, so no two runs write the same files.");
}

// The names of the tools the subtask may use.
std::string AllowedTools(const rein::v1::DecideRequest& r) {
  std::vector<std::string> names;
  for (const rein::v1::ToolSpec& tool : r.tools()) names.push_back(CapText(tool.name(), 128));
  return OrNone(absl::StrJoin(names, ", "));
}

// How much of one action a prompt shows.
struct ActionCaps {
  size_t args;
  size_t error;
  size_t observation;  // 0 = the observation is not shown
};

std::string ActionLine(const rein::v1::Action& a, const ActionCaps& caps) {
  std::string line = absl::StrCat("tool ", CapText(a.tool(), 128), " with arguments ",
                                  CapText(a.args_json(), caps.args));
  if (a.ok()) {
    absl::StrAppend(&line, " -> succeeded");
  } else {
    absl::StrAppend(&line, " -> failed: ", CapText(a.error(), caps.error));
  }
  if (caps.observation > 0) {
    absl::StrAppend(&line, "\n  observation: ", CapText(a.observation(), caps.observation));
  }
  return line;
}

std::string ActionLines(const rein::v1::DecideRequest& r, const PromptBounds& b) {
  std::vector<std::string> lines;
  const int n = r.recent_actions_size();
  const int first =
      n > static_cast<int>(b.actions_shown) ? n - static_cast<int>(b.actions_shown) : 0;
  const ActionCaps newest{b.action_args_bytes, b.action_error_bytes, b.action_observation_bytes};
  // The two before it: what was called and whether it worked (enough to see a repeat), never
  // their observations, so the prompt does not grow with what earlier reads returned.
  const ActionCaps older{b.older_action_bytes, b.older_action_bytes, /*observation=*/0};
  for (int i = first; i < n; ++i) {
    const rein::v1::Action& a = r.recent_actions(i);
    lines.push_back(absl::StrCat(i - first + 1, ". (iteration ", a.iteration(), ", subtask ",
                                 CapText(a.subtask_id(), 64), ") ",
                                 ActionLine(a, i == n - 1 ? newest : older)));
  }
  return OrNone(absl::StrJoin(lines, "\n"));
}

}  // namespace

std::string CapText(absl::string_view text, size_t max_bytes) {
  if (text.size() <= max_bytes) return std::string(text);
  size_t cut = max_bytes;
  // Back up to the start of a UTF-8 sequence (never split a character).
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return absl::StrCat(text.substr(0, cut), " …[+", text.size() - cut, " bytes]");
}

absl::StatusOr<std::unique_ptr<StagePrompts>> StagePrompts::FromTexts(
    const std::map<std::string, std::string>& texts, PromptBounds bounds) {
  std::map<std::string, PromptTemplate> templates;
  for (const char* stage : kStages) {
    for (const std::string part : kParts) {
      const std::string file = absl::StrCat(stage, "_", part, ".txt");
      auto it = texts.find(file);
      if (it == texts.end()) return absl::NotFoundError(absl::StrCat(file, ": missing"));
      ASSIGN_OR_RETURN(PromptTemplate t, PromptTemplate::Parse(it->second, file));
      const StageVariables none;
      const TemplateVariables& stage_vars = StageTemplateVariables().at(stage);
      const StageVariables& allowed = part == "context" ? stage_vars.context
                                      : part == "user"  ? stage_vars.user
                                                        : none;
      for (const std::string& name : t.variables()) {
        if (allowed.provided.count(name) == 0) {
          std::string why;
          if (part == "system") {
            why = " (system prompts take no variables, so they are cached)";
          } else {
            why = absl::StrCat(
                " (the ", stage, " stage's ", part,
                " template takes: ", absl::StrJoin(allowed.provided, ", "),
                part == "context" ? "; it holds only what is the same for every call of a run" : "",
                ")");
          }
          return absl::InvalidArgumentError(
              absl::StrCat(file, ": unknown variable \"", name, "\"", why));
        }
      }
      for (const std::string& name : allowed.required) {
        if (t.variables().count(name) == 0) {
          return absl::InvalidArgumentError(absl::StrCat(file, ": missing variable \"", name,
                                                         "\" (required by the ", stage, " stage)"));
        }
      }
      templates.emplace(file, std::move(t));
    }
  }
  // One system prompt for every stage: each request then shares its tools and system prompt
  // with the other stages' requests of the run, a prefix long enough to be cached.
  std::map<std::string, std::string> stage_systems;
  std::string system =
      "You answer one request at a time of an agent run controlled by a host program. The tool "
      "you are asked to call names the request's stage; follow only that stage's part below.";
  for (const char* stage : kStages) {
    const std::string file = absl::StrCat(stage, "_system.txt");
    ASSIGN_OR_RETURN(std::string text, templates.at(file).Render({}));
    absl::StrAppend(&system, "\n\n", SystemHeading(stage), "\n\n", text);
    stage_systems.emplace(stage, std::move(text));
  }
  return std::unique_ptr<StagePrompts>(
      new StagePrompts(bounds, std::move(templates), std::move(system), std::move(stage_systems)));
}

absl::StatusOr<std::unique_ptr<StagePrompts>> StagePrompts::Load(const std::string& dir,
                                                                 PromptBounds bounds) {
  if (!IsDirectory(dir)) {
    return absl::NotFoundError(absl::StrCat(dir, ": no such prompts folder (see --prompts_dir)"));
  }
  std::map<std::string, std::string> texts;
  for (const char* stage : kStages) {
    for (const char* part : kParts) {
      const std::string file = absl::StrCat(stage, "_", part, ".txt");
      const std::string path = absl::StrCat(dir, "/", file);
      ASSIGN_OR_RETURN(std::string text, ReadPromptFile(path));
      texts.emplace(file, std::move(text));
    }
  }
  absl::StatusOr<std::unique_ptr<StagePrompts>> prompts = FromTexts(texts, bounds);
  if (!prompts.ok()) {
    return absl::Status(prompts.status().code(),
                        absl::StrCat(dir, "/", prompts.status().message()));
  }
  return prompts;
}

absl::StatusOr<RenderedPrompt> StagePrompts::Render(
    const std::string& stage, const std::map<std::string, std::string>& all) const {
  RenderedPrompt out;
  for (const std::string part : kParts) {
    const PromptTemplate& t = templates_.at(absl::StrCat(stage, "_", part, ".txt"));
    std::map<std::string, std::string> values;
    for (const std::string& name : t.variables()) values[name] = all.at(name);
    if (part == "system") continue;  // shared: system_
    std::string* target = part == "context" ? &out.context : &out.user;
    ASSIGN_OR_RETURN(*target, t.Render(values));
  }
  out.system = system_;
  out.stage_system = stage_systems_.at(stage);
  return out;
}

absl::StatusOr<RenderedPrompt> StagePrompts::RenderPlan(const rein::v1::PlanRequest& r) const {
  const PromptBounds& b = bounds_;
  return Render("plan", {{"goal_text", r.goal()},
                         {"tool_list", ToolsWithSchemas(r.tools(), b)},
                         {"done_list", DoneList(r, b)},
                         {"observation_text", PlanObservation(r, b)},
                         {"human_notes", HumanNotes(r.human_inputs(), b)},
                         {"replan_text", OrNone(CapText(r.replan_reason(), b.replan_reason_bytes))},
                         {"id_prefix", absl::StrCat("p", r.iteration(), "-")},
                         {"first_call_text", FirstCallText(r)},
                         {"delegation_text", DelegationText(r)}});
}

absl::StatusOr<RenderedPrompt> StagePrompts::RenderDecide(const rein::v1::DecideRequest& r) const {
  const PromptBounds& b = bounds_;
  return Render("decide", {{"goal_text", r.goal()},
                           {"subtask_text", SubtaskLine(r.subtask(), b.subtask_description_bytes)},
                           {"tool_list", DecideTools(r, b)},
                           {"allowed_tool_names", AllowedTools(r)},
                           {"action_lines", ActionLines(r, b)},
                           {"human_notes", HumanNotes(r.human_inputs(), b)}});
}

absl::StatusOr<RenderedPrompt> StagePrompts::RenderEvaluate(
    const rein::v1::EvaluateRequest& r) const {
  const PromptBounds& b = bounds_;
  return Render(
      "evaluate",
      {{"goal_text", r.goal()},
       // With propose_next the next call needs the argument schemas (run-constant: cached).
       {"tool_list",
        r.propose_next() ? ToolsWithSchemas(r.run_tools(), b) : ToolList(r.run_tools(), b)},
       {"subtask_text", SubtaskLine(r.subtask(), b.subtask_description_bytes)},
       {"next_call_text", NextCallText(r)},
       {"action_text",
        r.has_action()
            ? ActionLine(r.action(), ActionCaps{/*args=*/1000, /*error=*/1000, /*observation=*/0})
            : std::string("(none)")},
       {"observation_text", OrNone(CapText(r.observation(), b.evaluate_observation_bytes))}});
}

std::string DefaultPromptsDir() {
  std::vector<std::string> candidates;
  for (const char* env : {"RUNFILES_DIR", "TEST_SRCDIR"}) {
    const char* value = getenv(env);
    if (value != nullptr && *value != '\0') {
      candidates.push_back(absl::StrCat(value, "/rein/planner_service/prompts"));
    }
  }
  char exe[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n > 0) {
    const std::string path(exe, static_cast<size_t>(n));
    candidates.push_back(absl::StrCat(path, ".runfiles/rein/planner_service/prompts"));
    const size_t slash = path.rfind('/');
    if (slash != std::string::npos) {
      candidates.push_back(absl::StrCat(path.substr(0, slash), "/prompts"));
    }
  }
  for (const std::string& dir : candidates) {
    if (IsDirectory(dir)) return dir;
  }
  return "planner_service/prompts";
}

}  // namespace rein
