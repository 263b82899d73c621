// The sandbox's seccomp-BPF program, written by hand.
#include "executor_service/seccomp_filter.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <utility>

#include "absl/strings/str_cat.h"

namespace rein {
namespace {

#if defined(__x86_64__)
constexpr uint32_t kArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
constexpr uint32_t kArch = AUDIT_ARCH_AARCH64;
#else
#error "the sandbox's seccomp filter supports x86-64 and aarch64 only"
#endif

constexpr uint32_t kErrno = SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA);

// Offset of the low 32 bits of syscall argument `n` (little-endian).
constexpr uint32_t ArgLow(int n) {
  return static_cast<uint32_t>(offsetof(struct seccomp_data, args) + 8 * n);
}

struct sock_filter Stmt(uint16_t code, uint32_t k) { return BPF_STMT(code, k); }
struct sock_filter Jump(uint16_t code, uint32_t k, uint8_t jt, uint8_t jf) {
  return BPF_JUMP(code, k, jt, jf);
}

}  // namespace

std::vector<struct sock_filter> SandboxSeccompProgram() {
  std::vector<struct sock_filter> p;
  // Architecture: a foreign one would give syscall numbers another meaning.
  p.push_back(Stmt(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)));
  p.push_back(Jump(BPF_JMP | BPF_JEQ | BPF_K, kArch, 1, 0));
  p.push_back(Stmt(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS));
  p.push_back(Stmt(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)));
#if defined(__x86_64__)
  // x32 syscalls have bit 30 set and the same meaning as the checked ones.
  p.push_back(Jump(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u, 0, 1));
  p.push_back(Stmt(BPF_RET | BPF_K, kErrno));
#endif
  // Syscalls refused whatever their arguments.
  const long denied[] = {
      SYS_ptrace,         SYS_process_vm_readv, SYS_process_vm_writev, SYS_io_uring_setup,
      SYS_io_uring_enter, SYS_io_uring_register, SYS_bpf,              SYS_perf_event_open,
      SYS_userfaultfd,    SYS_keyctl,            SYS_add_key,          SYS_request_key,
      SYS_kexec_load,     SYS_kexec_file_load,
  };
  for (long nr : denied) {
    p.push_back(Jump(BPF_JMP | BPF_JEQ | BPF_K, static_cast<uint32_t>(nr), 0, 1));
    p.push_back(Stmt(BPF_RET | BPF_K, kErrno));
  }
  // clone3 passes its flags in memory the filter cannot read: ENOSYS makes libc use clone.
  p.push_back(Jump(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone3, 0, 1));
  p.push_back(Stmt(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA)));
  // openat2 passes its mode in memory the filter cannot read.
  p.push_back(Jump(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat2, 0, 1));
  p.push_back(Stmt(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA)));
  // No set-user-ID or set-group-ID bits: the command's files belong to the executor's host
  // uid (root, often), so such a file would be a way up on the host.
  constexpr long kFchmodat2 = 452;
  const std::pair<long, int> mode_args[] = {
#ifdef SYS_chmod
      {SYS_chmod, 1}, {SYS_open, 2}, {SYS_creat, 1}, {SYS_mknod, 1},
#endif
      {SYS_fchmod, 1}, {SYS_fchmodat, 2}, {kFchmodat2, 2}, {SYS_openat, 3}, {SYS_mknodat, 2},
  };
  for (const auto& [nr, arg] : mode_args) {
    p.push_back(Jump(BPF_JMP | BPF_JEQ | BPF_K, static_cast<uint32_t>(nr), 0, 4));
    p.push_back(Stmt(BPF_LD | BPF_W | BPF_ABS, ArgLow(arg)));
    p.push_back(Jump(BPF_JMP | BPF_JSET | BPF_K, S_ISUID | S_ISGID, 1, 0));
    p.push_back(Stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
    p.push_back(Stmt(BPF_RET | BPF_K, kErrno));
  }
  // ioctl(fd, TIOCSTI or TIOCLINUX, ...): the kernel uses the low 32 bits of the request.
  p.push_back(Jump(BPF_JMP | BPF_JEQ | BPF_K, SYS_ioctl, 0, 5));
  p.push_back(Stmt(BPF_LD | BPF_W | BPF_ABS, ArgLow(1)));
  p.push_back(Jump(BPF_JMP | BPF_JEQ | BPF_K, TIOCSTI, 2, 0));
  p.push_back(Jump(BPF_JMP | BPF_JEQ | BPF_K, TIOCLINUX, 1, 0));
  p.push_back(Stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
  p.push_back(Stmt(BPF_RET | BPF_K, kErrno));
  // socket(domain, ...): only AF_UNIX.
  p.push_back(Jump(BPF_JMP | BPF_JEQ | BPF_K, SYS_socket, 0, 4));
  p.push_back(Stmt(BPF_LD | BPF_W | BPF_ABS, ArgLow(0)));
  p.push_back(Jump(BPF_JMP | BPF_JEQ | BPF_K, AF_UNIX, 0, 1));
  p.push_back(Stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
  p.push_back(Stmt(BPF_RET | BPF_K, kErrno));
  p.push_back(Stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
  return p;
}

absl::StatusOr<UniqueFd> SandboxSeccompProgramFd() {
  const std::vector<struct sock_filter> program = SandboxSeccompProgram();
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    return absl::ResourceExhaustedError(absl::StrCat("seccomp pipe: ", strerror(errno)));
  }
  UniqueFd read_end(fds[0]);
  UniqueFd write_end(fds[1]);
  const char* data = reinterpret_cast<const char*>(program.data());
  size_t left = program.size() * sizeof(struct sock_filter);  // far below the pipe's buffer
  while (left > 0) {
    const ssize_t n = write(write_end.get(), data, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return absl::InternalError(absl::StrCat("seccomp pipe: ", strerror(errno)));
    data += n;
    left -= static_cast<size_t>(n);
  }
  return read_end;
}

}  // namespace rein
