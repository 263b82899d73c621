// The Tool interface every executor tool implements, and what a call gives it and gets back.
#ifndef REIN_EXECUTOR_SERVICE_TOOL_H_
#define REIN_EXECUTOR_SERVICE_TOOL_H_

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "executor_service/process/output_buffer.h"
#include "executor_service/workspace/workspace.h"

namespace rein {

// A tool as the executor offers it (mirrors rein.v1.ToolSpec).
struct ToolSpec {
  std::string name;
  std::string description;
  nlohmann::json input_schema;  // JSON Schema of the arguments (see json_schema.h)
  bool mutating = false;
  absl::Duration default_timeout = absl::Seconds(30);
  // Runs a process in the sandbox: counts against --max_concurrent.
  bool spawns_process = false;
  // Where the tool comes from, as ListTools reports it: "builtin", "declared:<file name>"
  // (--tools_dir) or "mcp:<server>" (--mcp_config).
  std::string origin = "builtin";
};

// The outcome of one call. A tool that fails sets ok=false and error_code (a canonical code
// name such as "NOT_FOUND", or "TIMEOUT", "BINARY_FILE") and error_message.
struct ToolResult {
  bool ok = true;
  std::string output;
  bool truncated = false;
  std::string error_code;
  std::string error_message;
  // The structured reason of the failure (common/status_reason.h), "" when none: what a caller
  // tells failures apart by, never error_message.
  std::string error_reason;
  int exit_code = 0;
  bool timed_out = false;
  std::string structured_content_json;  // an MCP tool's structuredContent, "" when none
  // A mutating call that may or may not have taken effect (its MCP server died mid-call): the
  // executor answers with an RPC error (UNKNOWN), so the router pauses the run for RECOVERY.
  bool outcome_unknown = false;

  // A failed call with the status's code name, message and reason.
  static ToolResult Failure(const absl::Status& status);
  static ToolResult Failure(std::string code, std::string message);
  // A successful call whose output is `output`, finished.
  static ToolResult Success(OutputBuffer output);
  // A call stopped by its deadline; keeps the output produced so far.
  static ToolResult Timeout(OutputBuffer output, absl::string_view tool);
};

// What one call runs against. The workspace outlives the call.
struct ToolContext {
  const Workspace* workspace = nullptr;
  std::string run_id;  // the call's run ("" = none): its commands may share a resident sandbox
  // The call's namespace (ExecuteRequest.namespace; "" = "default"): whose credentials an MCP
  // server runs with.
  std::string namespace_name;
  absl::Time deadline = absl::InfiniteFuture();  // on `clock`
  size_t max_output_bytes = kDefaultMaxOutputBytes;
  Clock* clock = RealClock();  // the executor's (ToolExecutorOptions.clock)

  bool Expired() const { return clock->Now() >= deadline; }
};

// One tool. Implementations are immutable after construction and thread-safe: Execute may run
// concurrently for many calls.
class Tool {
 public:
  virtual ~Tool() = default;

  virtual const ToolSpec& spec() const = 0;

  // Whether calls of `namespace_name` ("" = "default") may see and call this tool. Every
  // namespace's, unless the tool says otherwise (an MCP server with credentials per namespace).
  virtual bool OfferedTo(absl::string_view /*namespace_name*/) const { return true; }

  // Runs the tool. `args` has been validated against spec().input_schema and has its
  // defaults applied. Never throws; failures are results with ok=false.
  virtual ToolResult Execute(const ToolContext& context, const nlohmann::json& args) const = 0;
};

// The path as tools print it: "." and empty components dropped, no trailing '/'; "" for the
// workspace itself. Only for display: resolution is always the kernel's.
std::string DisplayPath(absl::string_view path);

// `parent` + "/" + `name`, or `name` when parent is "".
std::string JoinDisplayPath(absl::string_view parent, absl::string_view name);

}  // namespace rein

#endif  // REIN_EXECUTOR_SERVICE_TOOL_H_
