// router_bench: the real rein-router against instant fake planner and executor services over
// loopback gRPC. Prints the router's overhead per iteration (p50, p99) at 1 run, throughput and
// per-run iteration time at 100 and 1,000 concurrent runs, the router's CPU time per iteration
// (from /proc/<pid>/stat), its resident memory idle, with 1,000 runs in flight and with 1,000
// paused, and the payload sizes one iteration exchanges (for floor_bench). --store=postgres
// runs the same against a private PostgreSQL server (keys router_pg.*).
//
// Never hangs: every RPC has a deadline, every phase a watchdog that kills the router and exits,
// and held planner calls are always answered before the fake servers shut down.
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "bench/bench_util.h"
#include "common/proto_time.h"
#include "grpcpp/grpcpp.h"
#include "rein/v1/executor.grpc.pb.h"
#include "rein/v1/planner.grpc.pb.h"
#include "rein/v1/router.grpc.pb.h"
#include "router_service/store/testing/postgres_server.h"

ABSL_FLAG(std::string, router_binary, "router_service/rein-router", "path of rein-router");
ABSL_FLAG(std::string, store, "sqlite", "the router's store: sqlite or postgres");
ABSL_FLAG(bool, quick, false, "a smaller run for smoke tests (well under a minute)");
ABSL_FLAG(int, iterations, -1,
          "iterations of the single-run measurement (-1: 300, quick 100; >= 1)");
ABSL_FLAG(int, concurrent_runs, 100, "runs of the first concurrent measurement (0: skip)");
ABSL_FLAG(int, concurrent_iterations, -1, "iterations per run there (-1: 30, quick 8)");
ABSL_FLAG(int, large_runs, 1000, "runs of the second concurrent measurement (0: skip)");
ABSL_FLAG(int, large_iterations, -1, "iterations per run there (-1: 10, quick 3)");
ABSL_FLAG(int, watchers, -1,
          "runs of the live-watcher measurement, each followed by its own WatchRun stream from "
          "start to end (-1: 1000, quick 100; 0: skip); keys <section>.watch<N>.*");
ABSL_FLAG(int, watch_iterations, -1, "iterations per run there (-1: 5, quick 3)");
ABSL_FLAG(int, memory_runs, 1000, "runs held in flight / paused for the memory figures (0: skip)");
ABSL_FLAG(std::string, synchronous, "NORMAL", "SQLite synchronous mode of the router");
ABSL_FLAG(bool, unix_sockets, false,
          "the fake planner and executor listen on Unix-domain sockets in the bench's folder "
          "(the router reaches them with unix: targets) instead of loopback TCP");
ABSL_FLAG(int, phase_timeout_seconds, 180, "a phase running longer ends the benchmark");

namespace {

using rein::bench::Percentile;
using rein::bench::PrintBench;

// Where each benchmark's directory is made (TempDir); only such a directory is removed.
constexpr char kTempDirPrefix[] = "/tmp/rein-bench-";

constexpr auto kCallDeadline = std::chrono::seconds(30);

std::chrono::system_clock::time_point In(std::chrono::seconds s) {
  return std::chrono::system_clock::now() + s;
}

// The serialized sizes of the last messages of each kind, to size the floor benchmark.
struct Payloads {
  std::atomic<size_t> decide_request{0}, decide_response{0};
  std::atomic<size_t> execute_request{0}, execute_response{0};
  std::atomic<size_t> evaluate_request{0}, evaluate_response{0};
};

// Answers at once, except Decide while holding: then the call waits (holding no thread) until
// Release. gRPC's Server::Shutdown waits for every callback reactor to finish, past its
// deadline too (grpc/grpc#39114), so a held call that is never finished hangs the benchmark at
// teardown: holding and releasing share one lock, so no call slips in between a release and the
// end of holding (before, a Decide that read "hold" just before the release parked itself after
// it, and ./dev bench hung after the "runs in flight" phase with the router gone).
class FakePlanner final : public rein::v1::Planner::CallbackService {
 public:
  explicit FakePlanner(Payloads* payloads) : payloads_(payloads) {}

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
    payloads_->decide_request = req->ByteSizeLong();
    payloads_->decide_response = resp->ByteSizeLong();
    auto* reactor = ctx->DefaultReactor();
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (hold_) {
        held_.push_back(reactor);
        return reactor;
      }
    }
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }
  grpc::ServerUnaryReactor* Evaluate(grpc::CallbackServerContext* ctx,
                                     const rein::v1::EvaluateRequest* req,
                                     rein::v1::EvaluateResponse* resp) override {
    bool done = req->iteration() >= target_;
    resp->set_status(done ? rein::v1::RunEvent::Evaluation::COMPLETED
                          : rein::v1::RunEvent::Evaluation::NEEDS_MORE_WORK);
    resp->set_goal_achieved(done);
    payloads_->evaluate_request = req->ByteSizeLong();
    payloads_->evaluate_response = resp->ByteSizeLong();
    auto* reactor = ctx->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }
  void set_target(int n) { target_ = n; }
  void Hold() {
    std::lock_guard<std::mutex> lock(mu_);
    hold_ = true;
  }
  size_t held() {
    std::lock_guard<std::mutex> lock(mu_);
    return held_.size();
  }
  // Stops holding and answers every held call (UNAVAILABLE).
  void Release() {
    std::vector<grpc::ServerUnaryReactor*> held;
    {
      std::lock_guard<std::mutex> lock(mu_);
      hold_ = false;
      held.swap(held_);
    }
    for (auto* r : held) r->Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "bench over"));
  }

 private:
  Payloads* const payloads_;
  std::atomic<int> target_{10};
  std::mutex mu_;
  bool hold_ = false;
  std::vector<grpc::ServerUnaryReactor*> held_;
};

