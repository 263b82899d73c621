// The set of tools an executor offers, by name.
#ifndef REIN_EXECUTOR_SERVICE_TOOL_REGISTRY_H_
#define REIN_EXECUTOR_SERVICE_TOOL_REGISTRY_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "executor_service/sandbox/sandbox.h"
#include "executor_service/tools/tool.h"

namespace rein {

// What every tool name matches, whatever its origin.
inline constexpr const char* kToolNamePattern = "^[a-zA-Z0-9_-]{1,64}$";

// OK when `name` matches kToolNamePattern; INVALID_ARGUMENT naming `field` otherwise.
absl::Status CheckToolName(absl::string_view name, absl::string_view field = "name");

// Owns tools by name. Filled once at startup, then read-only and thread-safe.
class ToolRegistry {
 public:
  // Adds `tool`. ALREADY_EXISTS (naming the origin of the one registered first) when a tool of
  // that name is registered; INVALID_ARGUMENT when its name does not match kToolNamePattern or
  // its input schema is not an object schema.
  absl::Status Add(std::unique_ptr<Tool> tool);

  // The tool named `name`, or nullptr.
  const Tool* Find(absl::string_view name) const;

  // Every tool, sorted by name.
  std::vector<const Tool*> tools() const;

 private:
  std::map<std::string, std::unique_ptr<Tool>, std::less<>> tools_;
};

// Registers list_files, read_file, search_text and file_info.
absl::Status RegisterReadOnlyTools(ToolRegistry* registry);

// Registers write_file and run_command; `sandbox` is not owned and outlives the registry.
absl::Status RegisterMutatingTools(const Sandbox* sandbox, ToolRegistry* registry);

}  // namespace rein

#endif  // REIN_EXECUTOR_SERVICE_TOOL_REGISTRY_H_
