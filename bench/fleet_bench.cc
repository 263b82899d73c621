// fleet_bench: figures of several routers on one PostgreSQL database, printed (never asserted):
// takeover time after a SIGKILL of a router (p50/p99 against --lease_ttl; from the kill until
// GetRun on a survivor shows the new owner), cross-router WatchRun delay (from an event's
// commit time on the driving router to its arrival at a client watching on another router) and
// review-to-resume delay (from the review's commit on one router to the owner's next commit on
// another) (p50/p99). One machine, so the routers' clocks are one clock.
//
//   bazel build //bench:fleet_bench && bazel-bin/bench/fleet_bench --lease_ttl=2s --kills=5
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "common/proto_time.h"
#include "tests/cluster.h"
#include "tests/fleet.h"

ABSL_FLAG(std::string, lease_ttl, "2s", "--lease_ttl of the routers");
ABSL_FLAG(int, kills, 5, "SIGKILLs of a router (each with --runs_per_kill runs it owns)");
ABSL_FLAG(int, runs_per_kill, 10, "paused runs the killed router owns");
ABSL_FLAG(int, reviews, 30, "runs reviewed on another router than their owner");
ABSL_FLAG(int, throughput_runs, 200,
          "runs (6 iterations each) for the throughput phase with 1 and with 3 routers; 0 = skip");

namespace {

using rein::testing::Fleet;

constexpr char kScript[] = R"({
  "plan": [
    {"when": {"completed_contains": "read"}, "reply": {"goalAchieved": true}},
    {"reply": {"subtasks": [{"id": "read", "description": "read", "allowedTools": ["read_file"]}]}}
  ],
  "decide": [{"reply": {"toolCall": {"tool": "read_file", "args": {"path": "README.md"}}}}],
  "evaluate": [{"reply": {"status": "COMPLETED", "summary": "ok"}}]
})";

rein::v1::RunSpec PausingSpec() {
  rein::v1::RunSpec spec;
  spec.set_goal("read the readme");
  spec.set_workspace("repo");
  spec.add_pause_points(rein::v1::AFTER_PLAN);
  spec.mutable_limits()->mutable_deadline()->set_seconds(600);
  return spec;
}

double Ms(absl::Duration d) { return absl::ToDoubleMilliseconds(d); }

// Five read_file steps, then the goal: 6 iterations as the router counts them (the first plan
// and 5 decide-execute-evaluate cycles; the closing plan that claims the goal ends the run).
constexpr char kThroughputScript[] = R"({
  "plan": [
    {"when": {"completed_contains": "r5"}, "reply": {"goalAchieved": true}},
    {"reply": {"subtasks": [
      {"id": "r1", "description": "read", "allowedTools": ["read_file"]},
      {"id": "r2", "description": "read", "allowedTools": ["read_file"]},
      {"id": "r3", "description": "read", "allowedTools": ["read_file"]},
      {"id": "r4", "description": "read", "allowedTools": ["read_file"]},
      {"id": "r5", "description": "read", "allowedTools": ["read_file"]}]}}
  ],
  "decide": [{"reply": {"toolCall": {"tool": "read_file", "args": {"path": "README.md"}}}}],
  "evaluate": [{"reply": {"status": "COMPLETED", "summary": "ok"}}]
})";

// User + system CPU time of a process so far (from /proc/PID/stat).
absl::Duration CpuTime(pid_t pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/stat"));
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return absl::ZeroDuration();
  std::vector<std::string> fields = absl::StrSplit(stat.substr(close + 2), ' ');
  // After "pid (comm) ": state is field 3, utime 14 and stime 15 (1-based in proc(5)).
  if (fields.size() < 13) return absl::ZeroDuration();
  const double ticks = std::stod(fields[11]) + std::stod(fields[12]);
  return absl::Seconds(ticks / sysconf(_SC_CLK_TCK));
}