class FakeExecutor final : public rein::v1::Executor::CallbackService {
 public:
  explicit FakeExecutor(Payloads* payloads) : payloads_(payloads) {}

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
    payloads_->execute_request = req->ByteSizeLong();
    payloads_->execute_response = resp->ByteSizeLong();
    auto* reactor = ctx->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

 private:
  Payloads* const payloads_;
};

// A run's iteration times from its events: the gaps between its entries into DECIDING from
// EVALUATING (one iteration each), the bytes of its events and the time of the last one.
struct IterationGaps {
  std::vector<double> us;
  int64_t last = -1;
  size_t event_bytes = 0;
  absl::Time last_time = absl::InfinitePast();

  void Add(const std::string& run_id, const rein::v1::RunEvent& e) {
    event_bytes += e.ByteSizeLong();
    last_time = rein::FromProtoTime(e.time());
    if (e.has_stage_changed() && e.stage_changed().to() == rein::v1::DECIDING) {
      int64_t t = absl::ToUnixMicros(rein::FromProtoTime(e.time()));
      if (last >= 0 && e.stage_changed().from() == rein::v1::EVALUATING) {
        us.push_back(static_cast<double>(t - last));
      }
      last = t;
    }
    if (e.has_finished() && e.finished().outcome().reason() != rein::v1::GOAL_ACHIEVED) {
      fprintf(stderr, "run %s ended %s: %s\n", run_id.c_str(),
              rein::v1::TerminationReason_Name(e.finished().outcome().reason()).c_str(),
              e.finished().outcome().message().c_str());
    }
  }
};

// One live WatchRun stream on gRPC's callback API (a thousand of them need no thread each in
// the benchmark either), from the run's start to its end.
class LiveWatch final : public grpc::ClientReadReactor<rein::v1::RunEvent> {
 public:
  LiveWatch(rein::v1::Router::Stub* stub, std::string run_id, absl::Time deadline)
      : run_id_(std::move(run_id)) {
    request_.set_run_id(run_id_);
    context_.set_deadline(absl::ToChronoTime(deadline));
    stub->async()->WatchRun(&context_, &request_, this);
    StartRead(&event_);
    StartCall();
  }
  void OnReadDone(bool ok) override {
    if (!ok) return;
    gaps_.Add(run_id_, event_);
    StartRead(&event_);
  }
  void OnDone(const grpc::Status& s) override {
    if (!s.ok()) fprintf(stderr, "WatchRun %s: %s\n", run_id_.c_str(), s.error_message().c_str());
    done_.Notify();
  }
  // Waits for the stream's end (up to `until`); the gaps once it ended, else none.
  const IterationGaps* Wait(absl::Time until) {
    if (!done_.WaitForNotificationWithDeadline(until)) {
      context_.TryCancel();
      done_.WaitForNotification();  // a cancelled stream ends at once
      return nullptr;
    }
    return &gaps_;
  }

