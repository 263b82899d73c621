// Tests of run_command under bubblewrap (real bwrap, through ToolExecutor): the escape suite
// for commands. Needs bubblewrap and user namespaces; tests run as root here.
#include "executor_service/tools/run_command_tool.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "executor_service/testing/host_processes.h"
#include "executor_service/testing/loopback_listener.h"
#include "executor_service/testing/temp_workspace.h"
#include "executor_service/tool_executor.h"
#include "gtest/gtest.h"
#ifdef REIN_HOSTILE_WORKSPACE
// The security suite's build of this file (tests/security/BUILD): every workspace also holds
// a 10 GB sparse file with a hard link (and, when REIN_HOSTILE_WORKSPACE is 2, a tree 30,000
// directories deep), and every mutating call is snapshotted first, as by default.
#include "executor_service/testing/hostile_tree.h"
#include "executor_service/workspace/tree_copy.h"
#include "executor_service/workspace/workspace_history.h"
#endif

namespace rein {
namespace {

using ::rein::testing::HostProcessWithCmdline;
using ::rein::testing::TempWorkspace;

std::string InitPath() {
  return absl::StrCat(std::getenv("TEST_SRCDIR"), "/rein/executor_service/rein-sandbox-init");
}

std::string ProbePath() {
  return absl::StrCat(std::getenv("TEST_SRCDIR"), "/rein/executor_service/testing/sandbox_probe");
}

// The owner, group, mode and (but for devices, which host processes use) modification time of
// host paths, taken at construction. Changed() names those that differ now and puts a changed
// mode back, so that a failing test leaves the host as it was.
class HostInodes {
 public:
  explicit HostInodes(std::vector<std::string> paths) : paths_(std::move(paths)) {
    for (const std::string& path : paths_) {
      struct stat st;
      EXPECT_EQ(stat(path.c_str(), &st), 0) << path;
      before_.push_back(st);
    }
  }

  std::string Changed() const {
    std::string changed;
    for (size_t i = 0; i < paths_.size(); ++i) {
      const struct stat& was = before_[i];
      struct stat now;
      if (stat(paths_[i].c_str(), &now) != 0 || now.st_mode != was.st_mode ||
          now.st_uid != was.st_uid || now.st_gid != was.st_gid ||
          (!S_ISCHR(was.st_mode) && now.st_mtim.tv_sec != was.st_mtim.tv_sec)) {
        absl::StrAppend(&changed, paths_[i], " ");
        if (now.st_mode != was.st_mode) chmod(paths_[i].c_str(), was.st_mode & 07777);
      }
    }
    return changed;
  }

 private:
  std::vector<std::string> paths_;
  std::vector<struct stat> before_;
};

std::string UniqueSleep() {
  std::random_device random;
  return absl::StrCat("1000.", random() % 1000000 + 1000000);
}

// Every test runs twice: each command in a sandbox of its own (cold), and the commands of the
// run in its resident sandbox (SANDBOX.md, "Resident sandbox"), which must hold the same.
class RunCommandTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
#ifdef REIN_HOSTILE_WORKSPACE
    const std::string ws = temp_.Path("");
    ASSERT_TRUE(testing::MakeSparseFile(ws + "/sparse.img", int64_t{10} * 1000 * 1000 * 1000).ok());
    ASSERT_EQ(link((ws + "/sparse.img").c_str(), (ws + "/sparse.link").c_str()), 0);
    if (REIN_HOSTILE_WORKSPACE == 2) {
      ASSERT_EQ(mkdir((ws + "/deep").c_str(), 0755), 0);
      ASSERT_TRUE(testing::MakeDeepTree(ws + "/deep", 30000).ok());
    }
    history_ = std::make_unique<WorkspaceHistory>(temp_.root(), /*retention=*/16);
#endif
    executor_ = MakeExecutor(SandboxOptions());
  }

#ifdef REIN_HOSTILE_WORKSPACE
  void TearDown() override {
    executor_.reset();
    EXPECT_TRUE(RemoveTree(temp_.root()).ok());  // the tmpfs holds every test's workspace
  }
  std::unique_ptr<WorkspaceHistory> history_;
#endif