// `runs` runs spread over `routers` routers on one PostgreSQL: iterations per second over the
// wall time until all finished, and the routers' CPU time per iteration.
bool Throughput(int routers, int runs) {
  char dir_template[] = "/tmp/rein-fleet-bench-XXXXXX";
  const char* dir = mkdtemp(dir_template);
  if (dir == nullptr) return false;
  chmod(dir, 0777);
  Fleet::Options options;
  options.dir = dir;
  options.routers = routers;
  options.lease_ttl = absl::GetFlag(FLAGS_lease_ttl);
  options.script_json = kThroughputScript;
  Fleet fleet(options);
  if (!fleet.Start()) {
    std::fprintf(stderr, "cannot start the fleet:\n%s\n", fleet.Logs().c_str());
    return false;
  }
  rein::v1::RunSpec spec;
  spec.set_goal("read the readme five times");
  spec.set_workspace("repo");
  spec.add_tools("read_file");
  spec.mutable_limits()->mutable_deadline()->set_seconds(600);
  absl::Duration cpu_before;
  for (int r = 0; r < routers; ++r) cpu_before += CpuTime(fleet.router(r)->pid());
  const absl::Time start = absl::Now();
  std::vector<std::pair<int, std::string>> ids;
  for (int i = 0; i < runs; ++i) {
    absl::StatusOr<rein::v1::Run> run = fleet.StartRun(i % routers, spec);
    if (run.ok()) ids.emplace_back(i % routers, run->run_id());
  }
  int64_t iterations = 0;
  int finished = 0;
  for (const auto& [router, id] : ids) {
    absl::StatusOr<rein::v1::Run> run =
        fleet.WaitForStage(router, id, rein::v1::FINISHED, absl::Minutes(5));
    if (!run.ok()) continue;
    iterations += run->state().iteration();
    finished += run->state().stage() == rein::v1::FINISHED;
  }
  const absl::Duration wall = absl::Now() - start;
  absl::Duration cpu;
  for (int r = 0; r < routers; ++r) cpu += CpuTime(fleet.router(r)->pid());
  cpu -= cpu_before;
  std::printf(
      "%d router(s) on PostgreSQL: %d/%zu runs finished, %lld iterations in %.2f s = %.0f "
      "iterations/s; router CPU %.0f us per iteration (all routers)\n",
      routers, finished, ids.size(), static_cast<long long>(iterations),
      absl::ToDoubleSeconds(wall), iterations / absl::ToDoubleSeconds(wall),
      iterations > 0 ? absl::ToDoubleMicroseconds(cpu) / iterations : 0.0);
  return true;
}