 private:
  const std::string run_id_;
  grpc::ClientContext context_;
  rein::v1::WatchRunRequest request_;
  rein::v1::RunEvent event_;
  IterationGaps gaps_;
  absl::Notification done_;
};

int FreePort() {
  grpc::ServerBuilder probe;
  int port = 0;
  probe.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  probe.BuildAndStart()->Shutdown(std::chrono::system_clock::now());
  return port;
}

// One router process with its fake planner and executor.
class Bench {
 public:
  Bench(std::string dir, std::string store, rein::bench::Watchdog* watchdog)
      : dir_(std::move(dir)),
        store_(std::move(store)),
        watchdog_(watchdog),
        planner_(&payloads_),
        executor_(&payloads_) {}

  bool Start() {
    const bool unix_sockets = absl::GetFlag(FLAGS_unix_sockets);
    std::string planner_target = absl::StrCat("unix:", dir_, "/planner.sock");
    std::string executor_target = absl::StrCat("unix:", dir_, "/executor.sock");
    grpc::ServerBuilder builder;
    builder.AddListeningPort(unix_sockets ? planner_target : "127.0.0.1:0",
                             grpc::InsecureServerCredentials(), &planner_port_);
    builder.RegisterService(&planner_);
    planner_server_ = builder.BuildAndStart();
    grpc::ServerBuilder builder2;
    builder2.AddListeningPort(unix_sockets ? executor_target : "127.0.0.1:0",
                              grpc::InsecureServerCredentials(), &executor_port_);
    builder2.RegisterService(&executor_);
    executor_server_ = builder2.BuildAndStart();
    if (!planner_server_ || !executor_server_) {
      fprintf(stderr, "the fake planner or executor could not listen\n");
      return false;
    }
    if (!unix_sockets) {
      planner_target = absl::StrCat("127.0.0.1:", planner_port_);
      executor_target = absl::StrCat("127.0.0.1:", executor_port_);
    }
    router_port_ = FreePort();
    metrics_port_ = FreePort();
    pid_ = fork();
    if (pid_ == 0) {
      // The router dies with the benchmark, whatever ends it.
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      std::string log = dir_ + "/router.log";
      if (freopen(log.c_str(), "w", stderr) == nullptr) _exit(126);
      std::string bin = absl::GetFlag(FLAGS_router_binary);
      execl(bin.c_str(), bin.c_str(), absl::StrCat("--listen=127.0.0.1:", router_port_).c_str(),
            absl::StrCat("--store=", store_).c_str(),
            absl::StrCat("--planner_target=", planner_target).c_str(),
            absl::StrCat("--executor_target=", executor_target).c_str(),
            absl::StrCat("--sqlite_synchronous=", absl::GetFlag(FLAGS_synchronous)).c_str(),
            "--shutdown_grace_seconds=1", absl::StrCat("--metrics_port=", metrics_port_).c_str(),
            static_cast<char*>(nullptr));
      _exit(127);
    }
    watchdog_->AddChild(pid_);
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(64 << 20);
    auto channel = grpc::CreateCustomChannel(absl::StrCat("127.0.0.1:", router_port_),
                                             grpc::InsecureChannelCredentials(), args);
    if (!channel->WaitForConnected(In(std::chrono::seconds(30)))) {
      fprintf(stderr, "router did not come up; its log is %s/router.log\n", dir_.c_str());
      keep_dir_ = true;
      return false;
    }
    stub_ = rein::v1::Router::NewStub(channel);
    return true;
  }

