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
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "bench/bench_util.h"
#include "bench/fake_services.h"
#include "bench/router_process.h"
#include "grpcpp/grpcpp.h"
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

// The fake services and one router process in its own directory.
class Setup {
 public:
  Setup(bool gated, rein::bench::Watchdog* watchdog)
      : planner_capacity_(absl::GetFlag(FLAGS_planner_capacity),
                          absl::GetFlag(FLAGS_planner_delay)),
        executor_capacity_(absl::GetFlag(FLAGS_executor_capacity),
                           absl::GetFlag(FLAGS_executor_delay)),
        services_(FakeOptions(&planner_capacity_, &executor_capacity_)),
        router_(watchdog),
        gated_(gated) {}
  ~Setup() { router_.Stop(absl::ZeroDuration()); }

  bool Start() {
    if (dir_.path().empty() || !services_.Start()) return false;
    const int planner_limit = gated_ ? absl::GetFlag(FLAGS_planner_capacity) : 0;
    const int executor_limit = gated_ ? absl::GetFlag(FLAGS_executor_capacity) : 0;
    if (!router_.Start(absl::GetFlag(FLAGS_router_binary), dir_.path(),
                       {absl::StrCat("--store=sqlite:", dir_.path(), "/rein.db"),
                        absl::StrCat("--planner_target=", services_.planner_target()),
                        absl::StrCat("--executor_target=", services_.executor_target()),
                        absl::StrCat("--max_planner_calls=", planner_limit),
                        absl::StrCat("--max_executor_calls=", executor_limit),
                        "--shutdown_grace_seconds=1"})) {
      dir_.Keep();  // for the router's log
      return false;
    }
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
    grpc::Status s = router_.stub()->StartRun(&ctx, req, &run);
    if (!s.ok()) fprintf(stderr, "StartRun: %s\n", s.error_message().c_str());
    return s.ok() ? run.run_id() : "";
  }

  // The run's iteration times (ms), once it has ended: the gaps between its entries into
  // DECIDING from EVALUATING.
  std::vector<double> IterationTimesMs(const std::string& run_id, absl::Duration limit) {
    std::vector<double> ms = rein::bench::WatchToEnd(router_.stub(), run_id, limit).us;
    for (double& t : ms) t /= 1000;
    return ms;
  }

  int64_t planner_served() { return planner_capacity_.served(); }

 private:
  // Every call but ListTools waits for its service's capacity; the run's goal sets its length.
  static rein::bench::FakeServiceOptions FakeOptions(rein::bench::CallCapacity* planner,
                                                     rein::bench::CallCapacity* executor) {
    rein::bench::FakeServiceOptions options;
    options.planner_capacity = planner;
    options.executor_capacity = executor;
    return options;
  }

  rein::bench::ScratchDir dir_{kTempDirPrefix};
  rein::bench::CallCapacity planner_capacity_, executor_capacity_;
  rein::bench::FakeServices services_;
  rein::bench::RouterProcess router_;
  const bool gated_;
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
