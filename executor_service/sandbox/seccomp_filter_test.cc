// Tests of the sandbox's seccomp program, loaded in a forked child (no bubblewrap needed).
#include "executor_service/sandbox/seccomp_filter.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace rein {
namespace {

// How a syscall went in the child: "ok", "errno N", or "signal N".
using Outcome = std::string;

std::string Errno(int err) { return "errno " + std::to_string(err); }
const std::string kOk = "ok";
const std::string kEperm = Errno(EPERM);
const std::string kEnosys = Errno(ENOSYS);
const std::string kKilled = "signal " + std::to_string(SIGSYS);

class SeccompFilterTest : public ::testing::Test {
 protected:
  void SetUp() override { Load(/*allow_network=*/false); }

  void Load(bool allow_network) {
    absl::StatusOr<UniqueFd> fd = SandboxSeccompProgramFd(allow_network);
    ASSERT_TRUE(fd.ok()) << fd.status();
    std::string bytes;
    char buf[4096];
    ssize_t n;
    while ((n = read(fd->get(), buf, sizeof(buf))) > 0) bytes.append(buf, static_cast<size_t>(n));
    ASSERT_EQ(bytes.size() % sizeof(struct sock_filter), 0u);
    ASSERT_GT(bytes.size(), 0u);
    program_.resize(bytes.size() / sizeof(struct sock_filter));
    memcpy(program_.data(), bytes.data(), bytes.size());
    const char* tmp = getenv("TEST_TMPDIR");
    dir_ = std::string(tmp != nullptr ? tmp : "/tmp");
  }

  // Runs `call` (a syscall returning -1 and errno on failure) under the program in a child
  // (without it when `filtered` is false).
  Outcome Run(const std::function<long()>& call, bool filtered = true) {
    const pid_t pid = fork();
    if (pid == 0) {
      struct sock_fprog prog = {static_cast<unsigned short>(program_.size()), program_.data()};
      if (filtered && (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
                       prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0)) {
        _exit(255);
      }
      const long result = call();
      _exit(result == -1 ? errno : 0);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid) return "fork failed";
    if (WIFSIGNALED(status)) return "signal " + std::to_string(WTERMSIG(status));
    if (WEXITSTATUS(status) == 255) return "filter not loaded";
    return WEXITSTATUS(status) == 0 ? kOk : Errno(WEXITSTATUS(status));
  }

  std::string File(const std::string& name) { return dir_ + "/" + name; }

  std::vector<struct sock_filter> program_;
  std::string dir_;
};

TEST_F(SeccompFilterTest, OrdinarySyscallsAreAllowed) {
  EXPECT_EQ(Run([] { return syscall(SYS_getpid); }), kOk);
  EXPECT_EQ(Run([] { return syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0) > 0 ? 0 : -1; }), kOk);
  EXPECT_EQ(Run([] { return socket(AF_UNIX, SOCK_STREAM, 0); }), kOk);
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  int available = 0;
  EXPECT_EQ(Run([&] { return ioctl(fds[0], FIONREAD, &available); }), kOk);
  close(fds[0]);
  close(fds[1]);
}

TEST_F(SeccompFilterTest, DeniedSyscallsFailWithEperm) {
  const long denied[] = {SYS_ptrace,
                         SYS_process_vm_readv,
                         SYS_process_vm_writev,
                         SYS_io_uring_setup,
                         SYS_io_uring_enter,
                         SYS_io_uring_register,
                         SYS_bpf,
                         SYS_perf_event_open,
                         SYS_userfaultfd,
                         SYS_keyctl,
                         SYS_add_key,
                         SYS_request_key};
  for (long nr : denied) {
    EXPECT_EQ(Run([nr] { return syscall(nr, 0, 0, 0, 0, 0, 0); }), kEperm) << "syscall " << nr;
  }
  // Arguments that fail without the filter too, should it let them through.
  EXPECT_EQ(Run([] { return syscall(SYS_kexec_load, 0, 1000, 0, 0); }), kEperm);
  EXPECT_EQ(Run([] { return syscall(SYS_kexec_file_load, -1, -1, 0, 0, 0); }), kEperm);
}

TEST_F(SeccompFilterTest, Clone3AndOpenat2FailWithEnosys) {
  EXPECT_EQ(Run([] { return syscall(SYS_clone3, 0, 0); }), kEnosys);
  EXPECT_EQ(Run([] { return syscall(SYS_openat2, AT_FDCWD, "/", 0, 0); }), kEnosys);
}

TEST_F(SeccompFilterTest, SocketsOtherThanUnixFailWithEperm) {
  for (int domain : {AF_INET, AF_INET6, AF_NETLINK, AF_PACKET, AF_VSOCK}) {
    EXPECT_EQ(Run([domain] { return socket(domain, SOCK_DGRAM, 0); }), kEperm) << domain;
  }
}

