// The router's HTTP port (--http_listen): the Connect protocol at /rein.v1.Router/<Method>
// and, when given, static files (the console) on GET. Served by civetweb, in plain HTTP:
// Debian's civetweb 1.15 cannot load OpenSSL 3 (it looks up SSL_get_peer_certificate, which
// OpenSSL 3 no longer exports), so TLS is a proxy's job in front of a loopback port.
#ifndef REIN_ROUTER_SERVICE_CONNECT_HTTP_SERVER_H_
#define REIN_ROUTER_SERVICE_CONNECT_HTTP_SERVER_H_

#include <cstddef>
#include <map>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "router_service/connect/connect_gateway.h"

struct mg_context;
struct mg_connection;

namespace rein::connect {

// A file served on GET: its Content-Type and its bytes.
struct StaticFile {
  std::string content_type;
  std::string body;
};

struct HttpServerOptions {
  std::string listen = "127.0.0.1:0";  // IPv4-HOST:PORT; port 0 picks a free one
  // Connections served at once, one thread each; more wait in the accept queue.
  int threads = 32;
  // Request bodies larger than this are resource_exhausted, unread (gRPC's own default).
  size_t max_body_bytes = 4 << 20;
  // How long reading a request or writing a reply may stall, and how long an idle
  // keep-alive connection is kept: slow or idle clients give their thread back.
  absl::Duration io_timeout = absl::Seconds(30);
  absl::Duration keep_alive = absl::Seconds(5);
  // Files served on GET by path ("/" serves "/index.html"); null = none.
  const std::map<std::string, StaticFile>* files = nullptr;
};

// Owns the civetweb server. Thread-safe; stops (waiting for its requests) when destroyed.
class HttpServer {
 public:
  // Listens and serves until destroyed. `gateway` (not owned) must outlive the server.
  static absl::StatusOr<std::unique_ptr<HttpServer>> Start(HttpServerOptions options,
                                                           ConnectGateway* gateway);
  ~HttpServer();

  int port() const { return port_; }

 private:
  HttpServer(HttpServerOptions options, ConnectGateway* gateway)
      : options_(std::move(options)), gateway_(gateway) {}
  static int OnRequest(mg_connection* connection);
  void Serve(mg_connection* connection);

  const HttpServerOptions options_;
  ConnectGateway* const gateway_;
  mg_context* context_ = nullptr;
  int port_ = 0;
};

}  // namespace rein::connect

#endif  // REIN_ROUTER_SERVICE_CONNECT_HTTP_SERVER_H_
