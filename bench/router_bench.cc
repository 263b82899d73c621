// router_bench: the real rein-router against instant fake planner and executor services;
// prints router overhead per iteration (p50, p99) at 1 and 100 concurrent runs, and the
// router's resident memory with 1,000 runs in flight and with 1,000 paused.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "common/proto_time.h"
#include "grpcpp/grpcpp.h"
#include "rein/v1/executor.grpc.pb.h"
#include "rein/v1/planner.grpc.pb.h"
#include "rein/v1/router.grpc.pb.h"

ABSL_FLAG(std::string, router_binary, "router_service/rein-router", "path of rein-router");
ABSL_FLAG(int, iterations, 300, "iterations of the single-run measurement");
ABSL_FLAG(int, concurrent_runs, 100, "runs of the concurrent measurement");
ABSL_FLAG(int, concurrent_iterations, 30, "iterations per run in the concurrent measurement");
ABSL_FLAG(int, memory_runs, 1000, "runs held in flight / paused for the memory figures");
ABSL_FLAG(std::string, synchronous, "NORMAL", "SQLite synchronous mode of the router");

namespace {

// Answers at once, except Decide when `hold_` is set: then the call waits (holding no thread).
class FakePlanner final : public rein::v1::Planner::CallbackService {
 public:
  grpc::ServerUnaryReactor* Plan(grpc::CallbackServerContext* ctx, const rein::v1::PlanRequest*,
                                 rein::v1::PlanResponse* resp) override {
    auto* task = resp->add_subtasks();
    task->set_id("work");
    task->set_description("loop");
    resp->set_backend("bench");
    auto* reactor = ctx->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }
  grpc::ServerUnaryReactor* Decide(grpc::CallbackServerContext* ctx,
                                   const rein::v1::DecideRequest* req,
                                   rein::v1::DecideResponse* resp) override {
    resp->mutable_tool_call()->set_tool("list_files");
    resp->mutable_tool_call()->set_args_json(
        absl::StrCat("{\"path\":\"d", req->iteration(), "\"}"));
    auto* reactor = ctx->DefaultReactor();
    if (hold_) {
      std::lock_guard<std::mutex> lock(mu_);
      held_.push_back(reactor);
    } else {
      reactor->Finish(grpc::Status::OK);
    }
    return reactor;
  }
  grpc::ServerUnaryReactor* Evaluate(grpc::CallbackServerContext* ctx,
                                     const rein::v1::EvaluateRequest* req,
                                     rein::v1::EvaluateResponse* resp) override {
    bool done = req->iteration() >= target_;
    resp->set_status(done ? rein::v1::RunEvent::Evaluation::COMPLETED
                          : rein::v1::RunEvent::Evaluation::NEEDS_MORE_WORK);
    resp->set_goal_achieved(done);
    auto* reactor = ctx->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }
  void set_target(int n) { target_ = n; }
  void set_hold(bool hold) { hold_ = hold; }
  size_t held() {
    std::lock_guard<std::mutex> lock(mu_);
    return held_.size();
  }
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto* r : held_) r->Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "bench over"));
    held_.clear();
  }

 private:
  std::atomic<int> target_{10};
  std::atomic<bool> hold_{false};
  std::mutex mu_;
  std::vector<grpc::ServerUnaryReactor*> held_;
};

class FakeExecutor final : public rein::v1::Executor::CallbackService {
 public:
  grpc::ServerUnaryReactor* ListTools(grpc::CallbackServerContext* ctx,
                                      const rein::v1::ListToolsRequest*,
                                      rein::v1::ListToolsResponse* resp) override {
    auto* tool = resp->add_tools();
    tool->set_name("list_files");
    tool->set_input_schema_json("{\"type\":\"object\"}");
    auto* reactor = ctx->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }
  grpc::ServerUnaryReactor* Execute(grpc::CallbackServerContext* ctx,
                                    const rein::v1::ExecuteRequest* req,
                                    rein::v1::ExecuteResponse* resp) override {
    resp->set_ok(true);
    resp->set_output(absl::StrCat("listing of ", req->args_json()));
    resp->set_executor_id("bench");
    auto* reactor = ctx->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }
};

long RssKiB(pid_t pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = std::min(v.size() - 1, static_cast<size_t>(p * (v.size() - 1) + 0.5));
  return v[i];
}

class Bench {
 public:
  explicit Bench(std::string dir) : dir_(std::move(dir)) {}

