// The MCP client's protocol logic (JSON-RPC 2.0, lifecycle, tools), apart from any transport.
#ifndef REIN_EXECUTOR_SERVICE_MCP_MCP_CLIENT_H_
#define REIN_EXECUTOR_SERVICE_MCP_MCP_CLIENT_H_

#include <cstdint>
#include <deque>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace rein {

// The protocol versions rein speaks, newest first: the current one and the previous one.
inline constexpr const char* kMcpProtocolVersions[] = {"2025-06-18", "2025-03-26"};

// The deepest nesting of a message from a server (a reply, a tool listing with its
// inputSchema, a tool result): a deeper one is refused before it is parsed.
inline constexpr int kMaxMcpMessageDepth = 64;
// The most messages a server may send while one request of ours waits for its reply
// (notifications, its own requests, stray replies): past it the request fails.
inline constexpr int kMaxMcpMessagesPerRequest = 10000;

// How JSON-RPC messages travel to one MCP server and back (stdio pipes, streamable HTTP).
// Used by one thread at a time.
class McpTransport {
 public:
  virtual ~McpTransport() = default;

  // Sends one JSON-RPC message (a request, a notification or a reply). DEADLINE_EXCEEDED when
  // `deadline` passed first; UNAVAILABLE when the server is gone or refused it.
  virtual absl::Status Send(const std::string& message, absl::Time deadline) = 0;

  // The next message from the server. DEADLINE_EXCEEDED when none came before `deadline`;
  // UNAVAILABLE when no more can come (the server exited, the HTTP response ended);
  // RESOURCE_EXHAUSTED when the next message was larger than the transport's cap (it was
  // dropped without being kept in memory).
  virtual absl::StatusOr<std::string> Receive(absl::Time deadline) = 0;

  // Called once initialize has agreed on `version` (streamable HTTP sends it as a header).
  virtual void SetProtocolVersion(const std::string& /*version*/) {}
};

// A tool as the server lists it.
struct McpToolInfo {
  std::string name;
  std::string description;
  nlohmann::json input_schema;
  bool read_only_hint = false;  // annotations.readOnlyHint == true
};

// The outcome of tools/call that the server answered.
struct McpCallResult {
  bool is_error = false;      // isError: the tool failed (an observation, not a protocol error)
  std::string text;           // the content blocks rendered as text, capped
  bool truncated = false;     // `text` was cut at the cap
  nlohmann::json structured;  // structuredContent, or null
  int progress_notifications = 0;
};

// Speaks the MCP client side over a transport it does not own: initialize (version
// negotiation), tools/list (with pagination), tools/call (with progress), and the requests a
// server may send (ping is answered; sampling, elicitation, roots and anything else are
// refused with a JSON-RPC error). Not thread-safe: one conversation, one thread.
class McpClient {
 public:
  explicit McpClient(McpTransport* transport) : transport_(transport) {}

  // initialize, then notifications/initialized. FAILED_PRECONDITION naming the version when
  // the server answers with a protocol version rein does not speak.
  absl::Status Initialize(absl::Time deadline);

  // Every tool, following nextCursor (at most kMaxListPages pages).
  absl::StatusOr<std::vector<McpToolInfo>> ListTools(absl::Time deadline);

  // Calls `name`. A tool that fails (isError) is a result; errors are for the protocol: the
  // server's JSON-RPC error (UNKNOWN with its code and message), DEADLINE_EXCEEDED (after
  // notifications/cancelled was sent), UNAVAILABLE (the server went away), RESOURCE_EXHAUSTED
  // (a message was larger than the transport's cap, or more than kMaxMcpMessagesPerRequest
  // came before the reply), INTERNAL (a malformed message, or one nested deeper than
  // kMaxMcpMessageDepth). Every error names the bound that refused.
  absl::StatusOr<McpCallResult> CallTool(const std::string& name, const nlohmann::json& arguments,
                                         absl::Time deadline, size_t max_text_bytes);

  const std::string& protocol_version() const { return protocol_version_; }
  const std::string& server_name() const { return server_name_; }
  // True once the server sent notifications/tools/list_changed.
  bool tools_changed() const { return tools_changed_; }
  // Replies whose id matched no request of ours (ignored, counted).
  int unknown_replies() const { return unknown_replies_; }

  static constexpr int kMaxListPages = 100;

 private:
  // Sends request `method` and returns its result, answering what the server asks meanwhile.
  absl::StatusOr<nlohmann::json> Request(const std::string& method, nlohmann::json params,
                                         absl::Time deadline);
  absl::Status Notify(const std::string& method, nlohmann::json params, absl::Time deadline);
  // Handles a request or notification from the server.
  void HandleServerMessage(const nlohmann::json& message, absl::Time deadline);

  // The next message: one left over from a batch, or the transport's next one.
  absl::StatusOr<std::string> Next(absl::Time deadline);

  McpTransport* transport_;
  std::deque<std::string> batched_;  // the rest of a JSON array of messages (2025-03-26)
  int64_t next_id_ = 1;
  std::string protocol_version_;
  std::string server_name_;
  bool tools_changed_ = false;
  int unknown_replies_ = 0;
  int progress_ = 0;
};

}  // namespace rein

#endif  // REIN_EXECUTOR_SERVICE_MCP_MCP_CLIENT_H_
