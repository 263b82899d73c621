// Test helper: a RunEngine over a SQLite store, served by RouterGrpcService with bearer tokens
// on a loopback TCP port, as the router's service tests run it.
#ifndef REIN_ROUTER_SERVICE_TESTING_SERVED_ROUTER_H_
#define REIN_ROUTER_SERVICE_TESTING_SERVED_ROUTER_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "grpcpp/grpcpp.h"
#include "rein/v1/router.grpc.pb.h"
#include "router_service/auth.h"
#include "router_service/clients.h"
#include "router_service/router_grpc.h"
#include "router_service/run_engine.h"
#include "router_service/service/quotas.h"
#include "router_service/store/sqlite_run_store.h"
#include "router_service/store/testing/held_store.h"

namespace rein::testing {

struct ServedRouterOptions {
  std::string tokens;  // the tokens file's lines (router_service/auth.h)
  // tokens_file is set by Start; tests fail on purpose many times, so failures are not limited.
  AuthOptions auth = [] {
    AuthOptions options;
    options.max_failures_per_window = 1000;
    return options;
  }();
  RouterGrpcOptions grpc;
  RunEngineOptions engine;
  // Quotas the service admits starts against, made once the store is open; unset = none.
  std::function<absl::StatusOr<std::unique_ptr<QuotaBook>>(RunStore*)> quotas;
};

// Everything the service tests start, in the order they are started; each is set by Start.
// Files go to TEST_TMPDIR, named after the running test.
class ServedRouter {
 public:
  // Writes the tokens file (tokens_path), loads it, opens the store, starts the engine on
  // `planner` and `executor` (not owned) and serves it on 127.0.0.1, port 0.
  absl::Status Start(ServedRouterOptions options, PlannerClient* planner, ExecutorClient* executor);
  // Shuts the server down (1 s grace), runs `after_server` (what stands in front of it), then
  // shuts the engine down (1 s grace).
  void Stop(const std::function<void()>& after_server = {});

  std::string tokens_path;
  std::unique_ptr<Authenticator> auth;
  std::unique_ptr<SqliteRunStore> store;
  std::unique_ptr<HeldStore>
      counted;  // in front of `store`: the engine's, its writes and reads counted
  std::unique_ptr<RunEngine> engine;
  std::unique_ptr<QuotaBook> quotas;
  std::unique_ptr<RouterGrpcService> service;
  std::unique_ptr<grpc::Server> server;
  int port = 0;
  std::shared_ptr<grpc::Channel> channel;  // to the port, no credentials
  std::unique_ptr<rein::v1::Router::Stub> stub;
};

}  // namespace rein::testing

#endif  // REIN_ROUTER_SERVICE_TESTING_SERVED_ROUTER_H_
