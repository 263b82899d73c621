// The run's subtask stack.
#include "router_service/subtasks.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"

namespace rein {

using rein::v1::Run;
using rein::v1::RunState;
using rein::v1::SubTask;
using rein::v1::ToolCall;
using rein::v1::ToolSpec;

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

const ToolSpec* FindTool(const RunState& st, const std::string& name) {
  for (const ToolSpec& tool : st.tools()) {
    if (tool.name() == name) return &tool;
  }
  return nullptr;
}

}  // namespace rein
