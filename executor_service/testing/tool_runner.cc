// Test helper: runs one tool call through a ToolExecutor.
#include "executor_service/testing/tool_runner.h"

#include "executor_service/tool_executor.h"

namespace rein::testing {

absl::StatusOr<ToolResult> RunTool(const TempWorkspace& workspace, const std::string& tool,
                                   const std::string& args_json, const RunOptions& options) {
  ExecutorOptions executor_options;
  executor_options.workspace_root = workspace.root();
  executor_options.executor_id = "test-executor";
  absl::StatusOr<std::unique_ptr<ToolExecutor>> executor = ToolExecutor::Create(executor_options);
  if (!executor.ok()) return executor.status();
  ExecuteCall call;
  call.call_id = "call-1";
  call.run_id = "run-1";
  call.workspace = options.workspace;
  call.tool = tool;
  call.args_json = args_json;
  call.max_output_bytes = options.max_output_bytes;
  call.deadline = options.deadline;
  return (*executor)->Execute(call);
}

}  // namespace rein::testing