  bool resident() const { return GetParam(); }

  // A resident sandbox keeps its placeholders in the workspace while it lives: the run ends
  // here, and this waits until it is gone.
  void EndRun() {
    if (!resident()) return;
    ASSERT_TRUE(executor_->ForgetRun("run-1").ok());
    const absl::Time until = absl::Now() + absl::Seconds(10);
    while (executor_->sandbox().ResidentCount() > 0 && absl::Now() < until) {
      absl::SleepFor(absl::Milliseconds(10));
    }
    ASSERT_EQ(executor_->sandbox().ResidentCount(), 0u);
    absl::SleepFor(absl::Milliseconds(50));  // its teardown ends just after it is counted out
  }

  std::unique_ptr<ToolExecutor> MakeExecutor(SandboxOptions sandbox) {
    if (resident()) {
      sandbox.resident = true;
      sandbox.init_binary = InitPath();
    }
    ExecutorOptions options;
    options.workspace_root = temp_.root();
    options.executor_id = "test-executor";
    options.sandbox = std::move(sandbox);
#ifdef REIN_HOSTILE_WORKSPACE
    options.history = history_.get();
#endif
    absl::StatusOr<std::unique_ptr<ToolExecutor>> executor = ToolExecutor::Create(options);
    EXPECT_TRUE(executor.ok()) << executor.status();
    if (!executor.ok()) return nullptr;
    EXPECT_EQ((*executor)->sandbox().state(), Sandbox::State::kBwrap)
        << (*executor)->SandboxDescription();
    return *std::move(executor);
  }

  ToolResult Run(const nlohmann::json& args, ToolExecutor* executor = nullptr,
                 int64_t max_output_bytes = 0, const std::string& run_id = "run-1") {
    ExecuteCall call;
    call.call_id = absl::StrCat("call-", ++calls_);
    call.run_id = run_id;
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

  // Copied by a cp of its own: a descriptor this process held open for writing would be in the
  // copy a spawner forked meanwhile takes of our descriptors until it closes them, and the
  // probe's exec would then fail with ETXTBSY (seen once in CI, in the resident mode).
  void CopyProbe() {
    const std::string from = ProbePath();
    const std::string to = temp_.Path("probe");
    const char* argv[] = {"cp", from.c_str(), to.c_str(), nullptr};
    pid_t pid = -1;
    ASSERT_EQ(posix_spawn(&pid, "/bin/cp", nullptr, nullptr, const_cast<char**>(argv), environ), 0);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << from;
    ASSERT_EQ(chmod(to.c_str(), 0755), 0);
  }

  TempWorkspace temp_;
  std::atomic<int> calls_{0};
  std::unique_ptr<ToolExecutor> executor_;
};

INSTANTIATE_TEST_SUITE_P(ColdAndResident, RunCommandTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "Resident" : "Cold";
                         });

TEST_P(RunCommandTest, ArgvRunsInTheWorkspaceAsAnUnprivilegedUser) {
  temp_.WriteFile("hello.txt", "hi\n");
  ToolResult result = Run({{"argv", {"sh", "-c", "cat hello.txt; pwd; id -u; echo $HOME"}}});
  ASSERT_TRUE(result.ok) << result.error_message << result.output;
  EXPECT_EQ(result.output, "hi\n/workspace\n65534\n/workspace\n");
  EXPECT_EQ(result.exit_code, 0);
}

TEST_P(RunCommandTest, CwdIsResolvedInsideTheWorkspace) {
  temp_.MakeDir("sub/dir");
  EXPECT_EQ(Run({{"shell", "pwd"}, {"cwd", "sub/dir"}}).output, "/workspace/sub/dir\n");
  EXPECT_EQ(Run({{"shell", "pwd"}, {"cwd", "../ws2"}}).error_code, "PERMISSION_DENIED");
  EXPECT_EQ(Run({{"shell", "pwd"}, {"cwd", "/etc"}}).error_code, "PERMISSION_DENIED");
  EXPECT_EQ(Run({{"shell", "pwd"}, {"cwd", "missing"}}).error_code, "NOT_FOUND");
}

