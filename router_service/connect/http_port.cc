// The router's HTTP port as main.cc starts it.
#include "router_service/connect/http_port.h"

#include <algorithm>
#include <utility>

namespace rein::connect {

absl::StatusOr<std::unique_ptr<HttpPort>> HttpPort::Start(grpc::Server* server,
                                                          HttpServerOptions options) {
  std::unique_ptr<HttpPort> port(new HttpPort());
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);  // the server's own limits apply to requests
  ConnectGatewayOptions gateway_options;
  // Streams may hold all threads but a quarter, which stays for unary calls.
  gateway_options.max_streams = std::max(1, options.threads - options.threads / 4);
  port->gateway_ =
      std::make_unique<ConnectGateway>(server->InProcessChannel(args), gateway_options);
  options.files = &port->files_;
  absl::StatusOr<std::unique_ptr<HttpServer>> http =
      HttpServer::Start(std::move(options), port->gateway_.get());
  if (!http.ok()) return http.status();
  port->http_ = *std::move(http);
  return port;
}

}  // namespace rein::connect
