// Server bootstrap shared by the three services: listen, health, reflection, metrics, SIGTERM.
#ifndef REIN_COMMON_SERVER_H_
#define REIN_COMMON_SERVER_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "common/memory.h"
#include "common/metrics.h"
#include "grpcpp/grpcpp.h"

namespace rein {

struct ServiceHostOptions {
  std::string listen = "127.0.0.1:0";  // HOST:PORT; port 0 picks a free one
  std::string metrics_listen;          // HOST:PORT of /metrics ("" = none; MetricsListenAddress)
  std::string service_name;            // e.g. "rein.v1.Router", reported on grpc.health.v1
  // Requests larger than this are refused by gRPC before they reach the service, with
  // RESOURCE_EXHAUSTED "Received message larger than max (<size> vs. <limit>)" (sizes in
  // bytes). 4 MiB is gRPC's own default and far above what the router's public API and the
  // planner need; the executor raises it for write_file's content (common to every method
  // of a server: gRPC has no per-method receive limit on the server side).
  int max_receive_message_bytes = 4 << 20;
  // How freed memory goes back to the system (common/memory.h); applied by Start().
  MemoryOptions memory;
  // How the port is secured (MakeServerCredentials in common/tls.h); null = plaintext.
  std::shared_ptr<grpc::ServerCredentials> credentials;
};

// Owns one gRPC server with health checking and reflection enabled. Not thread-safe except
// Shutdown(), which may be called from any thread once.
class ServiceHost {
 public:
  explicit ServiceHost(ServiceHostOptions options);
  ~ServiceHost();

  // Starts serving `services` (not owned; they must outlive the host).
  absl::Status Start(const std::vector<grpc::Service*>& services);

  // The bound gRPC port (after Start).
  int port() const { return port_; }
  int metrics_port() const { return metrics_ ? metrics_->port() : 0; }
  grpc::Server* server() { return server_.get(); }

  // Marks the service NOT_SERVING, stops accepting, and waits up to `grace` for in-flight
  // calls before cancelling them.
  void Shutdown(absl::Duration grace);

 private:
  ServiceHostOptions options_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<MetricsHttpServer> metrics_;
  std::unique_ptr<MemoryReleaser> memory_releaser_;
  int port_ = 0;
};

// Blocks SIGTERM and SIGINT in the calling thread (call first thing in main, before any thread
// starts, so that every thread inherits the mask).
void BlockTerminationSignals();

// Waits until SIGTERM or SIGINT arrives; returns the signal number.
int WaitForTerminationSignal();

}  // namespace rein

#endif  // REIN_COMMON_SERVER_H_
