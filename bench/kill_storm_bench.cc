// The router-kill storm: SIGKILLs the router at a random moment of runs whose one step is a
// mutating command, restarts it, and prints how many kills ended in a RECOVERY pause and how
// many ran a command twice (counted in the workspace). Compare routers with --router_binary.
//   bazel build //bench:kill_storm_bench
//   cd bazel-bin && export TEST_SRCDIR=$PWD/bench/kill_storm_bench.runfiles TEST_WORKSPACE=rein
//   bench/kill_storm_bench --kills=100 [--router_binary=/path/to/an/older/rein-router]
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "tests/cluster.h"

ABSL_FLAG(int, kills, 100, "router SIGKILLs, one per run");
ABSL_FLAG(std::string, router_binary, "", "rein-router to measure (default: the one built here)");
ABSL_FLAG(std::string, dir, "", "scratch directory (default: a new one under /tmp)");
ABSL_FLAG(double, max_kill_delay_seconds, 2.5,
          "each kill comes uniformly within this long after the run starts");

namespace {

// The command appends to runs.log (the side effect counted) and takes a second.
constexpr char kScript[] = R"({
  "plan": [{"when": {"completed_contains": "cmd"}, "reply": {"goalAchieved": true}},
           {"reply": {"subtasks": [{"id": "cmd", "description": "count", "allowedTools": ["run_command"]}]}}],
  "decide": [{"reply": {"toolCall": {"tool": "run_command",
              "args": {"shell": "echo ran >> runs.log; sleep 1; echo done", "timeout_seconds": 30}}}}],
  "evaluate": [{"when": {"action_ok": true}, "reply": {"status": "COMPLETED", "summary": "${observation}"}},
               {"reply": {"status": "FAILED", "summary": "${observation}"}}]
})";

int Lines(const std::string& text) {
  int n = 0;
  for (char c : text) n += c == '\n';
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  using rein::testing::Cluster;
  std::string dir = absl::GetFlag(FLAGS_dir);
  if (dir.empty()) {
    std::string tmpl = "/tmp/rein-kill-storm-XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) return 1;
    dir = tmpl;
  }
  mkdir(dir.c_str(), 0755);
  mkdir((dir + "/workspaces").c_str(), 0755);
  const int kills = absl::GetFlag(FLAGS_kills);
  for (int i = 0; i < kills; ++i) mkdir(absl::StrCat(dir, "/workspaces/ws-", i).c_str(), 0755);
  Cluster::Options options;
  options.dir = dir;
  options.script_json = kScript;
  options.executors = 2;
  options.executor_flags = {"--sandbox=none", "--allow_unsandboxed"};
  options.router_binary = absl::GetFlag(FLAGS_router_binary);
  Cluster cluster(options);
  if (!cluster.Start()) {
    fprintf(stderr, "cannot start the cluster:\n%s\n", cluster.Logs().c_str());
    return 1;
  }
  absl::BitGen gen;
  int recovery = 0, twice = 0, finished = 0, in_flight_at_kill = 0, other = 0;
  for (int i = 0; i < kills; ++i) {
    rein::v1::RunSpec spec;
    spec.set_goal("count");
    spec.set_workspace(absl::StrCat("ws-", i));
    spec.add_tools("run_command");
    spec.mutable_limits()->mutable_deadline()->set_seconds(120);
    absl::StatusOr<rein::v1::Run> run = cluster.StartRun(spec);
    if (!run.ok()) {
      fprintf(stderr, "StartRun: %s\n", run.status().ToString().c_str());
      return 1;
    }
    absl::SleepFor(
        absl::Seconds(absl::Uniform(gen, 0.0, absl::GetFlag(FLAGS_max_kill_delay_seconds))));
    const std::string log = absl::StrCat(dir, "/workspaces/ws-", i, "/runs.log");
    absl::StatusOr<rein::v1::Run> before = cluster.GetRun(run->run_id());
    cluster.KillRouter(SIGKILL);
    if (before.ok() && before->state().stage() == rein::v1::EXECUTING &&
        !rein::testing::ReadFile(log).empty()) {
      ++in_flight_at_kill;  // the command had started and its result was not committed
    }
    if (!cluster.StartRouter()) {
      fprintf(stderr, "router restart failed:\n%s\n", cluster.Logs().c_str());
      return 1;
    }
    absl::StatusOr<rein::v1::Run> end =
        cluster.WaitForStage(run->run_id(), rein::v1::PAUSED, absl::Seconds(60));
    if (!end.ok()) {
      fprintf(stderr, "GetRun: %s\n", end.status().ToString().c_str());
      return 1;
    }
    if (end->state().stage() == rein::v1::PAUSED &&
        end->state().pause().reason() == rein::v1::RECOVERY) {
      ++recovery;
    } else if (end->state().stage() == rein::v1::FINISHED) {
      ++finished;
    } else {
      ++other;
    }
    if (Lines(rein::testing::ReadFile(log)) > 1) ++twice;
  }
  printf("router kills:                          %d\n", kills);
  printf("  with the command started, uncommitted: %d\n", in_flight_at_kill);
  printf("RECOVERY pauses:                       %d  (%.0f per 100 kills)\n", recovery,
         100.0 * recovery / kills);
  printf("runs finished without a person:        %d\n", finished);
  printf("runs otherwise (failed, other pause):  %d\n", other);
  printf("commands run twice (runs.log):         %d\n", twice);
  return 0;
}
