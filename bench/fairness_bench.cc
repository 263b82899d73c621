// fairness_bench: one namespace floods the real rein-router with 1,000 runs while another has
// a single run; prints that run's per-iteration p50/p99 beside the same run alone (issue 26,
// docs/NAMESPACES.md "A fair share of the router").
//
// The planner and the executor are fakes over loopback gRPC with a reply delay and a capacity:
// each serves at most --planner_capacity (--executor_capacity) calls at once, each taking
// --planner_delay (--executor_delay); calls past the capacity wait in arrival order, as at an
// LLM API's concurrency limit or an executor's --max_concurrent. The router runs with
// --max_planner_calls and --max_executor_calls at those capacities ("gated"), then, for
// comparison, with no limit (every call sent at once, the wait moved to the services' FIFO).
// One iteration = Decide, Execute, Evaluate and their commits; the times are the gaps between
// the run's entries into DECIDING, from the router's event timestamps.
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "bench/bench_util.h"
#include "common/proto_time.h"
#include "grpcpp/grpcpp.h"
#include "rein/v1/executor.grpc.pb.h"
#include "rein/v1/planner.grpc.pb.h"
#include "rein/v1/router.grpc.pb.h"

ABSL_FLAG(std::string, router_binary, "router_service/rein-router", "path of rein-router");
ABSL_FLAG(int, flood_runs, 1000, "runs of the flooding namespace");
ABSL_FLAG(int, iterations, 50,
          "iterations of the single run, gated and alone (>= 3; n iterations give n - 2 "
          "iteration times)");
ABSL_FLAG(int, ungated_iterations, 5,
          "iterations of the single run with no router limit (0: skip that phase; else >= 3; "
          "each of its iterations waits behind the flood at the services)");
ABSL_FLAG(absl::Duration, planner_delay, absl::Milliseconds(50), "each planner call's time");
ABSL_FLAG(int, planner_capacity, 32, "planner calls served at once");
ABSL_FLAG(absl::Duration, executor_delay, absl::Milliseconds(5), "each Execute's time");
ABSL_FLAG(int, executor_capacity, 8, "Execute calls served at once");
ABSL_FLAG(int, phase_timeout_seconds, 300, "a phase running longer ends the benchmark");

namespace {

using rein::bench::Percentile;
using rein::bench::PrintBench;

constexpr char kTempDirPrefix[] = "/tmp/rein-fairness-bench-";

// Serves at most `capacity` calls at once, each finishing `delay` after it began; the others
// wait in arrival order. One thread finishes them all.
class Capacity {
 public:
  Capacity(int capacity, absl::Duration delay)
      : capacity_(capacity), delay_(delay), thread_([this] { Loop(); }) {}
  ~Capacity() {
    Drain();
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void Serve(grpc::ServerUnaryReactor* reactor) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      waiting_.push_back(reactor);
    }
    cv_.notify_all();
  }
  // Answers every call now (UNAVAILABLE): nothing may be left open when a server shuts down.
  void Drain() {
    std::deque<grpc::ServerUnaryReactor*> all;
    {
      std::lock_guard<std::mutex> lock(mu_);
      all.swap(waiting_);
      for (auto& [until, r] : serving_) all.push_back(r);
      serving_.clear();
    }
    for (auto* r : all) r->Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "bench over"));
  }
  int64_t served() { return served_.load(); }

 private:
  void Loop() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stop_) {
      const absl::Time now = absl::Now();
      std::vector<grpc::ServerUnaryReactor*> done;
      // serving_ is in order of finish (every call takes the same delay).
      while (!serving_.empty() && serving_.front().first <= now) {
        done.push_back(serving_.front().second);
        serving_.pop_front();
      }
      while (static_cast<int>(serving_.size()) < capacity_ && !waiting_.empty()) {
        serving_.emplace_back(now + delay_, waiting_.front());
        waiting_.pop_front();
      }
      if (!done.empty()) {
        lock.unlock();
        for (auto* r : done) r->Finish(grpc::Status::OK);
        served_ += static_cast<int64_t>(done.size());
        lock.lock();
        continue;
      }
      if (serving_.empty()) {
        cv_.wait(lock);
      } else {
        cv_.wait_until(lock, absl::ToChronoTime(serving_.front().first));
      }
    }
  }

  const int capacity_;
  const absl::Duration delay_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<grpc::ServerUnaryReactor*> waiting_;
  std::deque<std::pair<absl::Time, grpc::ServerUnaryReactor*>> serving_;
  bool stop_ = false;
  std::atomic<int64_t> served_{0};
  std::thread thread_;
};

// A run's goal says how many iterations it wants: "loop <n>".
int TargetOf(const std::string& goal) {
  int n = 0;
  return absl::SimpleAtoi(goal.substr(goal.rfind(' ') + 1), &n) ? n : 1;
}

