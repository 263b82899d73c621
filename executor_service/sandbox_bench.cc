// Benchmark: run_command spawn latency (p50/p99) next to plain fork/exec and plain bwrap, and
// sandboxed commands per second at a given concurrency. Prints a table; not a test.
//   bazel run -c opt //executor_service:sandbox_bench -- [calls] [seconds_per_concurrency]
#include <spawn.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "executor_service/tool_executor.h"

extern char** environ;

namespace rein {
namespace {

struct Figures {
  double p50_ms;
  double p99_ms;
};

Figures Percentiles(std::vector<absl::Duration> samples) {
  std::sort(samples.begin(), samples.end());
  auto at = [&](double q) {
    const size_t i = std::min(samples.size() - 1, static_cast<size_t>(q * samples.size()));
    return absl::ToDoubleMilliseconds(samples[i]);
  };
  return {at(0.50), at(0.99)};
}

absl::Duration SpawnAndWait(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const std::string& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  const absl::Time start = absl::Now();
  pid_t pid;
  if (posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ) != 0) {
    std::fprintf(stderr, "posix_spawn %s failed\n", argv[0]);
    std::exit(1);
  }
  int status;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "%s exited with status %d\n", argv[0], status);
    std::exit(1);
  }
  return absl::Now() - start;
}

Figures Measure(int calls, const std::function<absl::Duration()>& once) {
  for (int i = 0; i < 5; ++i) once();  // warm up
  std::vector<absl::Duration> samples;
  for (int i = 0; i < calls; ++i) samples.push_back(once());
  return Percentiles(samples);
}

ExecuteCall TrueCall() {
  ExecuteCall call;
  call.call_id = "bench-1";
  call.workspace = "ws";
  call.tool = "run_command";
  call.args_json = R"({"argv": ["/bin/true"]})";
  return call;
}

int Main(int argc, char** argv) {
  const int calls = argc > 1 ? std::max(10, std::atoi(argv[1])) : 200;
  const double seconds = argc > 2 ? std::max(1.0, std::atof(argv[2])) : 5.0;
  char root_template[] = "/tmp/rein-bench-XXXXXX";
  if (mkdtemp(root_template) == nullptr) return 1;
  const std::string root = root_template;
  mkdir((root + "/ws").c_str(), 0755);

  ExecutorOptions options;
  options.workspace_root = root;
  options.executor_id = "bench";
  options.sandbox.max_concurrent = 64;
  absl::StatusOr<std::unique_ptr<ToolExecutor>> executor = ToolExecutor::Create(options);
  if (!executor.ok() || (*executor)->sandbox().state() != Sandbox::State::kBwrap) {
    std::fprintf(stderr, "no sandbox: %s\n",
                 executor.ok() ? (*executor)->SandboxDescription().c_str()
                               : std::string(executor.status().message()).c_str());
    return 1;
  }
  std::printf("sandbox: %s\n", (*executor)->SandboxDescription().c_str());
  std::printf("%d calls each, /bin/true\n\n%-50s %9s %9s\n", calls, "", "p50 ms", "p99 ms");

  const Figures plain = Measure(calls, [] { return SpawnAndWait({"/bin/true"}); });
  std::printf("%-50s %9.2f %9.2f\n", "fork/exec (posix_spawn + waitpid)", plain.p50_ms,
              plain.p99_ms);
  const Figures bwrap = Measure(calls, [] {
    return SpawnAndWait({"/usr/bin/bwrap", "--unshare-all", "--unshare-user", "--die-with-parent",
                         "--ro-bind",      "/usr",          "/usr",           "--symlink",
                         "usr/lib64",      "/lib64",        "--symlink",      "usr/lib",
                         "/lib",           "--symlink",     "usr/bin",        "/bin",
                         "--proc",         "/proc",         "--dev",          "/dev",
                         "/bin/true"});
  });
  std::printf("%-50s %9.2f %9.2f\n", "plain bwrap --unshare-all (minimal mounts)", bwrap.p50_ms,
              bwrap.p99_ms);
  const ToolExecutor* exec = executor->get();
  const Figures tool = Measure(calls, [exec] {
    const absl::Time start = absl::Now();
    absl::StatusOr<ToolResult> result = exec->Execute(TrueCall());
    if (!result.ok() || !result->ok) {
      std::fprintf(stderr, "run_command failed: %s\n",
                   result.ok() ? result->error_message.c_str()
                               : std::string(result.status().message()).c_str());
      std::exit(1);
    }
    return absl::Now() - start;
  });
  std::printf("%-50s %9.2f %9.2f\n", "run_command (ToolExecutor::Execute, full sandbox)",
              tool.p50_ms, tool.p99_ms);

  {
    ExecutorOptions no_cgroup = options;
    no_cgroup.sandbox.cgroup = "off";
    absl::StatusOr<std::unique_ptr<ToolExecutor>> lean = ToolExecutor::Create(no_cgroup);
    if (!lean.ok()) return 1;
    const ToolExecutor* lean_exec = lean->get();
    const Figures without = Measure(calls, [lean_exec] {
      const absl::Time start = absl::Now();
      absl::StatusOr<ToolResult> result = lean_exec->Execute(TrueCall());
      if (!result.ok() || !result->ok) std::exit(1);
      return absl::Now() - start;
    });
    std::printf("%-50s %9.2f %9.2f\n", "run_command without the pids cgroup", without.p50_ms,
                without.p99_ms);
  }
  std::printf("\n%-50s %9s\n", "concurrency (= --max_concurrent)", "cmds/s");
  for (int concurrency : {2, 8}) {
    ExecutorOptions limited = options;
    limited.sandbox.max_concurrent = concurrency;
    absl::StatusOr<std::unique_ptr<ToolExecutor>> bounded = ToolExecutor::Create(limited);
    if (!bounded.ok()) return 1;
    std::atomic<int64_t> done{0};
    std::atomic<int64_t> refused{0};
    const absl::Time until = absl::Now() + absl::Seconds(seconds);
    const absl::Time start = absl::Now();
    std::vector<std::thread> threads;
    for (int t = 0; t < concurrency; ++t) {
      threads.emplace_back([&] {
        while (absl::Now() < until) {
          absl::StatusOr<ToolResult> result = (*bounded)->Execute(TrueCall());
          if (result.ok() && result->ok) {
            ++done;
          } else {
            if (refused.fetch_add(1) == 0) {
              std::fprintf(stderr, "failed: %s\n",
                           result.ok() ? (result->error_message + " " + result->output).c_str()
                                       : std::string(result.status().message()).c_str());
            }
          }
        }
      });
    }
    for (std::thread& thread : threads) thread.join();
    const double elapsed = absl::ToDoubleSeconds(absl::Now() - start);
    std::printf("%-50d %9.1f%s\n", concurrency, static_cast<double>(done.load()) / elapsed,
                refused > 0 ? absl::StrCat("  (", refused.load(), " refused)").c_str() : "");
  }
  rmdir((root + "/ws").c_str());
  rmdir(root.c_str());
  return 0;
}

}  // namespace
}  // namespace rein

int main(int argc, char** argv) { return rein::Main(argc, argv); }