void Print(const char* name, std::vector<double> ms) {
  if (ms.empty()) {
    std::printf("%-34s no samples\n", name);
    return;
  }
  std::sort(ms.begin(), ms.end());
  auto at = [&](double q) {
    return ms[std::min(ms.size() - 1, size_t(q * (ms.size() - 1) + 0.5))];
  };
  std::printf("%-34s n=%-4zu p50=%8.1f ms  p99=%8.1f ms  max=%8.1f ms\n", name, ms.size(), at(0.5),
              at(0.99), ms.back());
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  // The binaries are this program's runfiles, found as tests find theirs.
  const std::string runfiles = absl::StrCat(argv[0], ".runfiles");
  setenv("TEST_SRCDIR", runfiles.c_str(), 0);
  setenv("TEST_WORKSPACE", "rein", 0);
  char dir_template[] = "/tmp/rein-fleet-bench-XXXXXX";
  const char* dir = mkdtemp(dir_template);
  if (dir == nullptr) return 1;
  chmod(dir, 0777);

  if (const int runs = absl::GetFlag(FLAGS_throughput_runs); runs > 0) {
    // Side by side in one invocation: the same load on one router, then on three.
    if (!Throughput(1, runs) || !Throughput(3, runs)) return 1;
  }

  Fleet::Options options;
  options.dir = dir;
  options.routers = 3;
  options.lease_ttl = absl::GetFlag(FLAGS_lease_ttl);
  options.script_json = kScript;
  Fleet fleet(options);
  if (!fleet.Start()) {
    std::fprintf(stderr, "cannot start the fleet:\n%s\n", fleet.Logs().c_str());
    return 1;
  }
  std::printf("3 routers, one PostgreSQL, --lease_ttl=%s\n", options.lease_ttl.c_str());

  // Reviews: a run driven by router-2, watched on router-0, reviewed on router-1.
  std::vector<double> watch_ms, resume_ms;
  for (int i = 0; i < absl::GetFlag(FLAGS_reviews); ++i) {
    absl::StatusOr<rein::v1::Run> run = fleet.StartRun(2, PausingSpec());
    if (!run.ok()) continue;
    absl::StatusOr<rein::v1::Run> paused =
        fleet.WaitForStage(0, run->run_id(), rein::v1::PAUSED, absl::Seconds(30));
    if (!paused.ok() || paused->state().stage() != rein::v1::PAUSED) continue;
    std::vector<std::pair<rein::v1::RunEvent, absl::Time>> seen;
    std::thread watcher([&] {
      rein::v1::WatchRunRequest request;
      request.set_run_id(run->run_id());
      request.set_after_seq(0);
      grpc::ClientContext context;
      context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(60)));
      auto reader = fleet.stub(0)->WatchRun(&context, request);
      rein::v1::RunEvent event;
      while (reader->Read(&event)) seen.emplace_back(event, absl::Now());
    });
    absl::SleepFor(absl::Milliseconds(100));  // the watcher has replayed the log
    rein::v1::ResumeRunRequest resume;
    resume.set_run_id(run->run_id());
    resume.set_expected_version(paused->state().version());
    resume.mutable_review()->mutable_approve();
    rein::v1::Run out;
    grpc::ClientContext context;
    const absl::Time live_from = absl::Now();  // events arriving from here on are live
    if (!fleet.stub(1)->ResumeRun(&context, resume, &out).ok()) {
      watcher.join();
      continue;
    }
    watcher.join();
    absl::Time review_committed = absl::InfinitePast();
    int64_t review_version = -1;
    for (const auto& [event, received] : seen) {
      const absl::Time committed = rein::FromProtoTime(event.time());
      if (received > live_from) watch_ms.push_back(Ms(received - committed));
      if (event.has_resumed()) {
        review_committed = committed;  // committed by router-1
        review_version = event.version();
      } else if (review_version >= 0 && event.version() > review_version) {
        // router-2's first commit after the review: it was woken and went on.
        resume_ms.push_back(Ms(committed - review_committed));
        review_version = -1;
      }
    }
  }
  Print("cross-router WatchRun delay", watch_ms);
  Print("review-to-resume delay", resume_ms);

  // Takeover: router-0 owns paused runs; SIGKILL it; time until another router owns each.
  std::vector<double> takeover_ms;
  for (int k = 0; k < absl::GetFlag(FLAGS_kills); ++k) {
    std::vector<std::string> ids;
    for (int i = 0; i < absl::GetFlag(FLAGS_runs_per_kill); ++i) {
      absl::StatusOr<rein::v1::Run> run = fleet.StartRun(0, PausingSpec());
      if (run.ok()) ids.push_back(run->run_id());
    }
    for (const std::string& id : ids) {
      // At most 30 s each; the takeover below is timed whether or not the run paused by then.
      fleet.WaitForStage(1, id, rein::v1::PAUSED, absl::Seconds(30)).status().IgnoreError();
    }
    absl::SleepFor(absl::Milliseconds(200));
    const absl::Time killed = absl::Now();
    fleet.router(0)->Kill(SIGKILL);
    fleet.router(0)->Wait(absl::Seconds(10));
    std::vector<bool> done(ids.size(), false);
    size_t left = ids.size();
    while (left > 0 && absl::Now() - killed < absl::Seconds(120)) {
      for (size_t i = 0; i < ids.size(); ++i) {
        if (done[i]) continue;
        absl::StatusOr<rein::v1::Run> run = fleet.GetRun(1 + i % 2, ids[i]);
        if (run.ok() && run->owner() != fleet.router_id(0)) {
          done[i] = true;
          --left;
          takeover_ms.push_back(Ms(absl::Now() - killed));
        }
      }
      absl::SleepFor(absl::Milliseconds(10));
    }
    // A fresh router-0 (a new process under the id, once the old lease has expired).
    absl::SleepFor(absl::Milliseconds(100));
    for (int attempt = 0; attempt < 50 && !fleet.StartRouter(0); ++attempt) {
      absl::SleepFor(absl::Milliseconds(200));
    }
  }
  Print("takeover after SIGKILL", takeover_ms);
  std::printf("(takeover includes the lease ttl %s: the dead router's lease must expire first)\n",
              options.lease_ttl.c_str());
  return 0;
}
