// Prints the unary latency of GetRun on the HTTP port (Connect, JSON and binary, libcurl with
// keep-alive) beside the gRPC port's (a stub over loopback TCP), against one router in this
// process (fake planner and executor, SQLite in a temp folder). Not a test: a figure.
//   bazel run -c opt //router_service/connect:http_latency_bench -- [CALLS]
#include <curl/curl.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "grpcpp/grpcpp.h"
#include "router_service/connect/http_port.h"
#include "router_service/router_grpc.h"
#include "router_service/run_engine.h"
#include "router_service/store/sqlite_run_store.h"
#include "router_service/testing/fake_clients.h"

namespace {

size_t Discard(char*, size_t size, size_t count, void* out) {
  static_cast<std::string*>(out)->append(size * count, ' ');
  return size * count;
}

// p50 and p99 of `calls` calls of `call`, in microseconds, after 200 warm-up calls.
void Measure(const char* name, int calls, const std::function<bool()>& call) {
  for (int i = 0; i < 200; ++i) call();
  std::vector<double> us;
  us.reserve(calls);
  for (int i = 0; i < calls; ++i) {
    auto start = std::chrono::steady_clock::now();
    if (!call()) {
      std::fprintf(stderr, "%s: call failed\n", name);
      exit(1);
    }
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
                     .count());
  }
  std::sort(us.begin(), us.end());
  std::printf("%-28s p50 %7.1f us   p99 %7.1f us   (%d calls)\n", name, us[us.size() / 2],
              us[us.size() * 99 / 100], calls);
}

}  // namespace

int main(int argc, char** argv) {
  const int calls = argc > 1 ? atoi(argv[1]) : 5000;
  char dir[] = "/tmp/rein-http-bench-XXXXXX";
  if (mkdtemp(dir) == nullptr) return 1;
  rein::testing::FakePlannerClient planner;
  rein::testing::FakeExecutorClient executor;
  rein::testing::ScriptListFilesRun(&planner, &executor);
  auto store = rein::SqliteRunStore::Open(absl::StrCat(dir, "/bench.db"), {});
  if (!store.ok()) return 1;
  rein::RunEngine engine(store->get(), &planner, &executor, rein::RealClock(), {});
  if (!engine.Start().ok()) return 1;
  rein::RouterGrpcService service(&engine);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  rein::connect::HttpServerOptions http_options;
  auto http = rein::connect::HttpPort::Start(server.get(), http_options);
  if (!http.ok()) return 1;

  rein::v1::StartRunRequest start;
  start.mutable_spec()->set_goal("list things");
  auto stub = rein::v1::Router::NewStub(
      grpc::CreateChannel(absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials()));
  rein::v1::Run run;
  {
    grpc::ClientContext context;
    if (!stub->StartRun(&context, start, &run).ok()) return 1;
  }
  rein::v1::GetRunRequest get;
  get.set_run_id(run.run_id());
  Measure("gRPC GetRun", calls, [&] {
    grpc::ClientContext context;
    rein::v1::Run reply;
    return stub->GetRun(&context, get, &reply).ok();
  });
  const std::string url =
      absl::StrCat("http://127.0.0.1:", (*http)->port(), "/rein.v1.Router/GetRun");
  for (const bool json : {true, false}) {
    CURL* curl = curl_easy_init();  // one connection, kept alive
    const std::string body =
        json ? absl::StrCat(R"({"runId":")", run.run_id(), R"("})") : get.SerializeAsString();
    curl_slist* headers = curl_slist_append(
        nullptr, json ? "Content-Type: application/json" : "Content-Type: application/proto");
    std::string reply;
    curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, &Discard);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &reply);
    Measure(json ? "HTTP Connect GetRun (JSON)" : "HTTP Connect GetRun (binary)", calls, [&] {
      long status = 0;
      const bool ok = curl_easy_perform(curl) == CURLE_OK;
      curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
      return ok && status == 200;
    });
    curl_slist_free_all(headers);
    curl_easy_cleanup(curl);
  }
  http->reset();
  server->Shutdown();
  engine.Shutdown(absl::Seconds(1));
  return 0;
}