TEST_P(RunCommandTest, ArgvAndShellAreExclusive) {
  EXPECT_EQ(Run({{"argv", {"true"}}, {"shell", "true"}}).error_code, "INVALID_ARGUMENT");
  EXPECT_EQ(Run(nlohmann::json::object()).error_code, "INVALID_ARGUMENT");
  EXPECT_EQ(Run({{"shell", "true"}, {"timeout_seconds", 601}}).error_code, "INVALID_ARGUMENT");
}

TEST_P(RunCommandTest, ArgumentsPastTheKernelsLimitAreInvalidNotInternal) {
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

TEST_P(RunCommandTest, NonZeroExitIsNotATimeout) {
  ToolResult result = Shell("echo out; echo err >&2; exit 3");
  EXPECT_FALSE(result.ok);
  EXPECT_FALSE(result.timed_out);
  EXPECT_EQ(result.exit_code, 3);
  EXPECT_EQ(result.error_code, "NONZERO_EXIT");
  EXPECT_EQ(result.output, "out\nerr\n[exit status 3]\n");
}

TEST_P(RunCommandTest, InfiniteLoopIsKilledAtTheTimeout) {
  const absl::Time start = absl::Now();
  ToolResult result = Shell("while :; do :; done", /*timeout_seconds=*/1);
  EXPECT_TRUE(result.timed_out);
  EXPECT_EQ(result.error_code, "TIMEOUT");
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
}

TEST_P(RunCommandTest, BackgroundProcessesDieWithTheCall) {
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

TEST_P(RunCommandTest, DetachedProcessesDieAtTheTimeout) {
  const std::string a = UniqueSleep(), b = UniqueSleep();
  ToolResult result =
      Shell(absl::StrCat("setsid nohup sleep ", a, " >/dev/null 2>&1 & (sh -c 'sleep ", b,
                         " &' &); sleep 100"),
            /*timeout_seconds=*/1);
  EXPECT_TRUE(result.timed_out);
  EXPECT_FALSE(HostProcessWithCmdline(a));
  EXPECT_FALSE(HostProcessWithCmdline(b));
}

TEST_P(RunCommandTest, ForkBombIsContainedAndTheExecutorStaysHealthy) {
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

TEST_P(RunCommandTest, NetworkIsUnreachable) {
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

TEST_P(RunCommandTest, ProcShowsOnlyTheSandboxAndNothingOfTheExecutor) {
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

TEST_P(RunCommandTest, NoExecutorDescriptorIsVisible) {
  // Even a descriptor opened without O_CLOEXEC stays outside.
  const int leaky = open(temp_.Path("").c_str(), O_RDONLY);
  ASSERT_GE(leaky, 0);
  ToolResult result = Shell("ls /proc/self/fd");
  close(leaky);
  // 0-2 and ls's own directory descriptor.
  EXPECT_EQ(result.output, "0\n1\n2\n3\n");
}

TEST_P(RunCommandTest, SeccompDeniesPtraceVmReadvTiocstiAndIoUring) {
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

TEST_P(RunCommandTest, SetuidBinaryGainsNothingAndCannotBeMade) {
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

TEST_P(RunCommandTest, GigabyteOfOutputIsCappedWithBoundedMemory) {
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

TEST_P(RunCommandTest, SmallOutputCapIsHonoured) {
  ToolResult result = Run({{"shell", "seq 1 100000"}}, nullptr, /*max_output_bytes=*/100);
  EXPECT_TRUE(result.truncated);
  EXPECT_EQ(result.output.substr(0, 8), "1\n2\n3\n4\n");
  EXPECT_TRUE(absl::StrContains(result.output, "[output truncated: "));
}

TEST_P(RunCommandTest, BinaryNulAndInvalidUtf8AreEscaped) {
  ToolResult result = Shell("printf 'a\\000b\\377c\\033[31m\\303\\251\\n'");
  EXPECT_EQ(result.output, "a\\x00b\\xffc\\x1b[31m\xc3\xa9\n");
  temp_.WriteFile(std::string("bad\xff"
                              "name"),
                  "x");
  EXPECT_EQ(Shell("ls bad*").output, "bad\\xffname\n");
}

TEST_P(RunCommandTest, ReadingDevZeroFifoAndSparseFilesIsBounded) {
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

TEST_P(RunCommandTest, AllocationOverTheAddressSpaceLimitIsStopped) {
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

TEST_P(RunCommandTest, DiskFillIsStoppedByTheFileSizeLimit) {
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

TEST_P(RunCommandTest, SystemIsReadOnlyAndTmpIsPrivate) {
  const std::string marker = absl::StrCat("/tmp/rein-host-", getpid());
  ToolResult result = Shell(absl::StrCat(
      "echo x > ", marker, " && echo tmp-ok; ", "{ echo x > /x; } 2>/dev/null || echo root-ro; ",
      "touch /usr/x 2>/dev/null || echo usr-ro; ", "touch /etc/x 2>/dev/null || echo etc-ro; ",
      "cat /etc/shadow 2>/dev/null || echo no-shadow; ",
      "ls ../ws2 2>/dev/null || echo no-sibling"));
  EXPECT_EQ(result.output, "tmp-ok\nroot-ro\nusr-ro\netc-ro\nno-shadow\nno-sibling\n");
  EXPECT_NE(access(marker.c_str(), F_OK), 0);
}

// bubblewrap's --dev binds the host's /dev/null, /dev/zero, ... and maps the command's uid to the
// executor's host uid: when that uid owns them (root), the executor binds nodes of its own over
// them (SANDBOX.md, "/dev"). Whatever the executor's uid, a command cannot change the host's.
TEST_P(RunCommandTest, HostDeviceNodesCannotBeChanged) {
  const HostInodes host({"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom",
                         "/dev/tty", "/dev/pts/ptmx", "/dev/ptmx", "/dev/shm"});
  ToolResult result = Shell(
      "for n in null zero full random urandom tty; do "
      "for m in 000 600 666; do chmod $m /dev/$n 2>/dev/null && echo chmod-$m-$n; done; "
      "chown 0:0 /dev/$n 2>/dev/null && echo chown-$n; "
      "touch -d 2000-01-01 /dev/$n 2>/dev/null && echo touch-$n; done; "
      "chmod 000 /dev/pts/ptmx /dev/shm 2>/dev/null; chmod 777 /dev/ptmx 2>/dev/null; "
      "echo x > /dev/null && head -c 3 /dev/zero | wc -c && head -c 3 /dev/urandom | wc -c && "
      "{ echo x > /dev/full; } 2>/dev/null || echo full");
  EXPECT_EQ(host.Changed(), "");
  EXPECT_EQ(result.output, "3\n3\nfull\n");
  // The next command (in the resident sandbox: the same one) finds them as they were.
  ToolResult next = Shell(
      "stat -c '%n %a %F %t:%T' /dev/null /dev/zero /dev/full /dev/random /dev/urandom /dev/tty");
  EXPECT_EQ(next.output,
            "/dev/null 666 character special file 1:3\n/dev/zero 666 character special file 1:5\n"
            "/dev/full 666 character special file 1:7\n"
            "/dev/random 666 character special file 1:8\n"
            "/dev/urandom 666 character special file 1:9\n"
            "/dev/tty 666 character special file 5:0\n");
}

// The other host inodes a command can reach (the staged /etc, the system, the resident's init
// binary, the root and the workspace's parent) are behind read-only mounts: owning them through
// the uid mapping (a root executor) lets a command change none of them.
TEST_P(RunCommandTest, HostInodesOutsideTheWorkspaceCannotBeChanged) {
  const HostInodes host({"/etc/ld.so.cache", "/usr/bin/env", "/usr", "/bin", InitPath()});
  ToolResult result = Shell(
      "for p in /etc/ld.so.cache /etc/passwd /etc /usr/bin/env /usr /bin / /workspace/.. "
      "/.rein-sandbox-init; do [ -e $p ] || continue; "
      "chmod 700 $p 2>/dev/null && echo chmod-$p; chown 65534:65534 $p 2>/dev/null && "
      "echo chown-$p; touch -d 2000-01-01 $p 2>/dev/null && echo touch-$p; done; echo done");
  EXPECT_EQ(result.output, "done\n");
  EXPECT_EQ(host.Changed(), "");
}

TEST_P(RunCommandTest, GitHooksAndConfigAreReadOnly) {
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

TEST_P(RunCommandTest, MissingGitHooksAndConfigCannotBeCreated) {
  ToolResult result = Shell(
      "mkdir -p .git/hooks 2>/dev/null || echo no-git; "
      "git init -q . 2>/dev/null || echo no-init; ls -a | grep -v '^sparse\\.\\|^deep$'");
  EXPECT_EQ(result.output, "no-git\nno-init\n.\n..\n.git\n");
  // The read-only placeholder is gone afterwards.
  EndRun();
  EXPECT_NE(access(temp_.Path(".git").c_str(), F_OK), 0);
  temp_.MakeDir(".git");
  result = Shell(
      "{ echo x > .git/config; } 2>/dev/null || echo config-ro; "
      "mkdir .git/hooks 2>/dev/null || echo hooks-ro");
  EXPECT_EQ(result.output, "config-ro\nhooks-ro\n");
  EndRun();
  EXPECT_NE(access(temp_.Path(".git/config").c_str(), F_OK), 0);
  EXPECT_NE(access(temp_.Path(".git/hooks").c_str(), F_OK), 0);
}

TEST_P(RunCommandTest, GitCommondirCannotBeCreatedAndGitStillWorks) {
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
  EndRun();
  EXPECT_NE(access(temp_.Path(".git/commondir").c_str(), F_OK), 0);
}

TEST_P(RunCommandTest, ConcurrentCommandsInOneWorkspaceAllSucceed) {
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
  EndRun();
  const absl::Time until = absl::Now() + absl::Seconds(10);
  while (access(temp_.Path(".git").c_str(), F_OK) == 0 && absl::Now() < until) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  EXPECT_NE(access(temp_.Path(".git").c_str(), F_OK), 0);  // the shared placeholder is gone
}

TEST_P(RunCommandTest, MaxConcurrentIsResourceExhausted) {
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

TEST_P(RunCommandTest, UnavailableBwrapRefusesMutatingToolsWithAFix) {
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

TEST_P(RunCommandTest, UnsandboxedModeSaysSoInEveryMutatingReply) {
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

// Host pids of the processes in the pid namespace `ns` ("pid:[N]\n", as readlink prints it).
std::vector<int> HostPidsInPidNamespace(const std::string& ns) {
  std::vector<int> pids;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return pids;
  while (struct dirent* entry = readdir(proc)) {
    if (entry->d_name[0] < '0' || entry->d_name[0] > '9') continue;
    char link[256];
    const ssize_t n =
        readlink(absl::StrCat("/proc/", entry->d_name, "/ns/pid").c_str(), link, sizeof(link));
    if (n > 0 && absl::StrCat(std::string(link, static_cast<size_t>(n)), "\n") == ns) {
      pids.push_back(std::atoi(entry->d_name));
    }
  }
  closedir(proc);
  return pids;
}

std::string ReadHostFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The resident sandbox's own guarantees (only with residents on).
class ResidentTest : public RunCommandTest {
 protected:
  void SetUp() override {
    if (!resident()) GTEST_SKIP() << "resident sandboxes only";
    RunCommandTest::SetUp();
  }

  // The pid namespace a command of `run` sees.
  std::string PidNamespace(const std::string& run, ToolExecutor* executor = nullptr) {
    ToolResult result = Run({{"shell", "readlink /proc/self/ns/pid"}}, executor, 0, run);
    EXPECT_TRUE(result.ok) << result.error_message << result.output;
    return result.output;
  }

  // Which sandbox a command of `run` ran in: its pid namespace and its pid 1's start time. The
  // namespace's number alone can come back for a sandbox made after an earlier one was torn down.
  std::string SandboxId(const std::string& run) {
    ToolResult result = Run({{"shell", kSandboxIdCommand}}, nullptr, 0, run);
    EXPECT_TRUE(result.ok) << result.error_message << result.output;
    return result.output;
  }
  static constexpr const char* kSandboxIdCommand =
      "echo $(readlink /proc/self/ns/pid) $(cut -d' ' -f22 /proc/1/stat)";
};

INSTANTIATE_TEST_SUITE_P(Resident, ResidentTest, ::testing::Values(true),
                         [](const ::testing::TestParamInfo<bool>&) { return "Resident"; });

TEST_P(ResidentTest, CommandsOfOneRunShareItAndTwoRunsNever) {
  const std::string a1 = PidNamespace("run-a");
  const std::string a2 = PidNamespace("run-a");
  const std::string b = PidNamespace("run-b");
  EXPECT_EQ(a1, a2);  // the run's resident sandbox, reused
  EXPECT_NE(a1, b);
  EXPECT_NE(PidNamespace(""), a1);  // no run: a sandbox of its own
  EXPECT_EQ(executor_->sandbox().ResidentCount(), 2u);
}

TEST_P(ResidentTest, LeftoverProcessesAreKilledBeforeTheReplyAndUnseenByTheNextCommand) {
  const std::string a = UniqueSleep(), b = UniqueSleep();
  ToolResult first = Shell(
      absl::StrCat("sleep ", a, " & setsid nohup sleep ", b, " >/dev/null 2>&1 & echo started"));
  ASSERT_TRUE(first.ok) << first.output;
  EXPECT_FALSE(HostProcessWithCmdline(a));
  EXPECT_FALSE(HostProcessWithCmdline(b));
  // Pid 1 (init) and the command's own shell and cat are all there is.
  ToolResult next = Shell("for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline; echo; done");
  ASSERT_TRUE(next.ok) << next.output;
  EXPECT_FALSE(absl::StrContains(next.output, a)) << next.output;
  EXPECT_FALSE(absl::StrContains(next.output, "sleep")) << next.output;
  EXPECT_EQ(PidNamespace("run-1"), PidNamespace("run-1"));  // still the same sandbox
}

TEST_P(ResidentTest, TmpShmAndIpcAreEmptyForTheNextCommand) {
  ToolResult first = Shell(
      "echo x > /tmp/a; mkdir -p /tmp/d/e; touch /tmp/d/e/f; chmod 000 /tmp/d; "
      "echo y > /dev/shm/s; echo done");
  ASSERT_TRUE(first.ok) << first.output;
  ToolResult next = Shell("ls -A /tmp /dev/shm; tail -n +2 /proc/sysvipc/shm | wc -l");
  ASSERT_TRUE(next.ok) << next.output;
  EXPECT_EQ(next.output, "/dev/shm:\n\n/tmp:\n0\n");
}

TEST_P(ResidentTest, WhatCannotBeResetRetiresTheSandbox) {
  const std::string before = SandboxId("run-1");
  // Nested deeper than init's walk goes: /tmp cannot be emptied, so the sandbox is not reused.
  ToolResult deep = Shell(
      "cd /tmp && for i in $(seq 300); do mkdir d && cd d || exit 1; done && echo x > f && "
      "echo deep");
  ASSERT_TRUE(deep.ok) << deep.output;
  ToolResult next = Shell(absl::StrCat("ls -A /tmp; ", kSandboxIdCommand));
  ASSERT_TRUE(next.ok) << next.output;
  // A fresh sandbox: an empty /tmp (ls printed nothing) and another pid namespace.
  EXPECT_EQ(next.output.rfind("pid:[", 0), 0u) << next.output;
  EXPECT_NE(next.output, before);
}

TEST_P(ResidentTest, DevIsAsBubblewrapMadeItForTheNextCommand) {
  const std::string look =
      "for f in /dev/* /dev/.[!.]*; do [ -e \"$f\" ] || [ -L \"$f\" ] && "
      "echo \"$f $(stat -c %F:%a \"$f\") $(readlink \"$f\")\"; done; "
      "stat -c '%n %a' /dev /tmp /dev/shm";
  ToolResult before = Shell(look);
  ASSERT_TRUE(before.ok) << before.output;
  ToolResult change = Shell(
      "rm /dev/stdout && ln -s /tmp/x /dev/stdout && rm /dev/fd && mkdir /dev/fd && "
      "touch /dev/extra && mkdir -p /dev/d/e && chmod 700 /dev/shm /tmp /dev && echo changed");
  ASSERT_TRUE(change.ok) << change.output;
  ASSERT_EQ(change.output, "changed\n");
  ToolResult after = Shell(look);
  ASSERT_TRUE(after.ok) << after.output;
  EXPECT_EQ(after.output, before.output);
  EXPECT_TRUE(absl::StrContains(before.output, "/dev/stdout symbolic link:777 /proc/self/fd/1"))
      << before.output;
  EXPECT_EQ(PidNamespace("run-1"), PidNamespace("run-1"));  // the same resident sandbox
}

TEST_P(ResidentTest, TimeoutKillsTheTreeAndTheNextCommandGetsAFreshSandbox) {
  const std::string before = SandboxId("run-1");
  const std::string a = UniqueSleep();
  ToolResult result = Shell(absl::StrCat("setsid nohup sleep ", a, " >/dev/null 2>&1 & sleep 100"),
                            /*timeout_seconds=*/1);
  EXPECT_TRUE(result.timed_out);
  EXPECT_EQ(result.error_code, "TIMEOUT");
  EXPECT_FALSE(HostProcessWithCmdline(a));
  EXPECT_NE(SandboxId("run-1"), before);
}

TEST_P(ResidentTest, GitCreatedBetweenCommandsStaysProtected) {
  // The first command's sandbox has a placeholder for the missing .git.
  ASSERT_TRUE(Shell("true").ok);
  // On the host, .git appears with a config (a new mount plan).
  ASSERT_EQ(mkdir(temp_.Path(".git").c_str(), 0755) == 0 || errno == EEXIST, true);
  temp_.WriteFile(".git/config", "[core]\n");
  ToolResult write = Shell("echo evil > .git/config");
  EXPECT_FALSE(write.ok);
  ToolResult hook = Shell("mkdir -p .git/hooks && echo evil > .git/hooks/pre-commit");
  EXPECT_FALSE(hook.ok);
  EXPECT_EQ(ReadHostFile(temp_.Path(".git/config")), "[core]\n");
  EXPECT_NE(access(temp_.Path(".git/hooks/pre-commit").c_str(), F_OK), 0);
}

TEST_P(RunCommandTest, EachCommandHasThePidsAllowanceOfAColdOne) {
  SandboxOptions options;
  options.max_pids = 64;
  std::unique_ptr<ToolExecutor> small = MakeExecutor(options);
  ASSERT_NE(small, nullptr);
  if (!absl::StrContains(small->SandboxDescription(), "pids cgroup")) {
    GTEST_SKIP() << "no pids cgroup here: " << small->SandboxDescription();
  }
  // How many background processes one command can start before a fork fails (dash gives up
  // the subshell at the first failure; the rest uses builtins only).
  const std::string fill =
      "n=0; ( while [ $n -lt 200 ] && { sleep 30 & }; do n=$((n+1)); echo $n > /tmp/n; done ) "
      "2>/dev/null; read n < /tmp/n; echo $n";
  ToolResult first = Run({{"shell", fill}}, small.get());
  ToolResult second = Run({{"shell", fill}}, small.get());
  EXPECT_TRUE(first.ok) << first.output;
  EXPECT_EQ(first.output, second.output);  // nothing of the first counts against the second
  EXPECT_LE(std::atoi(first.output.c_str()), 64) << first.output;
  EXPECT_GE(std::atoi(first.output.c_str()), 40) << first.output;
}

TEST_P(ResidentTest, InitKilledFromOutsideIsAnUnknownOutcomeNeverRunAgain) {
  const std::string ns = PidNamespace("run-1");  // the resident sandbox exists
  const std::string marker = UniqueSleep();
  std::thread killer([&] {
    // The shell's own command line names the marker too: wait until it has also written.
    const absl::Time until = absl::Now() + absl::Seconds(10);
    while (!(HostProcessWithCmdline(marker) && ReadHostFile(temp_.Path("count")) == "ran\n") &&
           absl::Now() < until) {
      absl::SleepFor(absl::Milliseconds(10));
    }
    // Init, the oldest process of the sandbox's pid namespace (the lowest pid, barring wrap).
    std::vector<int> pids = HostPidsInPidNamespace(ns);
    ASSERT_FALSE(pids.empty());
    const int init = *std::min_element(pids.begin(), pids.end());
    ASSERT_TRUE(absl::StrContains(ReadHostFile(absl::StrCat("/proc/", init, "/cmdline")),
                                  "rein-sandbox-init"));
    kill(init, SIGKILL);
  });
  ToolResult result = Shell(absl::StrCat("echo ran >> count; sleep ", marker));
  killer.join();
  EXPECT_FALSE(result.ok);
  EXPECT_EQ(result.error_code, "OUTCOME_UNKNOWN") << result.error_message;
  EXPECT_FALSE(result.timed_out);
  EXPECT_EQ(ReadHostFile(temp_.Path("count")), "ran\n");  // once, not again on another path
  EXPECT_FALSE(HostProcessWithCmdline(marker));
  ToolResult next = Shell("echo alive");
  EXPECT_TRUE(next.ok) << next.error_message;
  EXPECT_EQ(next.output, "alive\n");
}

TEST_P(ResidentTest, IdleResidentsAreRemovedAndCapped) {
  SandboxOptions options;
  options.resident_idle = absl::Milliseconds(300);
  options.max_residents = 2;
  std::unique_ptr<ToolExecutor> executor = MakeExecutor(options);
  ASSERT_NE(executor, nullptr);
  const std::string namespaces[] = {PidNamespace("r1", executor.get()),
                                    PidNamespace("r2", executor.get()),
                                    PidNamespace("r3", executor.get())};
  EXPECT_LE(executor->sandbox().ResidentCount(), 2u);
  const absl::Time until = absl::Now() + absl::Seconds(10);
  while (executor->sandbox().ResidentCount() > 0 && absl::Now() < until) {
    absl::SleepFor(absl::Milliseconds(50));
  }
  EXPECT_EQ(executor->sandbox().ResidentCount(), 0u);
  executor.reset();
  for (const std::string& ns : namespaces) EXPECT_TRUE(HostPidsInPidNamespace(ns).empty()) << ns;
}

// A root executor that cannot make its own device nodes refuses mutating tools, rather than run
// commands that could chmod the host's /dev/null (SANDBOX.md, "/dev"), and says how to fix it.
TEST(DevStagingTest, RootExecutorWithoutMknodIsUnavailableAndSaysHowToFix) {
  if (geteuid() != 0) GTEST_SKIP() << "only a root executor owns the host's device nodes";
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // In a child: without CAP_MKNOD in its effective set, as in a container that drops it.
    struct __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct data[2];
    if (syscall(SYS_capget, &header, data) != 0) _exit(10);
    data[CAP_MKNOD / 32].effective &= ~(1u << (CAP_MKNOD % 32));
    if (syscall(SYS_capset, &header, data) != 0) _exit(11);
    SandboxOptions options;
    options.cgroup = "off";
    absl::StatusOr<std::unique_ptr<Sandbox>> sandbox = Sandbox::Create(options);
    if (!sandbox.ok()) _exit(12);
    if ((*sandbox)->state() != Sandbox::State::kUnavailable) _exit(13);
    if (!absl::StrContains((*sandbox)->Description(), "device nodes")) _exit(14);
    const absl::Status refused = (*sandbox)->CheckMutationAllowed();
    if (refused.code() != absl::StatusCode::kFailedPrecondition ||
        !absl::StrContains(refused.message(), "CAP_MKNOD")) {
      _exit(15);
    }
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "10 capget, 11 capset, 12 Create failed, 13 not "
                                       "unavailable, 14 Description, 15 CheckMutationAllowed";
}

}  // namespace
}  // namespace rein
