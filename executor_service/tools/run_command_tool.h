// The `run_command` tool: runs an argv or a shell string in the sandbox, in the workspace.
#ifndef REIN_EXECUTOR_SERVICE_RUN_COMMAND_TOOL_H_
#define REIN_EXECUTOR_SERVICE_RUN_COMMAND_TOOL_H_

#include "executor_service/sandbox/sandbox.h"
#include "executor_service/tools/tool.h"

namespace rein {

// Longest timeout a command may ask for, and its default.
inline constexpr int kMaxCommandTimeoutSeconds = 600;
// The kernel refuses an argument (or the shell string) of MAX_ARG_STRLEN (131072) bytes or
// more, counting its NUL: the longest accepted, in bytes.
inline constexpr size_t kMaxCommandArgBytes = 131071;
inline constexpr int kDefaultCommandTimeoutSeconds = 30;

// Runs `request` in `context`'s workspace through `sandbox` (bubblewrap, rlimits, pids limit,
// output cap, tree kill at request.deadline) and turns the outcome into a result: output
// escaped and capped with a truncation note, NONZERO_EXIT, TIMEOUT, or the sandbox's error.
// `tool` names the tool in messages. Every tool that runs a program goes through here.
ToolResult RunSandboxedCommand(const Sandbox& sandbox, const ToolContext& context,
                               CommandRequest request, absl::string_view tool);

// Mutating; immutable and thread-safe. `sandbox` is not owned and outlives the tool.
class RunCommandTool final : public Tool {
 public:
  explicit RunCommandTool(const Sandbox* sandbox);
  const ToolSpec& spec() const override { return spec_; }
  ToolResult Execute(const ToolContext& context, const nlohmann::json& args) const override;

 private:
  const Sandbox* sandbox_;
  ToolSpec spec_;
};

}  // namespace rein

#endif  // REIN_EXECUTOR_SERVICE_RUN_COMMAND_TOOL_H_
