// Conversations with one configured MCP server: a stdio server started in the sandbox of the
// call's workspace, or a session with a streamable HTTP server.
#ifndef REIN_EXECUTOR_SERVICE_MCP_MCP_SERVER_H_
#define REIN_EXECUTOR_SERVICE_MCP_MCP_SERVER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "executor_service/sandbox/sandbox.h"
#include "executor_service/tools/mcp/mcp_client.h"
#include "executor_service/tools/mcp/mcp_config.h"
#include "executor_service/workspace/workspace.h"

namespace rein {

// One initialized conversation. Close (or destruction) ends it: a stdio server's stdin is
// closed and, if it has not exited within a moment, its whole sandbox is killed; nothing of
// it outlives the session.
class McpSession {
 public:
  virtual ~McpSession() = default;
  McpClient& client() { return client_; }
  // Ends the session; returns how a stdio server ended ("" when it was still running or for
  // HTTP), e.g. "exit status 1; stderr: ...", secrets redacted.
  virtual std::string Close() = 0;

 protected:
  explicit McpSession(McpTransport* transport) : client_(transport) {}
  McpClient client_;
};

// A configured server. Every call opens its own session (see MCP.md for why). Thread-safe.
class McpServer {
 public:
  // `sandbox` (for stdio servers) is not owned and outlives this.
  McpServer(McpServerConfig config, const Sandbox* sandbox)
      : config_(std::move(config)), sandbox_(sandbox) {}

  const McpServerConfig& config() const { return config_; }

  // Starts (stdio) or connects to (http) the server for `workspace` and initializes it, with
  // the credentials of `namespace_name` ("" = "default"; CredentialsFor): a stdio server's
  // process, like an HTTP session, serves that one call of that one namespace.
  // Errors (secrets redacted): NOT_FOUND when the server is not offered to the namespace,
  // UNAVAILABLE when it could not be started or reached or went away, FAILED_PRECONDITION for
  // an unsupported protocol version, DEADLINE_EXCEEDED.
  absl::StatusOr<std::unique_ptr<McpSession>> Open(const Workspace& workspace,
                                                   absl::string_view namespace_name,
                                                   absl::Time deadline,
                                                   size_t max_message_bytes) const;

 private:
  McpServerConfig config_;
  const Sandbox* sandbox_;
};

}  // namespace rein

#endif  // REIN_EXECUTOR_SERVICE_MCP_MCP_SERVER_H_
