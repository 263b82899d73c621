// The router's HTTP port as main.cc starts it: the Connect gateway on the gRPC server's
// in-process channel, the HTTP server, and the console's files.
#ifndef REIN_ROUTER_SERVICE_CONNECT_HTTP_PORT_H_
#define REIN_ROUTER_SERVICE_CONNECT_HTTP_PORT_H_

#include <map>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "grpcpp/grpcpp.h"
#include "router_service/connect/connect_gateway.h"
#include "router_service/connect/http_server.h"

namespace rein::connect {

// Owns the gateway and the HTTP server; stops serving when destroyed.
class HttpPort {
 public:
  // Serves `options` in front of `server` (not owned; it serves rein.v1.Router and must
  // outlive the port). options.files is filled here with the console's files.
  static absl::StatusOr<std::unique_ptr<HttpPort>> Start(grpc::Server* server,
                                                         HttpServerOptions options);

  int port() const { return http_->port(); }

 private:
  HttpPort() = default;

  std::map<std::string, StaticFile> files_;
  std::unique_ptr<ConnectGateway> gateway_;
  std::unique_ptr<HttpServer> http_;
};

}  // namespace rein::connect

#endif  // REIN_ROUTER_SERVICE_CONNECT_HTTP_PORT_H_
