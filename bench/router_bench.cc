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
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "bench/bench_util.h"
#include "bench/fake_services.h"
#include "bench/router_process.h"
#include "grpcpp/grpcpp.h"
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

using rein::bench::FakePlanner;
using rein::bench::IterationGaps;
using rein::bench::Payloads;
using rein::bench::Percentile;
using rein::bench::PrintBench;

// Where each benchmark's directory is made (ScratchDir).
constexpr char kTempDirPrefix[] = "/tmp/rein-bench-";

constexpr auto kCallDeadline = std::chrono::seconds(30);

std::chrono::system_clock::time_point In(std::chrono::seconds s) {
  return std::chrono::system_clock::now() + s;
}

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

// One router process with its fake planner and executor, in `dir`.
class Bench {
 public:
  Bench(rein::bench::ScratchDir* dir, std::string store, rein::bench::Watchdog* watchdog)
      : dir_(dir),
        store_(std::move(store)),
        services_(FakeOptions(&payloads_)),
        router_(watchdog) {}

  ~Bench() {
    // Answer held calls and stop holding, so nothing the router sends from now on waits;
    // services_ answers whatever arrives while the router stops, then shuts down.
    services_.Release();
    router_.Stop(absl::Seconds(5));
  }

  bool Start() {
    const std::string& dir = dir_->path();
    if (dir.empty() || !services_.Start(absl::GetFlag(FLAGS_unix_sockets) ? dir : "")) {
      return false;
    }
    if (!router_.Start(absl::GetFlag(FLAGS_router_binary), dir,
                       {absl::StrCat("--store=", store_),
                        absl::StrCat("--planner_target=", services_.planner_target()),
                        absl::StrCat("--executor_target=", services_.executor_target()),
                        absl::StrCat("--sqlite_synchronous=", absl::GetFlag(FLAGS_synchronous)),
                        "--shutdown_grace_seconds=1",
                        absl::StrCat("--metrics_port=", rein::bench::FreePort())})) {
      dir_->Keep();  // for the router's log
      return false;
    }
    stub_ = router_.stub();
    return true;
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
    rein::bench::IterationGaps gaps = rein::bench::WatchToEnd(stub_, run_id, limit);
    if (event_bytes != nullptr) *event_bytes += gaps.event_bytes;
    if (last_time != nullptr && gaps.last_time != absl::InfinitePast()) *last_time = gaps.last_time;
    return std::move(gaps.us);
  }

  // A live watcher of the run (callback API), from its first event.
  std::unique_ptr<LiveWatch> Watch(const std::string& run_id, absl::Time deadline) {
    return std::make_unique<LiveWatch>(stub_, run_id, deadline);
  }

  // Whether the run reached a terminal stage (false also when GetRun fails).
  bool Ended(const std::string& run_id) {
    const std::optional<rein::v1::Run> run = GetRun(run_id);
    if (!run.has_value()) return false;
    const rein::v1::Stage stage = run->state().stage();
    return stage == rein::v1::FINISHED || stage == rein::v1::FAILED || stage == rein::v1::CANCELLED;
  }

  // The serialized size of the run's state (0 when GetRun fails).
  size_t StateBytes(const std::string& run_id) {
    const std::optional<rein::v1::Run> run = GetRun(run_id);
    return run.has_value() ? run->state().ByteSizeLong() : 0;
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

  FakePlanner& planner() { return services_.planner(); }
  const Payloads& payloads() const { return payloads_; }
  pid_t pid() const { return router_.pid(); }

 private:
  std::optional<rein::v1::Run> GetRun(const std::string& run_id) {
    rein::v1::GetRunRequest req;
    req.set_run_id(run_id);
    rein::v1::Run run;
    grpc::ClientContext ctx;
    ctx.set_deadline(In(kCallDeadline));
    if (!stub_->GetRun(&ctx, req, &run).ok()) return std::nullopt;
    return run;
  }

  // The fakes' replies name "bench"; list_files has a schema; every message size is recorded.
  static rein::bench::FakeServiceOptions FakeOptions(Payloads* payloads) {
    rein::bench::FakeServiceOptions options;
    options.name = "bench";
    options.tool_schema_json = "{\"type\":\"object\"}";
    options.payloads = payloads;
    return options;
  }

  rein::bench::ScratchDir* const dir_;
  const std::string store_;
  Payloads payloads_;
  rein::bench::FakeServices services_;
  rein::bench::RouterProcess router_;
  rein::v1::Router::Stub* stub_ = nullptr;
};

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
    rein::bench::ScratchDir dir(kTempDirPrefix);
    Bench bench(&dir, store(dir.path()), &watchdog);
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
    rein::bench::ScratchDir dir(kTempDirPrefix);
    Bench bench(&dir, store(dir.path()), &watchdog);
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
    rein::bench::ScratchDir dir(kTempDirPrefix);
    Bench bench(&dir, store(dir.path()), &watchdog);
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
