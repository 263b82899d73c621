// Test helper: runs one tool call through a ToolExecutor over a TempWorkspace.
#ifndef REIN_EXECUTOR_SERVICE_TESTING_TOOL_RUNNER_H_
#define REIN_EXECUTOR_SERVICE_TESTING_TOOL_RUNNER_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "executor_service/testing/temp_workspace.h"
#include "executor_service/tools/tool.h"

namespace rein::testing {

struct RunOptions {
  int64_t max_output_bytes = 0;
  absl::Time deadline = absl::InfiniteFuture();
  std::string workspace = TempWorkspace::kName;
};

// Runs `tool` with `args_json` in `workspace` (call_id "call-1", run_id "run-1").
absl::StatusOr<ToolResult> RunTool(const TempWorkspace& workspace, const std::string& tool,
                                   const std::string& args_json, const RunOptions& options = {});

}  // namespace rein::testing

#endif  // REIN_EXECUTOR_SERVICE_TESTING_TOOL_RUNNER_H_
