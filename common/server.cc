// Server bootstrap shared by the three services.
#include "common/server.h"

#include <signal.h>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/health_check_service_interface.h"

namespace rein {

ServiceHost::ServiceHost(ServiceHostOptions options) : options_(std::move(options)) {}

ServiceHost::~ServiceHost() {
  if (server_) Shutdown(absl::ZeroDuration());
}

absl::Status ServiceHost::Start(const std::vector<grpc::Service*>& services) {
  ConfigureAllocator(options_.memory);
  memory_releaser_ = std::make_unique<MemoryReleaser>(options_.memory);
  memory_releaser_->Start();
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  builder.AddListeningPort(
      options_.listen,
      options_.credentials ? options_.credentials : grpc::InsecureServerCredentials(), &port_);
  builder.SetMaxReceiveMessageSize(options_.max_receive_message_bytes);
  // gRPC listens with SO_REUSEPORT by default: a second server on a port already in use would
  // start without error and take part of the first one's connections. A taken port is an error.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  for (grpc::Service* service : services) builder.RegisterService(service);
  server_ = builder.BuildAndStart();
  if (!server_ || port_ == 0) {
    server_.reset();
    return absl::UnavailableError(absl::StrCat("cannot listen on ", options_.listen));
  }
  if (auto* health = server_->GetHealthCheckService()) {
    health->SetServingStatus(true);
    if (!options_.service_name.empty()) health->SetServingStatus(options_.service_name, true);
  }
  if (!options_.metrics_listen.empty()) {
    metrics_ = std::make_unique<MetricsHttpServer>();
    absl::Status status = metrics_->Start(options_.metrics_listen);
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

void ServiceHost::Shutdown(absl::Duration grace) {
  if (!server_) return;
  if (auto* health = server_->GetHealthCheckService()) health->Shutdown();
  server_->Shutdown(std::chrono::system_clock::now() + absl::ToChronoSeconds(grace));
  server_->Wait();
  server_.reset();
  if (metrics_) metrics_->Stop();
  if (memory_releaser_) memory_releaser_->Stop();
}

void BlockTerminationSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

int WaitForTerminationSignal() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  int sig = 0;
  sigwait(&set, &sig);
  return sig;
}

}  // namespace rein
