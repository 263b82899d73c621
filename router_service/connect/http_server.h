// The router's HTTP port (--http_listen): the Connect protocol at /rein.v1.Router/<Method>
// and, when given, static files (the console) on GET. HTTP/1.1 is parsed by Debian's
// cpp-httplib; each connection is served on one thread of a fixed pool, plain or in TLS with
// OpenSSL 3 (http_connection.h), with client certificates when asked for, as the gRPC port.
#ifndef REIN_ROUTER_SERVICE_CONNECT_HTTP_SERVER_H_
#define REIN_ROUTER_SERVICE_CONNECT_HTTP_SERVER_H_

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "router_service/connect/connect_gateway.h"
#include "router_service/connect/http_connection.h"

namespace rein::connect {

// A file served on GET: its Content-Type and its bytes.
struct StaticFile {
  std::string content_type;
  std::string body;
};

struct HttpServerOptions {
  std::string listen = "127.0.0.1:0";  // IPv4-HOST:PORT; port 0 picks a free one
  // Connections served at once, one thread each; more wait in the kernel's accept queue.
  int threads = 32;
  // Request bodies larger than this are resource_exhausted, unread (gRPC's own default).
  size_t max_body_bytes = 4 << 20;
  // How long reading a request or writing a reply may stall, and how long an idle
  // keep-alive connection is kept: slow or idle clients give their thread back.
  absl::Duration io_timeout = absl::Seconds(30);
  absl::Duration keep_alive = absl::Seconds(5);
  // How long a request's line, headers and body may take to arrive in all, however often
  // bytes come (a client dripping one byte per io_timeout is cut off here).
  absl::Duration request_timeout = absl::Seconds(60);
  // Files served on GET by path ("/" serves "/index.html"); null = none.
  const std::map<std::string, StaticFile>* files = nullptr;
  // TLS (empty = plain HTTP); with tls.client_ca, client certificates signed by it are
  // required. The files are read again when they change, at most every tls_reload.
  HttpTlsFiles tls;
  absl::Duration tls_reload = absl::Seconds(5);
  // Names besides IP literals and localhost that Host may carry (--http_allowed_hosts); with
  // none, Host is checked only when listening on loopback (host_check.h).
  std::vector<std::string> allowed_hosts;
};

class HttpServerCore;

// Owns the HTTP server. Thread-safe; stops (waiting for its requests) when destroyed.
class HttpServer {
 public:
  // Listens and serves until destroyed. `gateway` (not owned) must outlive the server.
  static absl::StatusOr<std::unique_ptr<HttpServer>> Start(HttpServerOptions options,
                                                           ConnectGateway* gateway);
  ~HttpServer();

  int port() const { return port_; }

 private:
  HttpServer() = default;

  std::unique_ptr<HttpServerCore> core_;
  std::thread listener_;
  int port_ = 0;
};

}  // namespace rein::connect

#endif  // REIN_ROUTER_SERVICE_CONNECT_HTTP_SERVER_H_