  ~Bench() {
    // Answer held calls and stop holding, so nothing the router sends from now on waits.
    planner_.Release();
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      for (int i = 0; i < 500 && waitpid(pid_, nullptr, WNOHANG) == 0; ++i) {
        absl::SleepFor(absl::Milliseconds(10));
      }
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
      watchdog_->RemoveChild(pid_);
    }
    planner_.Release();  // whatever arrived while the router stopped
    auto now = std::chrono::system_clock::now();
    if (planner_server_) planner_server_->Shutdown(now);
    if (executor_server_) executor_server_->Shutdown(now);
    // The benchmark's own directory (its database and the router's log), kept only when the
    // router did not come up, for the log named above.
    if (!keep_dir_ && dir_.rfind(kTempDirPrefix, 0) == 0) {
      std::error_code ignored;
      std::filesystem::remove_all(dir_, ignored);
    }
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
    ctx.set_deadline(In(kCallDeadline));
    grpc::Status s = stub_->StartRun(&ctx, req, &run);
    if (!s.ok()) {
      fprintf(stderr, "StartRun: %s\n", s.error_message().c_str());
      return "";
    }
    return run.run_id();
  }

  // Waits (up to `limit`) for the run to end; returns the gaps between its entries into
  // DECIDING from EVALUATING (one iteration each).
  // Adds the serialized size of every event of the run to `*event_bytes` and sets `*last_time`
  // to the time of its last event, when given.
  std::vector<double> IterationTimesUs(const std::string& run_id, absl::Duration limit,
                                       size_t* event_bytes = nullptr,
                                       absl::Time* last_time = nullptr) {
    if (run_id.empty()) return {};
    rein::v1::WatchRunRequest req;
    req.set_run_id(run_id);
    grpc::ClientContext ctx;
    ctx.set_deadline(absl::ToChronoTime(absl::Now() + limit));
    auto reader = stub_->WatchRun(&ctx, req);
    rein::v1::RunEvent e;
    IterationGaps gaps;
    while (reader->Read(&e)) gaps.Add(run_id, e);
    grpc::Status s = reader->Finish();
    if (!s.ok()) fprintf(stderr, "WatchRun %s: %s\n", run_id.c_str(), s.error_message().c_str());
    if (event_bytes != nullptr) *event_bytes += gaps.event_bytes;
    if (last_time != nullptr && gaps.last_time != absl::InfinitePast()) *last_time = gaps.last_time;
    return std::move(gaps.us);
  }

  // A live watcher of the run (callback API), from its first event.
  std::unique_ptr<LiveWatch> Watch(const std::string& run_id, absl::Time deadline) {
    return std::make_unique<LiveWatch>(stub_.get(), run_id, deadline);
  }

  // Whether the run reached a terminal stage (false also when GetRun fails).
  bool Ended(const std::string& run_id) {
    rein::v1::GetRunRequest req;
    req.set_run_id(run_id);
    rein::v1::Run run;
    grpc::ClientContext ctx;
    ctx.set_deadline(In(kCallDeadline));
    if (!stub_->GetRun(&ctx, req, &run).ok()) return false;
    const rein::v1::Stage stage = run.state().stage();
    return stage == rein::v1::FINISHED || stage == rein::v1::FAILED || stage == rein::v1::CANCELLED;
  }

  size_t StateBytes(const std::string& run_id) {
    rein::v1::GetRunRequest req;
    req.set_run_id(run_id);
    rein::v1::Run run;
    grpc::ClientContext ctx;
    ctx.set_deadline(In(kCallDeadline));
    if (!stub_->GetRun(&ctx, req, &run).ok()) return 0;
    return run.state().ByteSizeLong();
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
      ctx.set_deadline(In(kCallDeadline));
      if (!stub_->ListRuns(&ctx, req, &resp).ok()) return count;
      count += resp.runs_size();
      token = resp.next_page_token();
    } while (!token.empty());
    return count;
  }

  FakePlanner& planner() { return planner_; }
  const Payloads& payloads() const { return payloads_; }
  pid_t pid() const { return pid_; }

 private:
  std::string dir_;
  bool keep_dir_ = false;
  std::string store_;
  rein::bench::Watchdog* watchdog_;
  Payloads payloads_;
  FakePlanner planner_;
  FakeExecutor executor_;
  std::unique_ptr<grpc::Server> planner_server_, executor_server_;
  int planner_port_ = 0, executor_port_ = 0, router_port_ = 0, metrics_port_ = 0;
  pid_t pid_ = -1;
  std::unique_ptr<rein::v1::Router::Stub> stub_;
};

std::string TempDir() {
  std::string pattern = absl::StrCat(kTempDirPrefix, "XXXXXX");
  const char* dir = mkdtemp(pattern.data());
  return dir == nullptr ? "/tmp" : dir;
}

// Runs `work` over 0..n-1 on `threads` threads.
template <typename Fn>
void ParallelFor(int n, int threads, Fn work) {
  std::atomic<int> next{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      for (int i; (i = next++) < n;) work(i);
    });
  }
  for (auto& t : pool) t.join();
}

