// Test helper: an MCP server script run by node over streamable HTTP on a free loopback port.
#ifndef REIN_EXECUTOR_SERVICE_TOOLS_MCP_TESTING_NODE_HTTP_SERVER_H_
#define REIN_EXECUTOR_SERVICE_TOOLS_MCP_TESTING_NODE_HTTP_SERVER_H_

#include <sys/types.h>

#include <string>
#include <vector>

namespace rein::testing {

// A free port of 127.0.0.1 (bound, read and released: nothing listens on it).
int FreeLoopbackPort();

// Runs `node script args...` with every "{port}" in `args` replaced by a free port (also in
// $PORT), waits up to 15 s for it to listen, and kills it on destruction.
class NodeHttpServer {
 public:
  NodeHttpServer(const std::string& script, std::vector<std::string> args);
  NodeHttpServer(const NodeHttpServer&) = delete;
  NodeHttpServer& operator=(const NodeHttpServer&) = delete;
  ~NodeHttpServer();

  bool up() const { return up_; }
  int port() const { return port_; }
  // http://127.0.0.1:<port>/mcp
  std::string url() const;

 private:
  int port_ = 0;
  pid_t pid_ = -1;
  bool up_ = false;
};

}  // namespace rein::testing

#endif  // REIN_EXECUTOR_SERVICE_TOOLS_MCP_TESTING_NODE_HTTP_SERVER_H_
