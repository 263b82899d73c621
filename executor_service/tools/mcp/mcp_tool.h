// MCP servers' tools as executor tools: named <server>__<tool>, validated against the server's
// input schema, called in a session of their own.
#ifndef REIN_EXECUTOR_SERVICE_MCP_MCP_TOOL_H_
#define REIN_EXECUTOR_SERVICE_MCP_MCP_TOOL_H_

#include <memory>
#include <set>
#include <string>

#include "absl/status/status.h"
#include "executor_service/sandbox/sandbox.h"
#include "executor_service/tools/mcp/mcp_client.h"
#include "executor_service/tools/mcp/mcp_config.h"
#include "executor_service/tools/mcp/mcp_server.h"
#include "executor_service/tools/tool.h"
#include "executor_service/tools/tool_registry.h"

namespace rein {

// The executor's name of `tool` of `server`: "<server>__<tool>" when that matches
// ^[a-zA-Z0-9_-]{1,64}$; otherwise deterministically shortened: characters outside the set
// become '_', the result is cut to 55 characters and "_" plus the first 8 hex digits of the
// SHA-256 of the full name is appended, so distinct tools keep distinct names.
std::string McpToolName(const std::string& server, const std::string& tool);

// One tool of one server. Each call opens a session (a fresh sandboxed process for stdio) with
// the credentials of the call's namespace, checks that the server still lists the tool with
// the schema it was registered with, calls it and ends the session. Immutable and thread-safe.
class McpTool final : public Tool {
 public:
  // `namespaces`: those offered the tool (whose credentials listed it); empty = every one.
  McpTool(std::shared_ptr<const McpServer> server, const McpToolInfo& info,
          std::set<std::string> namespaces = {});

  const ToolSpec& spec() const override { return spec_; }
  bool OfferedTo(absl::string_view namespace_name) const override;
  const std::string& remote_name() const { return remote_name_; }

  ToolResult Execute(const ToolContext& context, const nlohmann::json& args) const override;

 private:
  std::shared_ptr<const McpServer> server_;
  std::string remote_name_;
  std::string registered_hash_;
  ToolSpec spec_;
  std::set<std::string> namespaces_;
};

// Lists the tools of every server in `config` (a stdio server runs in an empty scratch
// workspace for this) and registers them. A server with credentials per namespace is listed
// once per namespace, with that namespace's credentials, and each tool is offered to the
// namespaces whose listing holds it; a tool listed differently (description, schema,
// readOnlyHint) for two namespaces is an error. A server that cannot be started, reached or
// listed (with any namespace's credentials), or speaks an unsupported protocol version, is an
// error naming it: the executor does not start half-configured. A tool whose schema uses what the
// validator cannot enforce is left out with a logged reason. `sandbox` is not owned and outlives
// the registry.
absl::Status RegisterMcpTools(const McpConfig& config, const Sandbox* sandbox,
                              ToolRegistry* registry);

}  // namespace rein

#endif  // REIN_EXECUTOR_SERVICE_MCP_MCP_TOOL_H_
