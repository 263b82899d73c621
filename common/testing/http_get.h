// HttpGet: one plain HTTP/1.0 GET on loopback, for tests of the /metrics endpoint.
#ifndef REIN_COMMON_TESTING_HTTP_GET_H_
#define REIN_COMMON_TESTING_HTTP_GET_H_

#include <string>

#include "absl/status/statusor.h"

namespace rein {

struct HttpReply {
  int status = 0;  // e.g. 200
  std::string body;
};

// GETs `path` from 127.0.0.1:`port` and reads the reply until the server closes. A failed
// connect, send or an unreadable status line is UNAVAILABLE.
absl::StatusOr<HttpReply> HttpGet(int port, const std::string& path);
// The same from `ipv4`:`port` (e.g. 127.0.0.2, another loopback address).
absl::StatusOr<HttpReply> HttpGet(const std::string& ipv4, int port, const std::string& path);

}  // namespace rein

#endif  // REIN_COMMON_TESTING_HTTP_GET_H_
