// The router's HTTP port as main.cc starts it.
#include "router_service/connect/http_port.h"

#include <algorithm>
#include <utility>

#include "router_service/console/console_files.h"

namespace rein::connect {

absl::StatusOr<std::unique_ptr<HttpPort>> HttpPort::Start(grpc::Server* server,
                                                          HttpServerOptions options) {
  std::unique_ptr<HttpPort> port(new HttpPort());
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);  // the server's own limits apply to requests
  ConnectGatewayOptions gateway_options;
  // Streams may hold all threads but a quarter, which stays for unary calls.
  gateway_options.max_streams = std::max(1, options.threads - options.threads / 4);
  // And one client a quarter of those, so that one viewer cannot hold every live view.
  gateway_options.max_streams_per_client = std::max(1, gateway_options.max_streams / 4);
  port->gateway_ =
      std::make_unique<ConnectGateway>(server->InProcessChannel(args), gateway_options);
  for (const console::ConsoleFile& file : console::ConsoleFiles()) {
    port->files_[file.path] = {file.content_type,
                               std::string(reinterpret_cast<const char*>(file.data), file.size)};
  }
  if (port->files_.empty()) {
    port->files_["/index.html"] = {
        "text/html; charset=utf-8",
        "<!doctype html><html lang=\"en\"><title>rein</title><p>This router was built without "
        "its console: run <code>./dev setup</code> (it bundles router_service/console) and "
        "build again. The Router API is served at POST /rein.v1.Router/&lt;Method&gt;.</p>"};
  }
  options.files = &port->files_;
  absl::StatusOr<std::unique_ptr<HttpServer>> http =
      HttpServer::Start(std::move(options), port->gateway_.get());
  if (!http.ok()) return http.status();
  port->http_ = *std::move(http);
  return port;
}

}  // namespace rein::connect
