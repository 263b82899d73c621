// Benchmark: sandbox spawn latency, side by side in one run. Interleaved round-robin so that
// machine noise hits all three alike:
//  - run_command /bin/true through the real rein-executor over gRPC (as a router calls it),
//    on the default path (a fresh sandbox per command), and through a second executor with
//    --sandbox_resident (the opt-in performance mode, a resident sandbox per run, SANDBOX.md).
//    All calls of an executor belong to ONE run (run_id "bench"), the realistic case: a run
//    issues many commands, and only its first starts a resident sandbox, here during the
//    warm-up. Each executor has its own workspace (a resident sandbox's placeholders stay in
//    its workspace while it lives).
//  - bare bubblewrap: bwrap --unshare-all (minimal read-only mounts) /bin/true,
//  - fork/exec: posix_spawn /bin/true + waitpid.
// Prints a table and one `BENCH<TAB>key<TAB>value<TAB>unit` line per figure; never asserts a
// speed. Every phase has a deadline; the executor (its own process group) is killed on exit.
//   bazel build -c opt //bench:sandbox_bench //executor_service:rein-executor
//   bazel-bin/bench/sandbox_bench --executor_binary=bazel-bin/executor_service/rein-executor
//     [--quick] [--calls=200]
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "rein/v1/executor.grpc.pb.h"
#include "tests/cluster.h"

ABSL_FLAG(bool, quick, false, "a smaller run for smoke tests (30 calls of each kind)");
ABSL_FLAG(int, calls, 200, "calls of each kind (without --quick)");
ABSL_FLAG(std::string, executor_binary, "",
          "path of rein-executor; default: the one in this binary's runfiles");
ABSL_FLAG(std::string, bwrap, "/usr/bin/bwrap", "the bubblewrap binary (for the bare figure)");
ABSL_FLAG(std::string, dir, "/tmp",
          "where the scratch workspace root is made (its file system's fsync is on the path: the "
          "executor journals every mutating call)");
ABSL_FLAG(std::vector<std::string>, executor_flags, {}, "extra flags for rein-executor");
ABSL_FLAG(int, workspace_files, 0,
          "files of 4 KiB put in the workspaces first, for the snapshot before each mutating "
          "call (run_command, write_file) to copy");
ABSL_FLAG(std::string, variant_binary, "",
          "when set, a second rein-executor binary (e.g. an older build) measured in the same "
          "rounds with --executor_flags, or with --variant_flags when those are set too");
ABSL_FLAG(std::vector<std::string>, variant_flags, {},
          "when set, a second rein-executor with these flags instead of --executor_flags is "
          "measured in the same rounds (a human-readable row, no BENCH line); e.g. "
          "--variant_flags=--sandbox_cgroup=off");

extern char** environ;

namespace {

std::atomic<pid_t> executor_pgid{0};
std::atomic<pid_t> variant_pgid{0};
std::atomic<pid_t> resident_pgid{0};

[[noreturn]] void Die(const std::string& why) {
  std::fprintf(stderr, "sandbox_bench: %s\n", why.c_str());
  for (pid_t pgid : {executor_pgid.load(), variant_pgid.load(), resident_pgid.load()}) {
    if (pgid > 0) kill(-pgid, SIGKILL);
  }
  std::fflush(nullptr);
  _exit(2);
}

// Kills everything and exits when the whole benchmark overruns `limit`.
void StartWatchdog(absl::Duration limit) {
  std::thread([limit] {
    absl::SleepFor(limit);
    Die(absl::StrCat("overran its deadline of ", absl::FormatDuration(limit), "; killed"));
  }).detach();
}

// Starts `argv` in its own process group, output to `log`.
pid_t StartGroup(const std::vector<std::string>& argv, const std::string& log) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  pid_t pid = -1;
  const int err = posix_spawn(&pid, args[0], &actions, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (err != 0) Die(absl::StrCat("cannot start ", argv[0], ": ", strerror(err)));
  return pid;
}

// One posix_spawn + waitpid of `argv`; dies unless it exits 0.
absl::Duration SpawnAndWait(const std::vector<char*>& argv) {
  const absl::Time start = absl::Now();
  pid_t pid;
  if (posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ) != 0) {
    Die(absl::StrCat("posix_spawn ", argv[0], " failed"));
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  const absl::Duration took = absl::Now() - start;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    Die(absl::StrCat(argv[0], " ended with status ", status));
  }
  return took;
}

struct Figures {
  double p50_ms;
  double p99_ms;
};

