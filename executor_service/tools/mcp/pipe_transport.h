// MCP's stdio transport over a pair of pipes: one JSON-RPC message per line.
#ifndef REIN_EXECUTOR_SERVICE_MCP_PIPE_TRANSPORT_H_
#define REIN_EXECUTOR_SERVICE_MCP_PIPE_TRANSPORT_H_

#include <cstddef>
#include <string>

#include "executor_service/process/unique_fd.h"
#include "executor_service/tools/mcp/mcp_client.h"

namespace rein {

// Writes messages to the server's stdin (a pipe, or a socket that may be the same one it
// reads from) and reads newline-delimited messages from its
// stdout. A line longer than `max_message_bytes` is dropped as it streams (never held whole)
// and reported as RESOURCE_EXHAUSTED. One thread at a time.
class PipeTransport final : public McpTransport {
 public:
  PipeTransport(UniqueFd to_server, UniqueFd from_server, size_t max_message_bytes);

  absl::Status Send(const std::string& message, absl::Time deadline) override;
  absl::StatusOr<std::string> Receive(absl::Time deadline) override;

  // Closes the server's stdin (the spec's first step of a stdio shutdown).
  void CloseInput();

 private:
  UniqueFd to_server_;
  UniqueFd from_server_;
  size_t max_message_bytes_;
  std::string buffer_;     // bytes read past the last complete line
  bool dropping_ = false;  // inside a line that exceeded the cap
  size_t dropped_bytes_ = 0;
  bool eof_ = false;
};

}  // namespace rein

#endif  // REIN_EXECUTOR_SERVICE_MCP_PIPE_TRANSPORT_H_
