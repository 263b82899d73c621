// The `write_file` tool: replaces (or creates) a workspace file atomically.
#ifndef REIN_EXECUTOR_SERVICE_WRITE_FILE_TOOL_H_
#define REIN_EXECUTOR_SERVICE_WRITE_FILE_TOOL_H_

#include "executor_service/sandbox/protected_paths.h"
#include "executor_service/tools/tool.h"

namespace rein {

// Largest content write_file accepts.
inline constexpr size_t kMaxWriteFileBytes = 1 << 20;

// Mutating; immutable and thread-safe. `protected_paths` is not owned and outlives the tool.
class WriteFileTool final : public Tool {
 public:
  explicit WriteFileTool(const ProtectedPaths* protected_paths);
  const ToolSpec& spec() const override { return spec_; }
  ToolResult Execute(const ToolContext& context, const nlohmann::json& args) const override;

 private:
  const ProtectedPaths* protected_;
  ToolSpec spec_;
};

}  // namespace rein

#endif  // REIN_EXECUTOR_SERVICE_WRITE_FILE_TOOL_H_
