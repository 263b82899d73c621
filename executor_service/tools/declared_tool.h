// Declared tools (--tools_dir): an operator's program, described by one JSON file, run exactly
// as run_command runs a command. The file format is documented in executor_service/TOOLS.md.
#ifndef REIN_EXECUTOR_SERVICE_DECLARED_TOOL_H_
#define REIN_EXECUTOR_SERVICE_DECLARED_TOOL_H_

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "executor_service/sandbox/sandbox.h"
#include "executor_service/tools/tool.h"
#include "executor_service/tools/tool_registry.h"

namespace rein {

// Largest tool file read, and the most argv elements / bytes one call may expand to.
inline constexpr size_t kMaxToolFileBytes = 1 << 20;
inline constexpr size_t kMaxDeclaredArgvElements = 4096;
inline constexpr size_t kMaxDeclaredArgvBytes = 1 << 20;

// One element of a parsed argv template.
struct ArgvTemplateElement {
  // Literal text and placeholders in turn: parts[i] is literal when !is_placeholder[i].
  std::vector<std::string> parts;
  std::vector<bool> is_placeholder;
  bool optional = false;    // dropped when an argument it names is absent
  bool allow_dash = false;  // a value may put '-' at the start of the element
  bool each = false;        // its one placeholder is an array: one element per item
  std::string when;         // a boolean argument: the element is kept only when it is true
};

// A declared tool. Immutable and thread-safe.
class DeclaredTool final : public Tool {
 public:
  // Parses one tool file's text. `file_name` becomes the origin ("declared:<file_name>").
  // INVALID_ARGUMENT naming the key and the problem (without the file's path: the loader adds
  // it). `sandbox` is not owned, may be null for parsing alone, and outlives the tool.
  static absl::StatusOr<std::unique_ptr<DeclaredTool>> Parse(absl::string_view text,
                                                             absl::string_view file_name,
                                                             const Sandbox* sandbox);

  const ToolSpec& spec() const override { return spec_; }
  ToolResult Execute(const ToolContext& context, const nlohmann::json& args) const override;

  // The argv for `args` (validated, defaults applied), or INVALID_ARGUMENT naming the
  // argument whose value is refused (a NUL byte, too long, or a '-' where no flag may be).
  absl::StatusOr<std::vector<std::string>> ExpandArgv(const nlohmann::json& args) const;

 private:
  DeclaredTool() = default;

  ToolSpec spec_;
  std::vector<ArgvTemplateElement> argv_;
  const Sandbox* sandbox_ = nullptr;
};

// Loads every tool file of `dir` into `registry`: each non-hidden entry must be a regular
// "*.json" file (hidden files are skipped). The first problem is INVALID_ARGUMENT (or
// ALREADY_EXISTS for a name taken) starting with the file's path; nothing is half-loaded
// into a running executor because the executor refuses to start.
absl::Status LoadDeclaredTools(const std::string& dir, const Sandbox* sandbox,
                               ToolRegistry* registry);

}  // namespace rein

#endif  // REIN_EXECUTOR_SERVICE_DECLARED_TOOL_H_
