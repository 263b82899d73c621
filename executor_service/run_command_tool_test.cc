// Tests of run_command under bubblewrap (real bwrap, through ToolExecutor): the escape suite
// for commands. Needs bubblewrap and user namespaces; tests run as root here.
#include "executor_service/run_command_tool.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "executor_service/testing/loopback_listener.h"
#include "executor_service/testing/temp_workspace.h"
#include "executor_service/tool_executor.h"
#include "gtest/gtest.h"

namespace rein {
namespace {

using ::rein::testing::TempWorkspace;

std::string ProbePath() {
  return absl::StrCat(std::getenv("TEST_SRCDIR"), "/rein/executor_service/testing/sandbox_probe");
}

// True when a process on the host has `needle` in its command line.
bool HostProcessWithCmdline(const std::string& needle) {
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return false;
  bool found = false;
  while (struct dirent* entry = readdir(proc)) {
    if (entry->d_name[0] < '0' || entry->d_name[0] > '9') continue;
    std::ifstream in(absl::StrCat("/proc/", entry->d_name, "/cmdline"), std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    if (absl::StrContains(text.str(), needle)) found = true;
  }
  closedir(proc);
  return found;
}

std::string UniqueSleep() {
  std::random_device random;
  return absl::StrCat("1000.", random() % 1000000 + 1000000);
}

class RunCommandTest : public ::testing::Test {
 protected:
  void SetUp() override { executor_ = MakeExecutor(SandboxOptions()); }

  std::unique_ptr<ToolExecutor> MakeExecutor(SandboxOptions sandbox) {
    ExecutorOptions options;
    options.workspace_root = temp_.root();
    options.executor_id = "test-executor";
    options.sandbox = std::move(sandbox);
    absl::StatusOr<std::unique_ptr<ToolExecutor>> executor = ToolExecutor::Create(options);
    EXPECT_TRUE(executor.ok()) << executor.status();
    if (!executor.ok()) return nullptr;
    EXPECT_EQ((*executor)->sandbox().state(), Sandbox::State::kBwrap)
        << (*executor)->SandboxDescription();
    return *std::move(executor);
  }

  ToolResult Run(const nlohmann::json& args, ToolExecutor* executor = nullptr,
                 int64_t max_output_bytes = 0) {
    ExecuteCall call;
    call.call_id = "call-1";
    call.workspace = TempWorkspace::kName;
    call.tool = args.contains("path") ? "write_file" : "run_command";
    call.args_json = args.dump();
    call.max_output_bytes = max_output_bytes;
    absl::StatusOr<ToolResult> result = (executor ? executor : executor_.get())->Execute(call);
    EXPECT_TRUE(result.ok()) << result.status();
    return result.ok() ? *result : ToolResult::Failure(result.status());
  }

  ToolResult Shell(const std::string& command, int timeout_seconds = 30) {
    return Run({{"shell", command}, {"timeout_seconds", timeout_seconds}});
  }

  void CopyProbe() {
    std::ifstream in(ProbePath(), std::ios::binary);
    ASSERT_TRUE(in.good()) << ProbePath();
    std::stringstream content;
    content << in.rdbuf();
    temp_.WriteFile("probe", content.str());
    ASSERT_EQ(chmod(temp_.Path("probe").c_str(), 0755), 0);
  }

  TempWorkspace temp_;
  std::unique_ptr<ToolExecutor> executor_;
};

TEST_F(RunCommandTest, ArgvRunsInTheWorkspaceAsAnUnprivilegedUser) {
  temp_.WriteFile("hello.txt", "hi\n");
  ToolResult result = Run({{"argv", {"sh", "-c", "cat hello.txt; pwd; id -u; echo $HOME"}}});
  ASSERT_TRUE(result.ok) << result.error_message << result.output;
  EXPECT_EQ(result.output, "hi\n/workspace\n65534\n/workspace\n");
  EXPECT_EQ(result.exit_code, 0);
}

TEST_F(RunCommandTest, CwdIsResolvedInsideTheWorkspace) {
  temp_.MakeDir("sub/dir");
  EXPECT_EQ(Run({{"shell", "pwd"}, {"cwd", "sub/dir"}}).output, "/workspace/sub/dir\n");
  EXPECT_EQ(Run({{"shell", "pwd"}, {"cwd", "../ws2"}}).error_code, "PERMISSION_DENIED");
  EXPECT_EQ(Run({{"shell", "pwd"}, {"cwd", "/etc"}}).error_code, "PERMISSION_DENIED");
  EXPECT_EQ(Run({{"shell", "pwd"}, {"cwd", "missing"}}).error_code, "NOT_FOUND");
}

TEST_F(RunCommandTest, ArgvAndShellAreExclusive) {
  EXPECT_EQ(Run({{"argv", {"true"}}, {"shell", "true"}}).error_code, "INVALID_ARGUMENT");
  EXPECT_EQ(Run(nlohmann::json::object()).error_code, "INVALID_ARGUMENT");
  EXPECT_EQ(Run({{"shell", "true"}, {"timeout_seconds", 601}}).error_code, "INVALID_ARGUMENT");
}

TEST_F(RunCommandTest, ArgumentsPastTheKernelsLimitAreInvalidNotInternal) {
  // The kernel refuses one argument of 131072 bytes or more (E2BIG).
  ToolResult result = Run({{"argv", {"true", std::string(131072, 'x')}}});
  EXPECT_EQ(result.error_code, "INVALID_ARGUMENT");
  EXPECT_TRUE(absl::StartsWith(result.error_message,
                               "args.argv[1]: must be a string of at most 131071 characters"))
      << result.error_message;
  // Fewer characters than maxLength, but more bytes.
  std::string wide;
  for (int i = 0; i < 70000; ++i) wide += "\xc3\xa9";
  result = Run({{"shell", wide}});
  EXPECT_EQ(result.error_code, "INVALID_ARGUMENT");
  EXPECT_EQ(result.error_message,
            "args.shell: must be at most 131071 bytes (the kernel's limit for one argument), "
            "got 140000");
  result = Run({{"argv", {"sh", "-c", "echo ${#1}", "sh", std::string(131071, 'x')}}});
  EXPECT_TRUE(result.ok) << result.error_message;
  EXPECT_EQ(result.output, "131071\n");
}

TEST_F(RunCommandTest, NonZeroExitIsNotATimeout) {
  ToolResult result = Shell("echo out; echo err >&2; exit 3");
  EXPECT_FALSE(result.ok);
  EXPECT_FALSE(result.timed_out);
  EXPECT_EQ(result.exit_code, 3);
  EXPECT_EQ(result.error_code, "NONZERO_EXIT");
  EXPECT_EQ(result.output, "out\nerr\n[exit status 3]\n");
}

TEST_F(RunCommandTest, InfiniteLoopIsKilledAtTheTimeout) {
  const absl::Time start = absl::Now();
  ToolResult result = Shell("while :; do :; done", /*timeout_seconds=*/1);
  EXPECT_TRUE(result.timed_out);
  EXPECT_EQ(result.error_code, "TIMEOUT");
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
}

TEST_F(RunCommandTest, BackgroundProcessesDieWithTheCall) {
  const std::string a = UniqueSleep(), b = UniqueSleep(), c = UniqueSleep();
  ToolResult result =
      Shell(absl::StrCat("sleep ", a, " & setsid nohup sleep ", b,
                         " >/dev/null 2>&1 & (sh -c 'sleep ", c, " &' &); echo started"));
  EXPECT_TRUE(result.ok) << result.output;
  EXPECT_EQ(result.output, "started\n");
  EXPECT_FALSE(HostProcessWithCmdline(a));
  EXPECT_FALSE(HostProcessWithCmdline(b));
  EXPECT_FALSE(HostProcessWithCmdline(c));
}

TEST_F(RunCommandTest, DetachedProcessesDieAtTheTimeout) {
  const std::string a = UniqueSleep(), b = UniqueSleep();
  ToolResult result =
      Shell(absl::StrCat("setsid nohup sleep ", a, " >/dev/null 2>&1 & (sh -c 'sleep ", b,
                         " &' &); sleep 100"),
            /*timeout_seconds=*/1);
  EXPECT_TRUE(result.timed_out);
  EXPECT_FALSE(HostProcessWithCmdline(a));
  EXPECT_FALSE(HostProcessWithCmdline(b));
}

TEST_F(RunCommandTest, ForkBombIsContainedAndTheExecutorStaysHealthy) {
  SandboxOptions options;
  options.max_pids = 64;
  options.limits.processes = 64;
  std::unique_ptr<ToolExecutor> small = MakeExecutor(options);
  ASSERT_NE(small, nullptr);
  const absl::Time start = absl::Now();
  // The bomb runs until the timeout; the count of the sandbox's processes stays bounded.
  ToolResult bomb = Run({{"shell", "b() { b | b & }; b; sleep 3; ls /proc | grep -c '^[0-9]'"},
                         {"timeout_seconds", 5}},
                        small.get());
  EXPECT_LT(absl::Now() - start, absl::Seconds(15));
  const size_t last_line = bomb.output.rfind('\n', bomb.output.size() - 2);
  if (!bomb.timed_out && last_line != std::string::npos) {
    EXPECT_LE(std::atoi(bomb.output.c_str() + last_line + 1), 64) << bomb.output;
  }
  ToolResult after = Shell("echo alive");
  EXPECT_TRUE(after.ok) << after.error_message;
  EXPECT_EQ(after.output, "alive\n");
}

TEST_F(RunCommandTest, NetworkIsUnreachable) {
  // A listening port on the host's loopback.
  ::rein::testing::LoopbackListener listener;
  ASSERT_NE(listener.port(), 0);
  const int port = listener.port();
  ToolResult result = Run({{"argv",
                            {"bash", "-c",
                             absl::StrCat("exec 3<>/dev/tcp/127.0.0.1/", port,
                                          " && echo CONNECTED || echo refused")}}});
  EXPECT_FALSE(absl::StrContains(result.output, "CONNECTED")) << result.output;
  EXPECT_TRUE(absl::StrContains(result.output, "refused")) << result.output;
  ToolResult dns = Shell("getent hosts example.com && echo RESOLVED || echo unresolved");
  EXPECT_EQ(dns.output, "unresolved\n");
  CopyProbe();
  EXPECT_EQ(Run({{"argv", {"./probe", "inet"}}}).output,
            "socket_inet: errno 1 (Operation not permitted)\n[exit status 1]\n");
  EXPECT_EQ(Run({{"argv", {"./probe", "inet6"}}}).output.rfind("socket_inet6: errno 1", 0), 0u);
  EXPECT_EQ(Run({{"argv", {"./probe", "netlink"}}}).output.rfind("socket_netlink: errno 1", 0), 0u);
  EXPECT_EQ(Run({{"argv", {"./probe", "unix"}}}).output.rfind("socket_unix: ok", 0), 0u);
}

TEST_F(RunCommandTest, ProcShowsOnlyTheSandboxAndNothingOfTheExecutor) {
  setenv("REIN_EXECUTOR_SECRET", "hunter2", 1);
  ToolResult result = Shell("ls /proc | grep -c '^[0-9]'; tr '\\0' '\\n' < /proc/1/environ; env");
  unsetenv("REIN_EXECUTOR_SECRET");
  ASSERT_TRUE(result.ok) << result.output;
  EXPECT_FALSE(absl::StrContains(result.output, "hunter2")) << result.output;
  EXPECT_FALSE(absl::StrContains(result.output, "TEST_SRCDIR")) << result.output;
  // bwrap's pid 1, the shell, ls/grep or tr/env: a handful, none of the host's.
  const int count = std::atoi(result.output.c_str());
  EXPECT_GE(count, 2);
  EXPECT_LE(count, 5);
}

TEST_F(RunCommandTest, NoExecutorDescriptorIsVisible) {
  // Even a descriptor opened without O_CLOEXEC stays outside.
  const int leaky = open(temp_.Path("").c_str(), O_RDONLY);
  ASSERT_GE(leaky, 0);
  ToolResult result = Shell("ls /proc/self/fd");
  close(leaky);
  // 0-2 and ls's own directory descriptor.
  EXPECT_EQ(result.output, "0\n1\n2\n3\n");
}

TEST_F(RunCommandTest, SeccompDeniesPtraceVmReadvTiocstiAndIoUring) {
  CopyProbe();
  EXPECT_EQ(Run({{"argv", {"./probe", "ptrace"}}}).output.rfind("ptrace: errno 1", 0), 0u);
  EXPECT_EQ(Run({{"argv", {"./probe", "vm_readv"}}}).output.rfind("process_vm_readv: errno 1", 0),
            0u);
  EXPECT_EQ(Run({{"argv", {"./probe", "tiocsti"}}}).output.rfind("tiocsti: errno 1", 0), 0u);
  EXPECT_EQ(Run({{"argv", {"./probe", "tiocsti_high"}}}).output.rfind("tiocsti_high: errno 1", 0),
            0u);
  EXPECT_EQ(Run({{"argv", {"./probe", "io_uring"}}}).output.rfind("io_uring_setup: errno 1", 0),
            0u);
}

TEST_F(RunCommandTest, SetuidBinaryGainsNothingAndCannotBeMade) {
  CopyProbe();
  ASSERT_EQ(chmod(temp_.Path("probe").c_str(), 04755), 0);  // set-user-ID root, by the host
  EXPECT_EQ(Run({{"argv", {"./probe", "euid"}}}).output, "euid 65534 uid 65534\n");
  ASSERT_EQ(chmod(temp_.Path("probe").c_str(), 0755), 0);
  temp_.WriteFile("plain", "x");
  EXPECT_EQ(
      Run({{"argv", {"./probe", "chmod_suid", "plain"}}}).output.rfind("chmod_suid: errno 1", 0),
      0u);
  EXPECT_EQ(
      Run({{"argv", {"./probe", "create_suid", "new"}}}).output.rfind("create_suid: errno 1", 0),
      0u);
  EXPECT_FALSE(Shell("chmod u+s plain").ok);
  struct stat st;
  ASSERT_EQ(stat(temp_.Path("plain").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 06000, 0u);
}

TEST_F(RunCommandTest, GigabyteOfOutputIsCappedWithBoundedMemory) {
  struct rusage before;
  getrusage(RUSAGE_SELF, &before);
  const absl::Time start = absl::Now();
  ToolResult result = Shell("head -c 1000000000 /dev/zero | tr '\\0' a; echo done >&2");
  EXPECT_LT(absl::Now() - start, absl::Seconds(30));
  EXPECT_TRUE(result.ok) << result.error_message;
  EXPECT_TRUE(result.truncated);
  const std::string marker = "\n[output truncated: ";
  ASSERT_TRUE(absl::StrContains(result.output, marker));
  EXPECT_EQ(result.output.find(marker), 1u << 20);
  EXPECT_EQ(result.output.substr(0, 10), "aaaaaaaaaa");
  struct rusage after;
  getrusage(RUSAGE_SELF, &after);
  EXPECT_LT(after.ru_maxrss - before.ru_maxrss, 64 << 10);  // KiB: < 64 MiB more
}

TEST_F(RunCommandTest, SmallOutputCapIsHonoured) {
  ToolResult result = Run({{"shell", "seq 1 100000"}}, nullptr, /*max_output_bytes=*/100);
  EXPECT_TRUE(result.truncated);
  EXPECT_EQ(result.output.substr(0, 8), "1\n2\n3\n4\n");
  EXPECT_TRUE(absl::StrContains(result.output, "[output truncated: "));
}

TEST_F(RunCommandTest, BinaryNulAndInvalidUtf8AreEscaped) {
  ToolResult result = Shell("printf 'a\\000b\\377c\\033[31m\\303\\251\\n'");
  EXPECT_EQ(result.output, "a\\x00b\\xffc\\x1b[31m\xc3\xa9\n");
  temp_.WriteFile(std::string("bad\xff"
                              "name"),
                  "x");
  EXPECT_EQ(Shell("ls bad*").output, "bad\\xffname\n");
}

TEST_F(RunCommandTest, ReadingDevZeroFifoAndSparseFilesIsBounded) {
  temp_.MakeFifo("fifo");
  ToolResult fifo = Shell("cat fifo", /*timeout_seconds=*/1);
  EXPECT_TRUE(fifo.timed_out);
  ToolResult zero = Shell("cat /dev/zero", /*timeout_seconds=*/2);
  EXPECT_TRUE(zero.truncated);
  temp_.WriteFile("sparse", "");
  ASSERT_EQ(truncate(temp_.Path("sparse").c_str(), 10ll << 30), 0);
  ToolResult sparse = Shell("cat sparse", /*timeout_seconds=*/2);
  EXPECT_TRUE(sparse.truncated);
}

TEST_F(RunCommandTest, AllocationOverTheAddressSpaceLimitIsStopped) {
  SandboxOptions options;
  options.limits.address_space_bytes = 128 << 20;
  std::unique_ptr<ToolExecutor> small = MakeExecutor(options);
  ASSERT_NE(small, nullptr);
  CopyProbe();
  ToolResult result = Run({{"argv", {"./probe", "alloc", "256"}}}, small.get());
  EXPECT_FALSE(result.ok);
  EXPECT_EQ(result.exit_code, 3);
  EXPECT_EQ(result.output, "alloc: failed\n[exit status 3]\n");
  EXPECT_EQ(Run({{"argv", {"./probe", "alloc", "32"}}}, small.get()).output, "alloc: ok\n");
}

TEST_F(RunCommandTest, DiskFillIsStoppedByTheFileSizeLimit) {
  SandboxOptions options;
  options.limits.file_size_bytes = 1 << 20;
  std::unique_ptr<ToolExecutor> small = MakeExecutor(options);
  ASSERT_NE(small, nullptr);
  ToolResult result =
      Run({{"shell", "head -c 100000000 /dev/zero > big; echo rc=$?"}}, small.get());
  EXPECT_TRUE(absl::StrContains(result.output, "rc=1")) << result.output;
  struct stat st;
  ASSERT_EQ(stat(temp_.Path("big").c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 1 << 20);
}

TEST_F(RunCommandTest, SystemIsReadOnlyAndTmpIsPrivate) {
  const std::string marker = absl::StrCat("/tmp/rein-host-", getpid());
  ToolResult result = Shell(absl::StrCat(
      "echo x > ", marker, " && echo tmp-ok; ", "{ echo x > /x; } 2>/dev/null || echo root-ro; ",
      "touch /usr/x 2>/dev/null || echo usr-ro; ", "touch /etc/x 2>/dev/null || echo etc-ro; ",
      "cat /etc/shadow 2>/dev/null || echo no-shadow; ",
      "ls ../ws2 2>/dev/null || echo no-sibling"));
  EXPECT_EQ(result.output, "tmp-ok\nroot-ro\nusr-ro\netc-ro\nno-shadow\nno-sibling\n");
  EXPECT_NE(access(marker.c_str(), F_OK), 0);
}

TEST_F(RunCommandTest, GitHooksAndConfigAreReadOnly) {
  temp_.WriteFile(".git/config", "[core]\n");
  temp_.WriteFile(".git/hooks/pre-commit.sample", "#!/bin/sh\n");
  temp_.WriteFile(".git/HEAD", "ref: refs/heads/main\n");
  ToolResult result = Shell(
      "{ echo evil > .git/hooks/pre-commit; } 2>/dev/null || echo hooks-ro; "
      "{ echo evil >> .git/config; } 2>/dev/null || echo config-ro; "
      "mv .git .git2 2>/dev/null || echo no-rename; "
      "rm -rf .git/hooks 2>/dev/null || echo no-rm; "
      "echo ok > .git/HEAD2 && echo git-dir-writable");
  EXPECT_EQ(result.output, "hooks-ro\nconfig-ro\nno-rename\nno-rm\ngit-dir-writable\n");
  EXPECT_NE(access(temp_.Path(".git/hooks/pre-commit").c_str(), F_OK), 0);
  std::ifstream config(temp_.Path(".git/config"));
  std::stringstream text;
  text << config.rdbuf();
  EXPECT_EQ(text.str(), "[core]\n");
}

TEST_F(RunCommandTest, MissingGitHooksAndConfigCannotBeCreated) {
  ToolResult result = Shell(
      "mkdir -p .git/hooks 2>/dev/null || echo no-git; "
      "git init -q . 2>/dev/null || echo no-init; ls -a");
  EXPECT_EQ(result.output, "no-git\nno-init\n.\n..\n.git\n");
  // The read-only placeholder is gone afterwards.
  EXPECT_NE(access(temp_.Path(".git").c_str(), F_OK), 0);
  temp_.MakeDir(".git");
  result = Shell(
      "{ echo x > .git/config; } 2>/dev/null || echo config-ro; "
      "mkdir .git/hooks 2>/dev/null || echo hooks-ro");
  EXPECT_EQ(result.output, "config-ro\nhooks-ro\n");
  EXPECT_NE(access(temp_.Path(".git/config").c_str(), F_OK), 0);
  EXPECT_NE(access(temp_.Path(".git/hooks").c_str(), F_OK), 0);
}

TEST_F(RunCommandTest, GitCommondirCannotBeCreatedAndGitStillWorks) {
  // .git/commondir would make the host's git read its config from a directory the command
  // controls (core.fsmonitor, core.hooksPath): it must not be creatable.
  temp_.WriteFile(".git/HEAD", "ref: refs/heads/main\n");
  temp_.WriteFile(".git/config", "[core]\n\trepositoryformatversion = 0\n");
  temp_.MakeDir(".git/objects");
  temp_.MakeDir(".git/refs");
  ToolResult result = Shell(
      "{ echo ../evil > .git/commondir; } 2>/dev/null || echo commondir-ro; "
      "rm -f .git/commondir 2>/dev/null || echo no-rm; "
      "git rev-parse --git-common-dir");
  // git sees the placeholder "." as the git directory itself.
  EXPECT_EQ(result.output, "commondir-ro\nno-rm\n/workspace/.git\n");
  // The placeholder is gone afterwards.
  EXPECT_NE(access(temp_.Path(".git/commondir").c_str(), F_OK), 0);
}

TEST_F(RunCommandTest, ConcurrentCommandsInOneWorkspaceAllSucceed) {
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10; ++i) {
        if (!Run({{"argv", {"true"}}}).ok) ++failures;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_NE(access(temp_.Path(".git").c_str(), F_OK), 0);  // the shared placeholder is gone
}

TEST_F(RunCommandTest, MaxConcurrentIsResourceExhausted) {
  SandboxOptions options;
  options.max_concurrent = 1;
  std::unique_ptr<ToolExecutor> one = MakeExecutor(options);
  ASSERT_NE(one, nullptr);
  std::thread slow([&] { Run({{"shell", "sleep 2"}}, one.get()); });
  absl::SleepFor(absl::Milliseconds(500));
  ExecuteCall call;
  call.call_id = "call-2";
  call.workspace = TempWorkspace::kName;
  call.tool = "run_command";
  call.args_json = R"({"shell": "true"})";
  absl::StatusOr<ToolResult> refused = one->Execute(call);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  // Read-only tools are not counted.
  call.tool = "list_files";
  call.args_json = "{}";
  EXPECT_TRUE(one->Execute(call).ok());
  slow.join();
  call.tool = "run_command";
  call.args_json = R"({"shell": "true"})";
  EXPECT_TRUE(one->Execute(call).ok());
}

TEST_F(RunCommandTest, UnavailableBwrapRefusesMutatingToolsWithAFix) {
  SandboxOptions options;
  options.bwrap_path = "/nonexistent/bwrap";
  ExecutorOptions executor_options;
  executor_options.workspace_root = temp_.root();
  executor_options.sandbox = options;
  absl::StatusOr<std::unique_ptr<ToolExecutor>> executor = ToolExecutor::Create(executor_options);
  ASSERT_TRUE(executor.ok());
  EXPECT_EQ((*executor)->sandbox().state(), Sandbox::State::kUnavailable);
  EXPECT_EQ((*executor)->SandboxDescription().rfind("unavailable: /nonexistent/bwrap", 0), 0u);
  ToolResult result = Run({{"shell", "true"}}, executor->get());
  EXPECT_EQ(result.error_code, "FAILED_PRECONDITION");
  EXPECT_TRUE(absl::StrContains(result.error_message, "--sandbox=none --allow_unsandboxed"));
  result = Run({{"path", "f"}, {"content", "x"}}, executor->get());
  EXPECT_EQ(result.error_code, "FAILED_PRECONDITION");
  EXPECT_NE(access(temp_.Path("f").c_str(), F_OK), 0);
}

TEST_F(RunCommandTest, UnsandboxedModeSaysSoInEveryMutatingReply) {
  SandboxOptions options;
  options.mode = SandboxMode::kNone;
  EXPECT_FALSE(Sandbox::Create(options).ok());  // not without allow_unsandboxed
  options.allow_unsandboxed = true;
  ExecutorOptions executor_options;
  executor_options.workspace_root = temp_.root();
  executor_options.sandbox = options;
  absl::StatusOr<std::unique_ptr<ToolExecutor>> executor = ToolExecutor::Create(executor_options);
  ASSERT_TRUE(executor.ok());
  EXPECT_EQ((*executor)->SandboxDescription().rfind("none (unsandboxed", 0), 0u);
  ToolResult result = Run({{"shell", "echo hi"}}, executor->get());
  EXPECT_EQ(result.output, absl::StrCat("hi\n", kUnsandboxedNote, "\n"));
  result = Run({{"path", "f"}, {"content", "x"}}, executor->get());
  EXPECT_TRUE(absl::StrContains(result.output, kUnsandboxedNote));
  const std::string marker = UniqueSleep();
  result = Run({{"shell", absl::StrCat("sleep ", marker, " & sleep 100")}, {"timeout_seconds", 1}},
               executor->get());
  EXPECT_TRUE(result.timed_out);
  EXPECT_FALSE(HostProcessWithCmdline(marker));
}

}  // namespace
}  // namespace rein
