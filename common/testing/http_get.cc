// One plain HTTP/1.0 GET on loopback, for tests.
#include "common/testing/http_get.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace rein {

absl::StatusOr<HttpReply> HttpGet(int port, const std::string& path) {
  return HttpGet("127.0.0.1", port, path);
}

absl::StatusOr<HttpReply> HttpGet(const std::string& ipv4, int port, const std::string& path) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::UnavailableError("socket failed");
  timeval timeout{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, ipv4.c_str(), &addr.sin_addr) != 1 ||
      connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return absl::UnavailableError(absl::StrCat("cannot connect to ", ipv4, ":", port));
  }
  const std::string request =
      absl::StrCat("GET ", path, " HTTP/1.0\r\nHost: ", ipv4, "\r\nConnection: close\r\n\r\n");
  if (send(fd, request.data(), request.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(request.size())) {
    close(fd);
    return absl::UnavailableError("send failed");
  }
  std::string response;
  char buffer[4096];
  ssize_t n;
  while ((n = read(fd, buffer, sizeof(buffer))) > 0) response.append(buffer, n);
  close(fd);
  // "HTTP/1.x NNN reason\r\n...\r\n\r\nbody"
  const size_t space = response.find(' ');
  const size_t header_end = response.find("\r\n\r\n");
  HttpReply reply;
  if (space == std::string::npos || header_end == std::string::npos ||
      !absl::SimpleAtoi(response.substr(space + 1, 3), &reply.status)) {
    return absl::UnavailableError(absl::StrCat("not an HTTP reply: ", response.substr(0, 80)));
  }
  reply.body = response.substr(header_end + 4);
  return reply;
}

}  // namespace rein