// Finishes the call once `capacity` serves it, or at once without one.
grpc::ServerUnaryReactor* Reply(grpc::CallbackServerContext* ctx, Capacity* capacity) {
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  if (capacity == nullptr) {
    reactor->Finish(grpc::Status::OK);
  } else {
    capacity->Serve(reactor);
  }
  return reactor;
}

// Plans one subtask; decides list_files each iteration; ends the run at its goal's count.
class FakePlanner final : public rein::v1::Planner::CallbackService {
 public:
  explicit FakePlanner(Capacity* capacity) : capacity_(capacity) {}
  grpc::ServerUnaryReactor* Plan(grpc::CallbackServerContext* ctx, const rein::v1::PlanRequest*,
                                 rein::v1::PlanResponse* resp) override {
    rein::v1::SubTask* task = resp->add_subtasks();
    task->set_id("work");
    task->set_description("loop");
    return Reply(ctx, capacity_);
  }
  grpc::ServerUnaryReactor* Decide(grpc::CallbackServerContext* ctx,
                                   const rein::v1::DecideRequest* req,
                                   rein::v1::DecideResponse* resp) override {
    rein::v1::ToolCall* call = resp->mutable_tool_call();
    call->set_tool("list_files");
    call->set_args_json(absl::StrCat("{\"path\":\"d", req->iteration(), "\"}"));
    return Reply(ctx, capacity_);
  }
  grpc::ServerUnaryReactor* Evaluate(grpc::CallbackServerContext* ctx,
                                     const rein::v1::EvaluateRequest* req,
                                     rein::v1::EvaluateResponse* resp) override {
    resp->set_goal_achieved(req->iteration() >= TargetOf(req->goal()));
    resp->set_status(resp->goal_achieved() ? rein::v1::RunEvent::Evaluation::COMPLETED
                                           : rein::v1::RunEvent::Evaluation::NEEDS_MORE_WORK);
    return Reply(ctx, capacity_);
  }

 private:
  Capacity* const capacity_;
};

// Offers list_files, and runs it.
class FakeExecutor final : public rein::v1::Executor::CallbackService {
 public:
  explicit FakeExecutor(Capacity* capacity) : capacity_(capacity) {}
  grpc::ServerUnaryReactor* ListTools(grpc::CallbackServerContext* ctx,
                                      const rein::v1::ListToolsRequest*,
                                      rein::v1::ListToolsResponse* resp) override {
    resp->add_tools()->set_name("list_files");
    return Reply(ctx, nullptr);
  }
  grpc::ServerUnaryReactor* Execute(grpc::CallbackServerContext* ctx,
                                    const rein::v1::ExecuteRequest* req,
                                    rein::v1::ExecuteResponse* resp) override {
    resp->set_ok(true);
    resp->set_output(absl::StrCat("listing of ", req->args_json()));
    return Reply(ctx, capacity_);
  }

 private:
  Capacity* const capacity_;
};