  bool Start() {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &planner_port_);
    builder.RegisterService(&planner_);
    planner_server_ = builder.BuildAndStart();
    grpc::ServerBuilder builder2;
    builder2.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &executor_port_);
    builder2.RegisterService(&executor_);
    executor_server_ = builder2.BuildAndStart();
    router_port_ = 0;
    // Let the router pick its port from a probe socket.
    grpc::ServerBuilder probe;
    int port = 0;
    probe.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    auto probe_server = probe.BuildAndStart();
    probe_server->Shutdown();
    router_port_ = port;
    grpc::ServerBuilder probe2;
    probe2.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &metrics_port_);
    probe2.BuildAndStart()->Shutdown();
    pid_ = fork();
    if (pid_ == 0) {
      std::string log = dir_ + "/router.log";
      if (freopen(log.c_str(), "w", stderr) == nullptr) _exit(126);
      std::string bin = absl::GetFlag(FLAGS_router_binary);
      execl(bin.c_str(), bin.c_str(), absl::StrCat("--listen=127.0.0.1:", router_port_).c_str(),
            absl::StrCat("--store=sqlite:", dir_, "/bench.db").c_str(),
            absl::StrCat("--planner_target=127.0.0.1:", planner_port_).c_str(),
            absl::StrCat("--executor_target=127.0.0.1:", executor_port_).c_str(),
            absl::StrCat("--sqlite_synchronous=", absl::GetFlag(FLAGS_synchronous)).c_str(),
            absl::StrCat("--metrics_port=", metrics_port_).c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(64 << 20);
    auto channel = grpc::CreateCustomChannel(absl::StrCat("127.0.0.1:", router_port_),
                                             grpc::InsecureChannelCredentials(), args);
    if (!channel->WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds(20))) {
      return false;
    }
    stub_ = rein::v1::Router::NewStub(channel);
    return true;
  }

  ~Bench() {
    // Answer from now on, so a call the router retries after the release is not held forever
    // (the fake servers' Shutdown waits for every call).
    planner_.set_hold(false);
    planner_.Release();
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      for (int i = 0; i < 1000 && waitpid(pid_, nullptr, WNOHANG) == 0; ++i) {
        absl::SleepFor(absl::Milliseconds(10));
      }
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (planner_server_) planner_server_->Shutdown(std::chrono::system_clock::now());
    if (executor_server_) executor_server_->Shutdown(std::chrono::system_clock::now());
  }

  std::string StartRun(int max_iterations, bool pause_after_plan) {
    rein::v1::StartRunRequest req;
    req.mutable_spec()->set_goal("benchmark loop");
    req.mutable_spec()->add_tools("list_files");
    req.mutable_spec()->mutable_limits()->set_max_iterations(max_iterations + 10);
    req.mutable_spec()->mutable_limits()->mutable_deadline()->set_seconds(3600);
    if (pause_after_plan) req.mutable_spec()->add_pause_points(rein::v1::AFTER_PLAN);
    rein::v1::Run run;
    grpc::ClientContext ctx;
    grpc::Status s = stub_->StartRun(&ctx, req, &run);
    if (!s.ok()) {
      fprintf(stderr, "StartRun: %s\n", s.error_message().c_str());
      return "";
    }
    return run.run_id();
  }

  // Waits for the run to end; returns the gaps between entries into DECIDING (one iteration).
  std::vector<double> IterationTimesUs(const std::string& run_id) {
    rein::v1::WatchRunRequest req;
    req.set_run_id(run_id);
    grpc::ClientContext ctx;
    auto reader = stub_->WatchRun(&ctx, req);
    rein::v1::RunEvent e;
    std::vector<double> out;
    int64_t last = -1;
    while (reader->Read(&e)) {
      if (e.has_stage_changed() && e.stage_changed().to() == rein::v1::DECIDING) {
        int64_t t = absl::ToUnixMicros(rein::FromProtoTime(e.time()));
        if (last >= 0 && e.stage_changed().from() == rein::v1::EVALUATING) {
          out.push_back(static_cast<double>(t - last));
        }
        last = t;
      }
      if (e.has_finished() && e.finished().outcome().reason() != rein::v1::GOAL_ACHIEVED) {
        fprintf(stderr, "run %s ended %s: %s\n", run_id.c_str(),
                rein::v1::TerminationReason_Name(e.finished().outcome().reason()).c_str(),
                e.finished().outcome().message().c_str());
      }
    }
    reader->Finish();
    return out;
  }

  int ListCount(rein::v1::Stage stage) {
    int count = 0;
    std::string token;
    do {
      rein::v1::ListRunsRequest req;
      req.set_stage(stage);
      req.set_page_size(1000);
      req.set_page_token(token);
      rein::v1::ListRunsResponse resp;
      grpc::ClientContext ctx;
      if (!stub_->ListRuns(&ctx, req, &resp).ok()) return count;
      count += resp.runs_size();
      token = resp.next_page_token();
    } while (!token.empty());
    return count;
  }

  FakePlanner& planner() { return planner_; }
  // The router's own Prometheus figures (commit and call times), for where the time goes.
  std::string Metrics() {
    std::string out;
    FILE* f = popen(absl::StrCat("curl -s 127.0.0.1:", metrics_port_, "/metrics").c_str(), "r");
    if (f == nullptr) return out;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), f)) > 0) out.append(buf, n);
    pclose(f);
    return out;
  }
  pid_t pid() const { return pid_; }

 private:
  std::string dir_;
  FakePlanner planner_;
  FakeExecutor executor_;
  std::unique_ptr<grpc::Server> planner_server_, executor_server_;
  int planner_port_ = 0, executor_port_ = 0, router_port_ = 0, metrics_port_ = 0;
  pid_t pid_ = -1;
  std::unique_ptr<rein::v1::Router::Stub> stub_;
};