// The median over rounds of a[i] / b[i]: both sides of each ratio saw the machine in the same
// state (one round is one call of each kind, back to back), so it moves less with the load of a
// shared machine than the ratio of two medians.
double MedianRatio(const std::vector<absl::Duration>& a, const std::vector<absl::Duration>& b) {
  std::vector<double> ratios;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i)
    ratios.push_back(absl::FDivDuration(a[i], b[i]));
  if (ratios.empty()) return 0;
  std::sort(ratios.begin(), ratios.end());
  return ratios[ratios.size() / 2];
}

Figures Percentiles(std::vector<absl::Duration> samples) {
  std::sort(samples.begin(), samples.end());
  auto at = [&](double q) {
    const size_t i = std::min(samples.size() - 1, static_cast<size_t>(q * samples.size()));
    return absl::ToDoubleMilliseconds(samples[i]);
  };
  return {at(0.50), at(0.99)};
}

// One rein-executor process (its own process group) and a stub to it.
struct Executor {
  pid_t pid = -1;
  std::string id;  // also the prefix of its call ids (all share one journal)
  std::string workspace = "ws";
  std::unique_ptr<rein::v1::Executor::Stub> stub;
  int next_call = 0;
};

// Starts rein-executor on `root` with `flags` and waits until it serves with a bwrap sandbox.
Executor StartExecutor(const std::string& binary, const std::string& root, const std::string& id,
                       const std::vector<std::string>& flags, std::atomic<pid_t>* pgid) {
  const std::string target = absl::StrCat("127.0.0.1:", rein::testing::FreePort());
  std::vector<std::string> argv = {binary, absl::StrCat("--listen=", target),
                                   absl::StrCat("--workspace_root=", root),
                                   absl::StrCat("--executor_id=", id), "--sandbox=bwrap"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  Executor executor;
  executor.id = id;
  executor.pid = StartGroup(argv, absl::StrCat(root, "/", id, ".log"));
  *pgid = executor.pid;
  auto channel = grpc::CreateChannel(target, grpc::InsecureChannelCredentials());
  if (!channel->WaitForConnected(absl::ToChronoTime(absl::Now() + absl::Seconds(20)))) {
    Die(absl::StrCat("the executor did not start; see ", root, "/", id, ".log"));
  }
  executor.stub = rein::v1::Executor::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
  rein::v1::ListToolsResponse tools;
  grpc::Status status = executor.stub->ListTools(&context, rein::v1::ListToolsRequest(), &tools);
  if (!status.ok()) Die(absl::StrCat("ListTools: ", status.error_message()));
  if (tools.sandbox().rfind("bwrap", 0) != 0) {
    Die(absl::StrCat("the executor has no bwrap sandbox: ", tools.sandbox()));
  }
  std::printf("%s sandbox: %s\n", id.c_str(), tools.sandbox().c_str());
  return executor;
}

// One call of `tool` with `args_json` through `executor` as call `call_id`, timed from the
// client; dies unless it succeeded.
absl::Duration TimedExecute(Executor* executor, const std::string& call_id, const std::string& tool,
                            const std::string& args_json) {
  rein::v1::ExecuteRequest request;
  request.set_call_id(call_id);
  request.set_run_id("bench");
  request.set_workspace(executor->workspace);
  request.set_tool(tool);
  request.set_args_json(args_json);
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
  rein::v1::ExecuteResponse response;
  const absl::Time start = absl::Now();
  grpc::Status status = executor->stub->Execute(&context, request, &response);
  const absl::Duration took = absl::Now() - start;
  if (!status.ok()) Die(absl::StrCat("Execute: ", status.error_message()));
  if (!response.ok()) {
    Die(absl::StrCat(tool, " failed: ", response.error().message(), " ", response.output()));
  }
  return took;
}

std::string NextCallId(Executor* executor) {
  return absl::StrCat(executor->id, "-", executor->next_call++);
}

// One run_command /bin/true through `executor`.
absl::Duration RunTrue(Executor* executor) {
  return TimedExecute(executor, NextCallId(executor), "run_command", R"({"argv": ["/bin/true"]})");
}

// One mutating write_file through `executor` (its workspace snapshot first).
absl::Duration WriteFile(Executor* executor) {
  const std::string call_id = NextCallId(executor);
  return TimedExecute(
      executor, call_id, "write_file",
      absl::StrCat(R"({"path": ")", executor->id, R"(.txt", "content": ")", call_id, R"("})"));
}

// Puts `count` files of 4 KiB into the directory `dir`.
void FillWorkspace(const std::string& dir, int count) {
  const std::string block(4096, 'x');
  for (int i = 0; i < count; ++i) {
    FILE* f = std::fopen(absl::StrCat(dir, "/file", i, ".txt").c_str(), "w");
    if (f == nullptr) Die(absl::StrCat("cannot write in ", dir));
    std::fwrite(block.data(), 1, block.size(), f);
    std::fclose(f);
  }
}

// Stops an executor: SIGTERM to its group, then SIGKILL after 5 s.
void StopExecutor(Executor* executor, std::atomic<pid_t>* pgid) {
  if (executor->pid <= 0) return;
  kill(-executor->pid, SIGTERM);
  int status;
  for (int i = 0; i < 500 && waitpid(executor->pid, &status, WNOHANG) == 0; ++i) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  kill(-executor->pid, SIGKILL);
  waitpid(executor->pid, &status, WNOHANG);
  *pgid = 0;
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const bool quick = absl::GetFlag(FLAGS_quick);
  const int calls = quick ? 30 : std::max(10, absl::GetFlag(FLAGS_calls));
  StartWatchdog(quick ? absl::Seconds(55) : absl::Seconds(60) + calls * absl::Milliseconds(900));
  signal(SIGPIPE, SIG_IGN);

  std::string root = absl::StrCat(absl::GetFlag(FLAGS_dir), "/rein-sandbox-bench-XXXXXX");
  if (mkdtemp(root.data()) == nullptr) Die(absl::StrCat("mkdtemp ", root, ": ", strerror(errno)));
  mkdir((root + "/ws").c_str(), 0755);
  mkdir((root + "/ws-resident").c_str(), 0755);
  FillWorkspace(root + "/ws", absl::GetFlag(FLAGS_workspace_files));
  FillWorkspace(root + "/ws-resident", absl::GetFlag(FLAGS_workspace_files));
  std::string executor_binary = absl::GetFlag(FLAGS_executor_binary);
  if (executor_binary.empty()) {
    executor_binary = absl::StrCat(argv[0], ".runfiles/rein/executor_service/rein-executor");
  }
  Executor executor = StartExecutor(executor_binary, root, "bench",
                                    absl::GetFlag(FLAGS_executor_flags), &executor_pgid);
  std::vector<std::string> variant_flags = absl::GetFlag(FLAGS_variant_flags);
  std::string variant_binary = absl::GetFlag(FLAGS_variant_binary);
  Executor variant;
  if (!variant_flags.empty() || !variant_binary.empty()) {
    if (variant_binary.empty()) variant_binary = executor_binary;
    if (variant_flags.empty()) variant_flags = absl::GetFlag(FLAGS_executor_flags);
    variant = StartExecutor(variant_binary, root, "variant", variant_flags, &variant_pgid);
  }

  std::vector<std::string> resident_flags = absl::GetFlag(FLAGS_executor_flags);
  resident_flags.push_back("--sandbox_resident");
  Executor resident =
      StartExecutor(executor_binary, root, "resident", resident_flags, &resident_pgid);
  resident.workspace = "ws-resident";

  const std::string bwrap_path = absl::GetFlag(FLAGS_bwrap);
  std::vector<std::string> bwrap_args = {
      bwrap_path,  "--unshare-all", "--unshare-user", "--die-with-parent",
      "--ro-bind", "/usr",          "/usr",           "--symlink",
      "usr/lib64", "/lib64",        "--symlink",      "usr/lib",
      "/lib",      "--symlink",     "usr/bin",        "/bin",
      "--proc",    "/proc",         "--dev",          "/dev",
      "/bin/true"};
  std::vector<char*> bwrap_argv;
  for (std::string& a : bwrap_args) bwrap_argv.push_back(a.data());
  bwrap_argv.push_back(nullptr);
  std::string true_path = "/bin/true";
  std::vector<char*> true_argv = {true_path.data(), nullptr};

  for (int i = 0; i < 5; ++i) {  // warm up all of them
    RunTrue(&executor);
    if (variant.stub) RunTrue(&variant);
    RunTrue(&resident);
    SpawnAndWait(bwrap_argv);
    SpawnAndWait(true_argv);
  }
  std::vector<absl::Duration> tool, other, resident_tool, bare, forkexec, write, other_write;
  for (int i = 0; i < calls; ++i) {
    tool.push_back(RunTrue(&executor));
    if (variant.stub) other.push_back(RunTrue(&variant));
    write.push_back(WriteFile(&executor));
    if (variant.stub) other_write.push_back(WriteFile(&variant));
    resident_tool.push_back(RunTrue(&resident));
    bare.push_back(SpawnAndWait(bwrap_argv));
    forkexec.push_back(SpawnAndWait(true_argv));
  }
  StopExecutor(&executor, &executor_pgid);
  StopExecutor(&variant, &variant_pgid);
  StopExecutor(&resident, &resident_pgid);

  const Figures t = Percentiles(tool), b = Percentiles(bare), f = Percentiles(forkexec);
  const Figures c = Percentiles(resident_tool);
  std::printf(
      "%d calls of each kind, interleaved, /bin/true; every call of an executor in one "
      "run\n",
      calls);
  std::printf("%-52s %9s %9s\n", "", "p50 ms", "p99 ms");
  std::printf("%-52s %9.2f %9.2f\n", "run_command (rein-executor over gRPC, default)", t.p50_ms,
              t.p99_ms);
  std::printf("%-52s %9.2f %9.2f\n", "run_command, --sandbox_resident", c.p50_ms, c.p99_ms);
  const Figures w = Percentiles(write);
  std::printf("%-52s %9.2f %9.2f\n", "write_file (mutating, snapshot first)", w.p50_ms, w.p99_ms);
  if (!other.empty()) {
    const Figures v = Percentiles(other);
    const Figures vw = Percentiles(other_write);
    std::printf("%-52s %9.2f %9.2f\n", "run_command, variant executor", v.p50_ms, v.p99_ms);
    std::printf("%-52s %9.2f %9.2f\n", "write_file, variant executor", vw.p50_ms, vw.p99_ms);
    std::printf(
        "executor / variant: run_command p50 %.2fx p99 %.2fx; write_file p50 %.2fx "
        "p99 %.2fx\n",
        t.p50_ms / v.p50_ms, t.p99_ms / v.p99_ms, w.p50_ms / vw.p50_ms, w.p99_ms / vw.p99_ms);
  }
  std::printf("%-52s %9.2f %9.2f\n", "bare bwrap --unshare-all (minimal mounts)", b.p50_ms,
              b.p99_ms);
  std::printf("%-52s %9.2f %9.2f\n", "fork/exec (posix_spawn + waitpid)", f.p50_ms, f.p99_ms);
  std::printf("run_command / bare bwrap: p50 %.2fx; run_command p99 / its p50: %.2fx\n",
              t.p50_ms / b.p50_ms, t.p99_ms / t.p50_ms);
  std::printf("resident / bare bwrap: p50 %.2fx; resident p99 / its p50: %.2fx\n",
              c.p50_ms / b.p50_ms, c.p99_ms / c.p50_ms);
  const double round_ratio = MedianRatio(tool, bare);
  std::printf(
      "median of the rounds' ratios: run_command / bare bwrap %.2fx, resident / bare bwrap "
      "%.2fx",
      round_ratio, MedianRatio(resident_tool, bare));
  if (!other.empty()) {
    std::printf(", variant / bare bwrap %.2fx, variant / run_command %.2fx",
                MedianRatio(other, bare), MedianRatio(other, tool));
  }
  std::printf("\n");
  std::printf("BENCH\tsandbox.run_command.p50\t%.3f\tms\n", t.p50_ms);
  std::printf("BENCH\tsandbox.run_command.p99\t%.3f\tms\n", t.p99_ms);
  std::printf("BENCH\tsandbox.run_command_vs_bwrap.round_median\t%.3f\tratio\n", round_ratio);
  std::printf("BENCH\tsandbox.write_file.p50\t%.3f\tms\n", w.p50_ms);
  std::printf("BENCH\tsandbox.write_file.p99\t%.3f\tms\n", w.p99_ms);
  std::printf("BENCH\tsandbox.run_command_resident.p50\t%.3f\tms\n", c.p50_ms);
  std::printf("BENCH\tsandbox.run_command_resident.p99\t%.3f\tms\n", c.p99_ms);
  std::printf("BENCH\tsandbox.bwrap.p50\t%.3f\tms\n", b.p50_ms);
  std::printf("BENCH\tsandbox.bwrap.p99\t%.3f\tms\n", b.p99_ms);
  std::printf("BENCH\tsandbox.forkexec.p50\t%.3f\tms\n", f.p50_ms);
  std::printf("BENCH\tsandbox.forkexec.p99\t%.3f\tms\n", f.p99_ms);
  std::fflush(nullptr);
  std::string cleanup = absl::StrCat("rm -rf '", root, "'");
  if (system(cleanup.c_str()) != 0) std::fprintf(stderr, "could not remove %s\n", root.c_str());
  return 0;
}
