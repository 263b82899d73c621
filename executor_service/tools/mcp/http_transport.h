// MCP's streamable HTTP transport over libcurl: each message is a POST; a reply comes back as
// JSON or as a stream of server-sent events.
#ifndef REIN_EXECUTOR_SERVICE_MCP_HTTP_TRANSPORT_H_
#define REIN_EXECUTOR_SERVICE_MCP_HTTP_TRANSPORT_H_

#include <cstddef>
#include <deque>
#include <string>

#include "executor_service/tools/mcp/mcp_client.h"

namespace rein {

// One session with one server at one configured URL. The bearer token is sent in the
// Authorization header only; it is never in an error. Send posts a message and reads the
// whole response (a JSON body or an SSE stream, which ends once the server has replied),
// queueing the messages it carries for Receive. The session id the server assigns
// (Mcp-Session-Id) and the agreed protocol version (MCP-Protocol-Version) go with every later
// request; Close ends the session with DELETE. One thread at a time.
//
// Bounds: each message (a JSON body or one SSE event) is at most `max_message_bytes` (a
// larger one is dropped as it streams and received as RESOURCE_EXHAUSTED); one response
// queues at most kMaxMcpMessagesPerRequest messages and MaxQueuedBytes() bytes: past either,
// the transfer is cut, what it queued is dropped and Send returns RESOURCE_EXHAUSTED naming
// the bound (a server streaming notifications without end cannot grow the executor).
class HttpTransport final : public McpTransport {
 public:
  HttpTransport(std::string url, std::string bearer_token, size_t max_message_bytes);
  ~HttpTransport() override;

  absl::Status Send(const std::string& message, absl::Time deadline) override;
  absl::StatusOr<std::string> Receive(absl::Time deadline) override;
  void SetProtocolVersion(const std::string& version) override { protocol_version_ = version; }

  // Ends the session (DELETE), when the server gave one; errors are ignored.
  void Close();

  const std::string& session_id() const { return session_id_; }
  // The bytes one response may queue: a reply at its cap and as much again of notifications.
  size_t MaxQueuedBytes() const { return 2 * max_message_bytes_; }

  // Internal to the libcurl callbacks.
  struct Response;

 private:
  std::string url_;
  std::string token_;
  size_t max_message_bytes_;
  std::string session_id_;
  std::string protocol_version_;
  // Messages received and not yet taken; a dropped oversize message is queued as its error.
  std::deque<absl::StatusOr<std::string>> queue_;
  bool last_timed_out_ = false;
};

}  // namespace rein

#endif  // REIN_EXECUTOR_SERVICE_MCP_HTTP_TRANSPORT_H_