void Report(const char* what, const std::vector<double>& us, absl::Duration wall, int iterations) {
  printf("%-44s p50 %7.0f us   p99 %7.0f us   (%zu iterations; %.0f iterations/s overall)\n", what,
         Percentile(us, 0.5), Percentile(us, 0.99), us.size(),
         iterations / absl::ToDoubleSeconds(wall));
}

std::string TempDir() {
  char tmpl[] = "/tmp/rein-bench-XXXXXX";
  return mkdtemp(tmpl);
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  signal(SIGPIPE, SIG_IGN);
  printf(
      "rein router benchmark: real rein-router (SQLite synchronous=%s) against instant fake\n"
      "planner and executor services over loopback gRPC. One iteration = Decide, Execute,\n"
      "Evaluate (three RPCs) and their three commits.\n\n",
      absl::GetFlag(FLAGS_synchronous).c_str());
  {
    Bench bench(TempDir());
    if (!bench.Start()) return 1;
    int n = absl::GetFlag(FLAGS_iterations);
    bench.planner().set_target(n);
    absl::Time start = absl::Now();
    std::string id = bench.StartRun(n, false);
    std::vector<double> us = bench.IterationTimesUs(id);
    Report("1 run:", us, absl::Now() - start, n);

    int runs = absl::GetFlag(FLAGS_concurrent_runs);
    int per = absl::GetFlag(FLAGS_concurrent_iterations);
    bench.planner().set_target(per);
    start = absl::Now();
    std::vector<std::string> ids;
    for (int i = 0; i < runs; ++i) ids.push_back(bench.StartRun(per, false));
    std::vector<double> all;
    std::mutex mu;
    std::vector<std::thread> watchers;
    for (const auto& run_id : ids) {
      watchers.emplace_back([&, run_id] {
        auto times = bench.IterationTimesUs(run_id);
        std::lock_guard<std::mutex> lock(mu);
        all.insert(all.end(), times.begin(), times.end());
      });
    }
    for (auto& t : watchers) t.join();
    Report(absl::StrCat(runs, " concurrent runs (latency of each):").c_str(), all,
           absl::Now() - start, runs * per);
    printf("\nwhere the router's time went (sums over both measurements, from its /metrics):\n%s",
           bench.Metrics().c_str());
  }
  {
    Bench bench(TempDir());
    if (!bench.Start()) return 1;
    int runs = absl::GetFlag(FLAGS_memory_runs);
    long idle = RssKiB(bench.pid());
    bench.planner().set_hold(true);
    bench.planner().set_target(1000000);
    for (int i = 0; i < runs; ++i) bench.StartRun(1000, false);
    absl::Time until = absl::Now() + absl::Seconds(60);
    while (bench.planner().held() < static_cast<size_t>(runs) && absl::Now() < until) {
      absl::SleepFor(absl::Milliseconds(50));
    }
    long in_flight = RssKiB(bench.pid());
    printf("\nrouter RSS idle:                              %6.1f MiB\n", idle / 1024.0);
    printf(
        "router RSS with %d runs in flight (%zu Decide calls held open): %6.1f MiB (+%.1f KiB per "
        "run)\n",
        runs, bench.planner().held(), in_flight / 1024.0,
        static_cast<double>(in_flight - idle) / runs);
    bench.planner().Release();
  }
  {
    Bench bench(TempDir());
    if (!bench.Start()) return 1;
    int runs = absl::GetFlag(FLAGS_memory_runs);
    long idle = RssKiB(bench.pid());
    for (int i = 0; i < runs; ++i) bench.StartRun(1000, true);
    absl::Time until = absl::Now() + absl::Seconds(60);
    int paused = 0;
    while ((paused = bench.ListCount(rein::v1::PAUSED)) < runs && absl::Now() < until) {
      absl::SleepFor(absl::Milliseconds(100));
    }
    long rss = RssKiB(bench.pid());
    printf("router RSS with %d runs paused (AFTER_PLAN):  %6.1f MiB (+%.1f KiB per run)\n", paused,
           rss / 1024.0, static_cast<double>(rss - idle) / runs);
  }
  return 0;
}
