// Test helper: a RunEngine over a SQLite store, served by RouterGrpcService with bearer tokens
// on a loopback TCP port, as the router's service tests run it.
#include "router_service/testing/served_router.h"

#include <stdlib.h>

#include <chrono>
#include <fstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/clock.h"
#include "common/status_macros.h"
#include "gtest/gtest.h"

namespace rein::testing {

absl::Status ServedRouter::Start(ServedRouterOptions options, PlannerClient* planner,
                                 ExecutorClient* executor) {
  const std::string dir = getenv("TEST_TMPDIR") ? getenv("TEST_TMPDIR") : "/tmp";
  const std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
  tokens_path = dir + "/tokens-" + name;
  std::ofstream(tokens_path) << options.tokens;
  options.auth.tokens_file = tokens_path;
  auth = std::make_unique<Authenticator>(options.auth, RealClock());
  RETURN_IF_ERROR(auth->Load());
  ASSIGN_OR_RETURN(store, SqliteRunStore::Open(dir + "/router-" + name + ".db", {}));
  counted = std::make_unique<HeldStore>(store.get());
  RunEngineOptions engine_options = options.engine;
  if (options.quotas) {
    ASSIGN_OR_RETURN(quotas, options.quotas(store.get()));
    engine_options.admit_child = [book = quotas.get()](const std::string& ns,
                                                       const std::function<bool()>& create) {
      return book->AdmitChild(ns, create);
    };
  }
  engine =
      std::make_unique<RunEngine>(counted.get(), planner, executor, RealClock(), engine_options);
  RETURN_IF_ERROR(engine->Start());
  service =
      std::make_unique<RouterGrpcService>(engine.get(), auth.get(), options.grpc, quotas.get());
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(service.get());
  server = builder.BuildAndStart();
  if (server == nullptr || port == 0) return absl::InternalError("cannot serve on 127.0.0.1:0");
  channel =
      grpc::CreateChannel(absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials());
  stub = rein::v1::Router::NewStub(channel);
  return absl::OkStatus();
}

void ServedRouter::Stop(const std::function<void()>& after_server) {
  if (server) server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  if (after_server) after_server();
  if (engine) engine->Shutdown(absl::Seconds(1));
}

}  // namespace rein::testing
