// The set of tools an executor offers.
#include "executor_service/tools/tool_registry.h"

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "executor_service/tools/file_info_tool.h"
#include "executor_service/tools/list_files_tool.h"
#include "executor_service/tools/read_file_tool.h"
#include "executor_service/tools/run_command_tool.h"
#include "executor_service/tools/search_text_tool.h"
#include "executor_service/tools/write_file_tool.h"

namespace rein {

absl::Status CheckToolName(absl::string_view name, absl::string_view field) {
  bool ok = !name.empty() && name.size() <= 64;
  for (char c : name) {
    ok = ok && (absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-');
  }
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(field, ": \"", absl::CHexEscape(name.substr(0, 80)),
                   "\" is not a valid tool name (must match ", kToolNamePattern, ")"));
}

absl::Status ToolRegistry::Add(std::unique_ptr<Tool> tool) {
  const ToolSpec& spec = tool->spec();
  absl::Status named = CheckToolName(spec.name, "tool name");
  if (!named.ok()) return named;
  if (!spec.input_schema.is_object() || !spec.input_schema.contains("type") ||
      spec.input_schema["type"] != "object") {
    return absl::InvalidArgumentError(
        absl::StrCat("tool ", spec.name, ": input_schema must be an object schema"));
  }
  if (const Tool* existing = Find(spec.name)) {
    return absl::AlreadyExistsError(
        absl::StrCat("tool ", spec.name, " is already registered (", existing->spec().origin, ")"));
  }
  const std::string name = spec.name;
  tools_.emplace(name, std::move(tool));
  return absl::OkStatus();
}

const Tool* ToolRegistry::Find(absl::string_view name) const {
  auto it = tools_.find(name);
  return it == tools_.end() ? nullptr : it->second.get();
}

std::vector<const Tool*> ToolRegistry::tools() const {
  std::vector<const Tool*> out;
  for (const auto& [name, tool] : tools_) out.push_back(tool.get());
  return out;
}

absl::Status RegisterReadOnlyTools(ToolRegistry* registry) {
  absl::Status status = registry->Add(std::make_unique<ListFilesTool>());
  if (status.ok()) status = registry->Add(std::make_unique<ReadFileTool>());
  if (status.ok()) status = registry->Add(std::make_unique<SearchTextTool>());
  if (status.ok()) status = registry->Add(std::make_unique<FileInfoTool>());
  return status;
}

}  // namespace rein

namespace rein {

absl::Status RegisterMutatingTools(const Sandbox* sandbox, ToolRegistry* registry) {
  absl::Status status = registry->Add(std::make_unique<WriteFileTool>(&sandbox->protected_paths()));
  if (status.ok()) status = registry->Add(std::make_unique<RunCommandTool>(sandbox));
  return status;
}

}  // namespace rein
