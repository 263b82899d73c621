// child_bench: child runs against the real router, scripted planner and executor on loopback.
// (1) Wall time of one parent fanning out to --width children (each audits one service in
// parallel, then the parent writes the report) beside the same subtasks done serially by one
// run, every planner reply taking --delay_ms; --rounds alternated. (2) The router's CPU per
// iteration with --parents parents of --width children each beside parents x width plain runs
// doing a child's work, replies instant.
//   bazel run //bench:child_bench -- [--delay_ms=800] [--rounds=3] [--parents=100] [--width=4]
//     [--cpu_rounds=3]
#include <stdlib.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "bench/bench_util.h"
#include "tests/child_scripts.h"
#include "tests/cluster.h"
#include "tests/repo_cluster.h"

ABSL_FLAG(int, delay_ms, 800, "every planner reply's delay in the wall-time measurement");
ABSL_FLAG(int, fan_out, 3, "children of the wall-time measurement's parent (1..4)");
ABSL_FLAG(int, rounds, 3, "wall-time rounds, fan-out and serial alternated");
ABSL_FLAG(int, parents, 100, "parents of the CPU measurement (0: skip it)");
ABSL_FLAG(int, cpu_rounds, 3, "CPU rounds, plain runs and trees alternated");
ABSL_FLAG(int, width, 4, "children per parent of the CPU measurement (1..4)");
ABSL_FLAG(std::string, dir, "", "scratch directory (default: a new one under /tmp)");

