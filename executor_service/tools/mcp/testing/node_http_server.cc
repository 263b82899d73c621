// Test helper: an MCP server script run by node over streamable HTTP.
#include "executor_service/tools/mcp/testing/node_http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/time/clock.h"

namespace rein::testing {
namespace {

sockaddr_in Loopback(int port) {
  sockaddr_in address = {};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<uint16_t>(port));
  return address;
}

}  // namespace

int FreeLoopbackPort() {
  const int probe = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address = Loopback(0);
  socklen_t size = sizeof(address);
  int port = 0;
  if (bind(probe, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
      getsockname(probe, reinterpret_cast<sockaddr*>(&address), &size) == 0) {
    port = ntohs(address.sin_port);
  }
  close(probe);
  return port;
}

NodeHttpServer::NodeHttpServer(const std::string& script, std::vector<std::string> args)
    : port_(FreeLoopbackPort()) {
  const std::string port = absl::StrCat(port_);
  std::vector<std::string> argv = {"node", script};
  for (std::string& arg : args) argv.push_back(absl::StrReplaceAll(arg, {{"{port}", port}}));
  std::vector<char*> pointers;
  for (std::string& arg : argv) pointers.push_back(arg.data());
  pointers.push_back(nullptr);
  pid_ = fork();
  if (pid_ == 0) {
    setenv("PORT", port.c_str(), 1);
    execvp("node", pointers.data());
    _exit(127);
  }
  const sockaddr_in address = Loopback(port_);
  for (int i = 0; i < 150 && !up_ && pid_ > 0; ++i) {
    const int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    up_ = connect(s, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) == 0;
    close(s);
    if (!up_) absl::SleepFor(absl::Milliseconds(100));
  }
}

NodeHttpServer::~NodeHttpServer() {
  if (pid_ <= 0) return;
  kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
}

std::string NodeHttpServer::url() const { return absl::StrCat("http://127.0.0.1:", port_, "/mcp"); }

}  // namespace rein::testing