TEST_F(SeccompFilterTest, NetworkGrantAllowsInetSocketsOnly) {
  Load(/*allow_network=*/true);
  for (int domain : {AF_UNIX, AF_INET, AF_INET6}) {
    EXPECT_EQ(Run([domain] { return socket(domain, SOCK_DGRAM, 0); }), kOk) << domain;
  }
  for (int domain : {AF_PACKET, AF_VSOCK, 0, 3, 64}) {
    EXPECT_EQ(Run([domain] { return socket(domain, SOCK_DGRAM, 0); }), kEperm) << domain;
  }
  EXPECT_EQ(Run([] { return syscall(SYS_socket, 0x100000002L, SOCK_DGRAM, 0); }), kEperm);
}

TEST_F(SeccompFilterTest, TiocstiAndTioclinuxFailWhateverTheHighBits) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const int fd = fds[0];
  for (unsigned long request :
       {static_cast<unsigned long>(TIOCSTI), static_cast<unsigned long>(TIOCLINUX),
        TIOCSTI | (1ul << 32), TIOCLINUX | (0xfffful << 40)}) {
    EXPECT_EQ(Run([=] { return syscall(SYS_ioctl, fd, request, 0); }), kEperm) << request;
  }
  close(fds[0]);
  close(fds[1]);
}

TEST_F(SeccompFilterTest, SetIdBitsFailWithEperm) {
  const std::string file = File("plain");
  ASSERT_EQ(close(open(file.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644)), 0);
  const char* path = file.c_str();
  for (long mode : {long{S_ISUID | 0755}, long{S_ISGID | 0755}, long{S_ISUID | S_ISGID}}) {
    EXPECT_EQ(Run([=] { return syscall(SYS_chmod, path, mode); }), kEperm);
    EXPECT_EQ(Run([=] { return syscall(SYS_fchmodat, AT_FDCWD, path, mode); }), kEperm);
    EXPECT_EQ(Run([=] { return syscall(452 /* fchmodat2 */, AT_FDCWD, path, mode, 0); }), kEperm);
    EXPECT_EQ(Run([=] {
                const int fd = open(path, O_RDONLY | O_CLOEXEC);
                return fd < 0 ? -1 : syscall(SYS_fchmod, fd, mode);
              }),
              kEperm);
    const std::string created = File("created");
    const char* created_path = created.c_str();
    EXPECT_EQ(Run([=] { return syscall(SYS_open, created_path, O_CREAT | O_WRONLY, mode); }),
              kEperm);
    EXPECT_EQ(
        Run([=] { return syscall(SYS_openat, AT_FDCWD, created_path, O_CREAT | O_WRONLY, mode); }),
        kEperm);
    EXPECT_EQ(Run([=] { return syscall(SYS_creat, created_path, mode); }), kEperm);
    EXPECT_EQ(Run([=] { return syscall(SYS_mknod, created_path, S_IFREG | mode, 0); }), kEperm);
    EXPECT_EQ(Run([=] { return syscall(SYS_mknodat, AT_FDCWD, created_path, S_IFREG | mode, 0); }),
              kEperm);
    struct stat st;
    EXPECT_NE(stat(created_path, &st), 0);
  }
  struct stat st;
  ASSERT_EQ(stat(path, &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0644u);
  // Without set-id bits, and with bits the kernel ignores above the low 32, they work.
  EXPECT_EQ(Run([=] { return syscall(SYS_chmod, path, 0600); }), kOk);
  EXPECT_EQ(Run([=] { return syscall(SYS_chmod, path, (1l << 32) | 0640); }), kOk);
  ASSERT_EQ(stat(path, &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
}

#if defined(__x86_64__)
TEST_F(SeccompFilterTest, X32AndI386SyscallsKillTheProcess) {
  // x32: the same numbers with bit 30 set.
  EXPECT_EQ(Run([] { return syscall(0x40000000 | SYS_getpid); }), kKilled);
  // i386 (int 0x80, getpid is 20): a foreign architecture.
  const auto i386_getpid = [] {
    long result;
    asm volatile("int $0x80" : "=a"(result) : "a"(20) : "memory");
    return result < 0 ? -1 : 0;
  };
  if (const Outcome unfiltered = Run(i386_getpid, /*filtered=*/false); unfiltered != kOk) {
    // A kernel with i386 emulation off (ia32_emulation=0, or a hypervisor's choice) faults on
    // int 0x80 before any filter sees it: under the filter it ends the same way.
    EXPECT_EQ(Run(i386_getpid), unfiltered);
    GTEST_SKIP() << "this kernel does not run i386 system calls (int 0x80 faults without the "
                    "filter): only checked that it faults the same way under it";
  }
  EXPECT_EQ(Run(i386_getpid), kKilled);
}
#endif

}  // namespace
}  // namespace rein