// The fake services and one router process in its own directory.
class Setup {
 public:
  Setup(bool gated, rein::bench::Watchdog* watchdog)
      : watchdog_(watchdog),
        planner_service_(absl::GetFlag(FLAGS_planner_capacity), absl::GetFlag(FLAGS_planner_delay)),
        executor_service_(absl::GetFlag(FLAGS_executor_capacity),
                          absl::GetFlag(FLAGS_executor_delay)),
        planner_(&planner_service_),
        executor_(&executor_service_),
        gated_(gated) {
    std::string pattern = absl::StrCat(kTempDirPrefix, "XXXXXX");
    dir_ = mkdtemp(pattern.data()) == nullptr ? "" : pattern;
  }
  ~Setup() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
      watchdog_->RemoveChild(pid_);
    }
    planner_service_.Drain();
    executor_service_.Drain();
    const auto now = std::chrono::system_clock::now();
    for (auto& server : servers_) server->Shutdown(now);
    if (dir_.rfind(kTempDirPrefix, 0) == 0) {
      std::error_code ignored;
      std::filesystem::remove_all(dir_, ignored);
    }
  }

  bool Start() {
    if (dir_.empty()) return false;
    int planner_port = 0, executor_port = 0, router_port = 0;
    for (auto [service, port] : {std::pair<grpc::Service*, int*>{&planner_, &planner_port},
                                 {&executor_, &executor_port}}) {
      grpc::ServerBuilder builder;
      builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), port);
      builder.RegisterService(service);
      servers_.push_back(builder.BuildAndStart());
      if (!servers_.back()) return false;
    }
    {
      grpc::ServerBuilder probe;
      probe.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &router_port);
      probe.BuildAndStart()->Shutdown(std::chrono::system_clock::now());
    }
    const int planner_limit = gated_ ? absl::GetFlag(FLAGS_planner_capacity) : 0;
    const int executor_limit = gated_ ? absl::GetFlag(FLAGS_executor_capacity) : 0;
    pid_ = fork();
    if (pid_ == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      const std::string log = dir_ + "/router.log";
      if (freopen(log.c_str(), "w", stderr) == nullptr) _exit(126);
      const std::string bin = absl::GetFlag(FLAGS_router_binary);
      execl(bin.c_str(), bin.c_str(), absl::StrCat("--listen=127.0.0.1:", router_port).c_str(),
            absl::StrCat("--store=sqlite:", dir_, "/rein.db").c_str(),
            absl::StrCat("--planner_target=127.0.0.1:", planner_port).c_str(),
            absl::StrCat("--executor_target=127.0.0.1:", executor_port).c_str(),
            absl::StrCat("--max_planner_calls=", planner_limit).c_str(),
            absl::StrCat("--max_executor_calls=", executor_limit).c_str(),
            "--shutdown_grace_seconds=1", static_cast<char*>(nullptr));
      _exit(127);
    }
    watchdog_->AddChild(pid_);
    auto channel = grpc::CreateChannel(absl::StrCat("127.0.0.1:", router_port),
                                       grpc::InsecureChannelCredentials());
    if (!channel->WaitForConnected(absl::ToChronoTime(absl::Now() + absl::Seconds(30)))) {
      fprintf(stderr, "the router did not come up (log: %s/router.log)\n", dir_.c_str());
      dir_ = "";  // kept for its log
      return false;
    }
    stub_ = rein::v1::Router::NewStub(channel);
    return true;
  }

  std::string StartRun(const std::string& ns, int iterations) {
    rein::v1::StartRunRequest req;
    req.mutable_spec()->set_goal(absl::StrCat("loop ", iterations));
    req.mutable_spec()->set_namespace_(ns);  // no tokens file: every caller is an admin
    req.mutable_spec()->add_tools("list_files");
    req.mutable_spec()->mutable_limits()->set_max_iterations(iterations + 10);
    req.mutable_spec()->mutable_limits()->mutable_deadline()->set_seconds(3600);
    rein::v1::Run run;
    grpc::ClientContext ctx;
    ctx.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(60)));
    grpc::Status s = stub_->StartRun(&ctx, req, &run);
    if (!s.ok()) fprintf(stderr, "StartRun: %s\n", s.error_message().c_str());
    return s.ok() ? run.run_id() : "";
  }

  // The run's iteration times (ms), once it has ended: the gaps between its entries into
  // DECIDING from EVALUATING.
  std::vector<double> IterationTimesMs(const std::string& run_id, absl::Duration limit) {
    rein::v1::WatchRunRequest req;
    req.set_run_id(run_id);
    grpc::ClientContext ctx;
    ctx.set_deadline(absl::ToChronoTime(absl::Now() + limit));
    auto reader = stub_->WatchRun(&ctx, req);
    rein::v1::RunEvent e;
    std::vector<double> ms;
    absl::Time last = absl::InfinitePast();
    while (reader->Read(&e)) {
      if (e.has_finished() && e.finished().outcome().reason() != rein::v1::GOAL_ACHIEVED) {
        fprintf(stderr, "run %s ended %s\n", run_id.c_str(),
                rein::v1::TerminationReason_Name(e.finished().outcome().reason()).c_str());
      }
      if (!e.has_stage_changed() || e.stage_changed().to() != rein::v1::DECIDING) continue;
      const absl::Time t = rein::FromProtoTime(e.time());
      if (e.stage_changed().from() == rein::v1::EVALUATING) {
        ms.push_back(absl::ToDoubleMilliseconds(t - last));
      }
      last = t;
    }
    grpc::Status s = reader->Finish();
    if (!s.ok()) fprintf(stderr, "WatchRun %s: %s\n", run_id.c_str(), s.error_message().c_str());
    return ms;
  }

  int64_t planner_served() { return planner_service_.served(); }

 private:
  rein::bench::Watchdog* const watchdog_;
  Capacity planner_service_, executor_service_;
  FakePlanner planner_;
  FakeExecutor executor_;
  const bool gated_;
  std::string dir_;
  std::vector<std::unique_ptr<grpc::Server>> servers_;
  pid_t pid_ = -1;
  std::unique_ptr<rein::v1::Router::Stub> stub_;
};

void Report(const std::string& key, const std::string& label, const std::vector<double>& ms) {
  printf("%-44s p50 %8.1f ms   p99 %8.1f ms   (%zu iterations)\n", label.c_str(),
         Percentile(ms, 0.5), Percentile(ms, 0.99), ms.size());
  PrintBench(key + ".p50", Percentile(ms, 0.5), "ms");
  PrintBench(key + ".p99", Percentile(ms, 0.99), "ms");
}

