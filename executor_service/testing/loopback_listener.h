// Test helper: a TCP socket listening on the host's 127.0.0.1, for "the sandbox cannot reach
// the network" checks.
#ifndef REIN_EXECUTOR_SERVICE_TESTING_LOOPBACK_LISTENER_H_
#define REIN_EXECUTOR_SERVICE_TESTING_LOOPBACK_LISTENER_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace rein::testing {

// Listens on an ephemeral port of 127.0.0.1 until destroyed; port() is 0 when that failed.
class LoopbackListener {
 public:
  LoopbackListener() {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in addr = {};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (fd_ < 0 || bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        listen(fd_, 4) != 0 || getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      return;
    }
    port_ = ntohs(addr.sin_port);
  }
  LoopbackListener(const LoopbackListener&) = delete;
  LoopbackListener& operator=(const LoopbackListener&) = delete;
  ~LoopbackListener() {
    if (fd_ >= 0) close(fd_);
  }

  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

}  // namespace rein::testing

#endif  // REIN_EXECUTOR_SERVICE_TESTING_LOOPBACK_LISTENER_H_