namespace {

using rein::testing::Cluster;
using RunMsg = rein::v1::Run;

bool Terminal(rein::v1::Stage s) {
  return s == rein::v1::FINISHED || s == rein::v1::FAILED || s == rein::v1::CANCELLED;
}

std::unique_ptr<Cluster> Boot(const std::string& dir, const std::string& script) {
  std::unique_ptr<Cluster> cluster =
      rein::testing::RepoClusterAt(dir, script, {{"README.md", rein::testing::kRepoReadme}});
  if (!cluster->Start()) {
    fprintf(stderr, "child_bench: the services did not start\n%s\n", cluster->Logs().c_str());
    exit(1);
  }
  return cluster;
}

rein::v1::RunSpec Spec(const std::string& goal, int children) {
  rein::v1::RunSpec spec = rein::testing::RepoSpec(goal, /*deadline_seconds=*/600);
  spec.mutable_limits()->set_max_children(children);
  return spec;
}

// Waits until every run in `ids` has ended (one GetRun at a time, so the waiting costs the
// router little); returns them; exits when one did not finish with its goal achieved.
std::vector<RunMsg> WaitAll(Cluster& cluster, const std::vector<std::string>& ids) {
  std::vector<RunMsg> out;
  const absl::Time until = absl::Now() + absl::Minutes(20);
  for (const std::string& id : ids) {
    while (true) {
      absl::StatusOr<RunMsg> run = cluster.GetRun(id);
      if (run.ok() && Terminal(run->state().stage())) {
        if (run->state().stage() != rein::v1::FINISHED) {
          fprintf(stderr, "child_bench: run %s ended %s: %s\n", id.c_str(),
                  rein::v1::Stage_Name(run->state().stage()).c_str(),
                  run->state().outcome().message().c_str());
          exit(1);
        }
        out.push_back(*run);
        break;
      }
      if (absl::Now() > until) {
        fprintf(stderr, "child_bench: run %s did not end\n", id.c_str());
        exit(3);
      }
      absl::SleepFor(absl::Milliseconds(50));
    }
  }
  return out;
}

std::string Start(Cluster& cluster, const rein::v1::RunSpec& spec) {
  absl::StatusOr<RunMsg> run = cluster.StartRun(spec);
  if (!run.ok()) {
    fprintf(stderr, "child_bench: StartRun: %s\n", run.status().ToString().c_str());
    exit(1);
  }
  return run->run_id();
}

void WallTime(const std::string& dir) {
  const int width = absl::GetFlag(FLAGS_fan_out), delay = absl::GetFlag(FLAGS_delay_ms);
  std::unique_ptr<Cluster> cluster = Boot(dir + "/wall", rein::testing::TreeScript(width, delay));
  std::vector<double> fan, serial;
  for (int round = 0; round < absl::GetFlag(FLAGS_rounds); ++round) {
    for (bool fan_out : {true, false}) {
      const absl::Time t0 = absl::Now();
      const std::string goal = absl::StrCat(fan_out ? "" : "serially: ", "audit ", width,
                                            " services, then write one report");
      WaitAll(*cluster, {Start(*cluster, Spec(goal, fan_out ? width : 0))});
      (fan_out ? fan : serial).push_back(absl::ToDoubleSeconds(absl::Now() - t0));
    }
  }
  const double f = rein::bench::Percentile(fan, 0.5), s = rein::bench::Percentile(serial, 0.5);
  printf(
      "%d subtasks, every reply %d ms, %zu rounds: fan-out %.2f s (min %.2f), serial %.2f s "
      "(min %.2f), %.2fx\n",
      width, delay, fan.size(), f, *std::min_element(fan.begin(), fan.end()), s,
      *std::min_element(serial.begin(), serial.end()), s / f);
  rein::bench::PrintBench("children.fan_out_wall_s", f, "s");
  rein::bench::PrintBench("children.serial_wall_s", s, "s");
}

// Starts `runs` runs at once and returns the router's CPU per iteration of them all (the
// parents' iterations hold their children's after the join).
double CpuPerIteration(Cluster& cluster, const std::string& goal, int runs, int children,
                       int* iterations) {
  const pid_t pid = cluster.router_process()->pid();
  const absl::Duration cpu0 = rein::bench::CpuTime(pid);
  std::vector<std::string> ids;
  for (int i = 0; i < runs; ++i) ids.push_back(Start(cluster, Spec(goal, children)));
  *iterations = 0;
  for (const RunMsg& run : WaitAll(cluster, ids)) *iterations += run.state().iteration();
  return absl::ToDoubleMicroseconds(rein::bench::CpuTime(pid) - cpu0) / *iterations;
}

void Cpu(const std::string& dir) {
  const int parents = absl::GetFlag(FLAGS_parents), width = absl::GetFlag(FLAGS_width);
  std::unique_ptr<Cluster> cluster = Boot(dir + "/cpu", rein::testing::TreeScript(width, 0));
  std::vector<double> plain, tree;
  for (int round = 0; round < absl::GetFlag(FLAGS_cpu_rounds); ++round) {
    int plain_its = 0, tree_its = 0;
    plain.push_back(CpuPerIteration(*cluster, "audit service 1", parents * width, 0, &plain_its));
    tree.push_back(
        CpuPerIteration(*cluster, absl::StrCat("audit ", width, " services, then write one report"),
                        parents, width, &tree_its));
    printf(
        "round %d: router CPU per iteration: %d plain runs %.0f us (%d iterations), %d "
        "parents of %d children %.0f us (%d iterations)\n",
        round + 1, parents * width, plain.back(), plain_its, parents, width, tree.back(), tree_its);
  }
  rein::bench::PrintBench("children.plain_cpu_per_it", rein::bench::Percentile(plain, 0.5), "us");
  rein::bench::PrintBench("children.tree_cpu_per_it", rein::bench::Percentile(tree, 0.5), "us");
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  std::string dir = absl::GetFlag(FLAGS_dir);
  if (dir.empty()) {
    std::string tmpl = "/tmp/rein-child-bench-XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) return 1;
    dir = tmpl;
  }
  if (absl::GetFlag(FLAGS_rounds) > 0) WallTime(dir);
  if (absl::GetFlag(FLAGS_parents) > 0) Cpu(dir);
  return 0;
}