// One router: the single run alone, then beside the flood; returns false on a failure.
bool Measure(bool gated, int iterations, rein::bench::Watchdog* watchdog) {
  const absl::Duration limit = absl::Seconds(absl::GetFlag(FLAGS_phase_timeout_seconds));
  const std::string mode = gated ? "gated" : "ungated";
  watchdog->Enter(mode + " start", limit);
  Setup setup(gated, watchdog);
  if (!setup.Start()) return false;
  watchdog->Enter(mode + " alone", limit);
  const std::string alone = setup.StartRun("quiet", iterations);
  if (alone.empty()) return false;
  const std::vector<double> alone_ms = setup.IterationTimesMs(alone, limit);
  Report("fairness." + mode + ".alone", "single run alone:", alone_ms);

  watchdog->Enter(mode + " flood", limit);
  const int flood = absl::GetFlag(FLAGS_flood_runs);
  for (int i = 0; i < flood; ++i) {
    if (setup.StartRun("flood", 90000).empty()) return false;
  }
  // Every flood run is in its loop (a Decide each, past their plans) before the single run.
  const int64_t base = setup.planner_served();
  while (setup.planner_served() < base + 2 * flood) absl::SleepFor(absl::Milliseconds(10));
  const absl::Time started = absl::Now();
  const int64_t served0 = setup.planner_served();
  const std::string beside = setup.StartRun("quiet", iterations);
  if (beside.empty()) return false;
  const std::vector<double> beside_ms = setup.IterationTimesMs(beside, limit);
  const double seconds = absl::ToDoubleSeconds(absl::Now() - started);
  Report("fairness." + mode + ".beside_flood",
         absl::StrCat("single run beside ", flood, " flood runs:"), beside_ms);
  const double planner_rate = (setup.planner_served() - served0) / seconds;
  printf("%-44s %8.0f planner calls/s served meanwhile\n", "", planner_rate);
  PrintBench("fairness." + mode + ".planner_calls_per_s", planner_rate, "1/s");
  const double p50 = Percentile(beside_ms, 0.5) / Percentile(alone_ms, 0.5);
  const double p99 = Percentile(beside_ms, 0.99) / Percentile(alone_ms, 0.99);
  printf("%-44s p50 %8.2fx      p99 %8.2fx\n\n", "beside the flood / alone:", p50, p99);
  PrintBench("fairness." + mode + ".ratio_p50", p50, "x");
  PrintBench("fairness." + mode + ".ratio_p99", p99, "x");
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  signal(SIGPIPE, SIG_IGN);
  // A run of n iterations has n - 2 gaps between entries into DECIDING from EVALUATING.
  const int ungated = absl::GetFlag(FLAGS_ungated_iterations);
  if (absl::GetFlag(FLAGS_iterations) < 3 || (ungated != 0 && ungated < 3)) {
    fprintf(stderr, "fairness_bench: --iterations and --ungated_iterations must be >= 3\n");
    return 2;
  }
  if (absl::GetFlag(FLAGS_flood_runs) < 1 || absl::GetFlag(FLAGS_planner_capacity) < 1 ||
      absl::GetFlag(FLAGS_executor_capacity) < 1) {
    fprintf(stderr, "fairness_bench: --flood_runs and the capacities must be >= 1\n");
    return 2;
  }
  rein::bench::Watchdog watchdog("fairness_bench");
  printf(
      "rein fairness benchmark: real rein-router (SQLite) against fake services: planner %s per "
      "call, %d at once; executor %s per call, %d at once. Namespace \"flood\" runs %d runs, "
      "\"quiet\" one.\n\ngated: --max_planner_calls=%d --max_executor_calls=%d\n",
      absl::FormatDuration(absl::GetFlag(FLAGS_planner_delay)).c_str(),
      absl::GetFlag(FLAGS_planner_capacity),
      absl::FormatDuration(absl::GetFlag(FLAGS_executor_delay)).c_str(),
      absl::GetFlag(FLAGS_executor_capacity), absl::GetFlag(FLAGS_flood_runs),
      absl::GetFlag(FLAGS_planner_capacity), absl::GetFlag(FLAGS_executor_capacity));
  if (!Measure(true, absl::GetFlag(FLAGS_iterations), &watchdog)) return 1;
  if (const int n = absl::GetFlag(FLAGS_ungated_iterations); n > 0) {
    printf("ungated: no router limit (the calls wait at the services, in arrival order)\n");
    if (!Measure(false, n, &watchdog)) return 1;
  }
  return 0;
}