// Starts `runs` runs of `per_run` iterations at once and prints throughput, per-run iteration
// time and the router's CPU time per iteration. Without `watch`, no live watcher is attached
// while they run (that measures the loop alone): the benchmark polls GetRun until every run
// ended, then reads each run's events back. With `watch`, every run has its own live WatchRun
// stream from its start to its end (what a UI following every run costs the router). Times come
// from the router's event timestamps either way.
void MeasureLoad(Bench& bench, const std::string& prefix, const std::string& label, int runs,
                 int per_run, absl::Duration limit, bool watch = false) {
  bench.planner().set_target(per_run);
  const absl::Duration cpu0 = rein::bench::CpuTime(bench.pid());
  const absl::Duration self0 = rein::bench::CpuTime(getpid());
  const absl::Time start = absl::Now();
  const absl::Time until = start + limit;
  std::vector<std::string> ids(runs);
  std::vector<std::unique_ptr<LiveWatch>> watches(runs);
  ParallelFor(runs, 16, [&](int i) {
    ids[i] = bench.StartRun(per_run, false);
    if (watch && !ids[i].empty()) watches[i] = bench.Watch(ids[i], until);
  });
  std::vector<double> all;
  std::mutex mu;
  absl::Time last_event = start;
  auto add = [&](const std::vector<double>& times, absl::Time last) {
    std::lock_guard<std::mutex> lock(mu);
    all.insert(all.end(), times.begin(), times.end());
    last_event = std::max(last_event, last);
  };
  absl::Duration cpu, self_cpu;
  if (watch) {
    for (const std::unique_ptr<LiveWatch>& w : watches) {
      const IterationGaps* gaps = w ? w->Wait(until) : nullptr;
      if (gaps != nullptr) add(gaps->us, gaps->last_time);
    }
    cpu = rein::bench::CpuTime(bench.pid()) - cpu0;
    self_cpu = rein::bench::CpuTime(getpid()) - self0;
  } else {
    for (const std::string& id : ids) {
      while (!id.empty() && !bench.Ended(id) && absl::Now() < until) {
        absl::SleepFor(absl::Milliseconds(5));
      }
    }
    cpu = rein::bench::CpuTime(bench.pid()) - cpu0;
    self_cpu = rein::bench::CpuTime(getpid()) - self0;
    ParallelFor(runs, 8, [&](int i) {
      absl::Time last = start;
      auto times = bench.IterationTimesUs(ids[i], limit, nullptr, &last);
      add(times, last);
    });
  }
  const absl::Duration wall = last_event - start;
  // Iterations that completed: one per gap, plus each run's first (its PLANNING..DECIDING).
  const double iterations = static_cast<double>(all.size() + runs);
  const double per_s = iterations / absl::ToDoubleSeconds(wall);
  const double cpu_us = absl::ToDoubleMicroseconds(cpu) / iterations;
  const double self_us = absl::ToDoubleMicroseconds(self_cpu) / iterations;
  const double p50 = Percentile(all, 0.5), p99 = Percentile(all, 0.99);
  printf(
      "%-28s %8.0f iterations/s   per-run iteration p50 %7.0f us  p99 %7.0f us   "
      "router CPU %5.0f us/iteration (the bench's fakes and client: %5.0f)\n",
      label.c_str(), per_s, p50, p99, cpu_us, self_us);
  PrintBench(prefix + ".it_per_s", per_s, "it/s");
  PrintBench(prefix + ".p50", p50, "us");
  PrintBench(prefix + ".p99", p99, "us");
  PrintBench(prefix + ".cpu_per_it", cpu_us, "us");
  PrintBench(prefix + ".bench_cpu_per_it", self_us, "us");
  // Everything the loop costs on this machine (LangGraph.js runs all of it in one process).
  PrintBench(prefix + ".all_cpu_per_it", cpu_us + self_us, "us");
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  signal(SIGPIPE, SIG_IGN);
  setvbuf(stdout, nullptr, _IOLBF, 0);  // lines reach a pipe as they are printed
  const bool quick = absl::GetFlag(FLAGS_quick);
  auto pick = [quick](int flag, int normal, int small) {
    return flag >= 0 ? flag : (quick ? small : normal);
  };
  const int iterations = pick(absl::GetFlag(FLAGS_iterations), 300, 100);
  const int concurrent_iterations = pick(absl::GetFlag(FLAGS_concurrent_iterations), 30, 8);
  const int large_iterations = pick(absl::GetFlag(FLAGS_large_iterations), 10, 3);
  const int watchers = pick(absl::GetFlag(FLAGS_watchers), 1000, 100);
  const int watch_iterations = pick(absl::GetFlag(FLAGS_watch_iterations), 5, 3);
  if (iterations < 1 || concurrent_iterations < 1 || large_iterations < 1 || watch_iterations < 1) {
    // The figures are per iteration (0 used to stop the benchmark with a division by zero).
    fprintf(stderr,
            "router_bench: --iterations, --concurrent_iterations, --large_iterations and "
            "--watch_iterations must be at least 1\n");
    return 2;
  }
  const absl::Duration limit = absl::Seconds(absl::GetFlag(FLAGS_phase_timeout_seconds));
  const bool postgres = absl::GetFlag(FLAGS_store) == "postgres";
  const std::string section = postgres ? "router_pg" : "router";
  rein::bench::Watchdog watchdog("router_bench");

  std::unique_ptr<rein::PostgresServer> pg;
  // The store of a Bench whose directory is `dir` (a SQLite database there, removed with it).
  auto store = [&](const std::string& dir) -> std::string {
    if (!postgres) return absl::StrCat("sqlite:", dir, "/bench.db");
    auto url = pg->CreateDatabase();
    if (!url.ok()) {
      fprintf(stderr, "creating a database: %s\n", url.status().ToString().c_str());
      return "";
    }
    return *url;
  };
  if (postgres) {
    watchdog.Enter("postgres start", limit);
    auto server = rein::PostgresServer::Start();
    if (!server.ok()) {
      printf("router_bench: no PostgreSQL server: %s\n", server.status().ToString().c_str());
      return 1;
    }
    pg = std::move(*server);
  }
  printf(
      "rein router benchmark: real rein-router (%s) against instant fake planner and\n"
      "executor services over loopback gRPC. One iteration = Decide, Execute, Evaluate (three\n"
      "RPCs) and their three commits.\n\n",
      postgres ? "PostgreSQL, a private server with fsync off"
               : absl::StrCat("SQLite synchronous=", absl::GetFlag(FLAGS_synchronous)).c_str());
  {
    watchdog.Enter("start", limit);
    const std::string dir = TempDir();
    Bench bench(dir, store(dir), &watchdog);
    if (!bench.Start()) return 1;
    watchdog.Enter("1 run", limit);
    bench.planner().set_target(iterations);
    // One run alone, twice: first with nobody watching it live (the loop alone, as at 100 and
    // 1,000 runs: the benchmark checks every 20 ms whether it ended, then reads its events
    // back), then with one live WatchRun stream from its start (what following a run costs;
    // for reference).
    std::string id;
    size_t event_bytes = 0;
    for (bool watched : {false, true}) {
      const absl::Duration cpu0 = rein::bench::CpuTime(bench.pid());
      const absl::Time start = absl::Now();
      const std::string run = bench.StartRun(iterations, false);
      std::vector<double> us;
      if (watched) {
        us = bench.IterationTimesUs(run, limit);
      } else {
        while (!run.empty() && !bench.Ended(run) && absl::Now() < start + limit) {
          absl::SleepFor(absl::Milliseconds(20));
        }
      }
      const absl::Duration cpu = rein::bench::CpuTime(bench.pid()) - cpu0;
      absl::Time last = start;
      if (!watched) us = bench.IterationTimesUs(run, limit, &event_bytes, &last);
      // Wall time to the run's last event (the unwatched run is seen ending up to 20 ms late).
      const absl::Duration wall = (watched ? absl::Now() : last) - start;
      const double cpu_us = absl::ToDoubleMicroseconds(cpu) / iterations;
      const std::string key = section + (watched ? ".1run_watched" : ".1run");
      printf(
          "%-28s p50 %7.0f us   p99 %7.0f us   (%zu iterations, %.0f iterations/s)   "
          "router CPU %5.0f us/iteration\n",
          watched ? "1 run, watched live:" : "1 run:", Percentile(us, 0.5), Percentile(us, 0.99),
          us.size(), iterations / absl::ToDoubleSeconds(wall), cpu_us);
      PrintBench(key + ".p50", Percentile(us, 0.5), "us");
      PrintBench(key + ".p99", Percentile(us, 0.99), "us");
      PrintBench(key + ".cpu_per_it", cpu_us, "us");
      if (!watched) id = run;
    }
    const Payloads& p = bench.payloads();
    const size_t state = bench.StateBytes(id);
    printf(
        "payloads: decide %zu/%zu B, execute %zu/%zu B, evaluate %zu/%zu B (request/response), "
        "state %zu B, events %zu B per iteration\n",
        p.decide_request.load(), p.decide_response.load(), p.execute_request.load(),
        p.execute_response.load(), p.evaluate_request.load(), p.evaluate_response.load(), state,
        event_bytes / iterations);
    PrintBench(section + ".payload.decide_request", p.decide_request, "bytes");
    PrintBench(section + ".payload.decide_response", p.decide_response, "bytes");
    PrintBench(section + ".payload.execute_request", p.execute_request, "bytes");
    PrintBench(section + ".payload.execute_response", p.execute_response, "bytes");
    PrintBench(section + ".payload.evaluate_request", p.evaluate_request, "bytes");
    PrintBench(section + ".payload.evaluate_response", p.evaluate_response, "bytes");
    PrintBench(section + ".payload.state", state, "bytes");
    PrintBench(section + ".payload.events_per_it", event_bytes / iterations, "bytes");

    for (auto [runs, per] : {std::pair{absl::GetFlag(FLAGS_concurrent_runs), concurrent_iterations},
                             std::pair{absl::GetFlag(FLAGS_large_runs), large_iterations}}) {
      if (runs <= 0) continue;
      watchdog.Enter(absl::StrCat(runs, " runs"), limit);
      MeasureLoad(bench, absl::StrCat(section, ".c", runs), absl::StrCat(runs, " concurrent runs:"),
                  runs, per, limit);
    }
    if (watchers > 0) {
      watchdog.Enter(absl::StrCat(watchers, " watched runs"), limit);
      MeasureLoad(bench, absl::StrCat(section, ".watch", watchers),
                  absl::StrCat(watchers, " runs, each watched:"), watchers, watch_iterations, limit,
                  /*watch=*/true);
    }
  }
  const int memory_runs = absl::GetFlag(FLAGS_memory_runs);
  if (memory_runs > 0) {
    watchdog.Enter("runs in flight", limit);
    const std::string dir = TempDir();
    Bench bench(dir, store(dir), &watchdog);
    if (!bench.Start()) return 1;
    const long idle = rein::bench::RssKiB(bench.pid());
    bench.planner().Hold();
    bench.planner().set_target(1000000);
    for (int i = 0; i < memory_runs; ++i) bench.StartRun(1000, false);
    const absl::Time until = absl::Now() + absl::Seconds(60);
    while (bench.planner().held() < static_cast<size_t>(memory_runs) && absl::Now() < until) {
      absl::SleepFor(absl::Milliseconds(50));
    }
    const long in_flight = rein::bench::RssKiB(bench.pid());
    printf("\nrouter RSS idle:                              %6.1f MiB\n", idle / 1024.0);
    printf(
        "router RSS with %d runs in flight (%zu Decide calls held open): %6.1f MiB "
        "(+%.1f KiB per run)\n",
        memory_runs, bench.planner().held(), in_flight / 1024.0,
        static_cast<double>(in_flight - idle) / memory_runs);
    PrintBench(section + ".rss.idle", idle / 1024.0, "MiB");
    PrintBench(section + ".rss.in_flight", in_flight / 1024.0, "MiB");
    watchdog.Enter("runs in flight teardown", limit);
  }
  if (memory_runs > 0) {
    watchdog.Enter("runs paused", limit);
    const std::string dir = TempDir();
    Bench bench(dir, store(dir), &watchdog);
    if (!bench.Start()) return 1;
    const long idle = rein::bench::RssKiB(bench.pid());
    for (int i = 0; i < memory_runs; ++i) bench.StartRun(1000, true);
    const absl::Time until = absl::Now() + absl::Seconds(60);
    int paused = 0;
    while ((paused = bench.ListCount(rein::v1::PAUSED)) < memory_runs && absl::Now() < until) {
      absl::SleepFor(absl::Milliseconds(100));
    }
    const long rss = rein::bench::RssKiB(bench.pid());
    printf("router RSS with %d runs paused (AFTER_PLAN):  %6.1f MiB (+%.1f KiB per run)\n", paused,
           rss / 1024.0, static_cast<double>(rss - idle) / memory_runs);
    PrintBench(section + ".rss.paused", rss / 1024.0, "MiB");
    watchdog.Enter("runs paused teardown", limit);
  }
  watchdog.Enter("exit", limit);
  return 0;
}
