// The sandbox's seccomp-BPF program, built with libseccomp.
#include "executor_service/sandbox/seccomp_filter.h"

#include <errno.h>
#include <fcntl.h>
#include <seccomp.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace rein {
namespace {

#if !defined(__x86_64__) && !defined(__aarch64__)
#error "the sandbox's seccomp filter supports x86-64 and aarch64 only"
#endif

// libseccomp returns -errno.
absl::Status Failed(absl::string_view what, int rc) {
  return absl::InternalError(absl::StrCat("seccomp: ", what, ": ", strerror(-rc)));
}

// Builds the program (see the header) and returns its classic BPF instructions.
absl::StatusOr<std::vector<struct sock_filter>> Build(bool allow_network) {
  // Everything not named below is allowed.
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (ctx == nullptr) return absl::InternalError("seccomp: seccomp_init failed");
  absl::Cleanup release = [ctx] { seccomp_release(ctx); };
  // Only the native architecture: a foreign one would give syscall numbers another meaning.
  // On x86-64 libseccomp sends x32 numbers (bit 30 set) to this action too.
  int rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
  if (rc != 0) return Failed("bad-architecture action", rc);
  // bwrap sets no_new_privs itself; the attribute only matters to seccomp_load, not used here.
  const uint32_t kDeny = SCMP_ACT_ERRNO(EPERM);

  // Syscalls refused whatever their arguments.
  const int denied[] = {
      SCMP_SYS(ptrace),
      SCMP_SYS(process_vm_readv),
      SCMP_SYS(process_vm_writev),
      SCMP_SYS(io_uring_setup),
      SCMP_SYS(io_uring_enter),
      SCMP_SYS(io_uring_register),
      SCMP_SYS(bpf),
      SCMP_SYS(perf_event_open),
      SCMP_SYS(userfaultfd),
      SCMP_SYS(keyctl),
      SCMP_SYS(add_key),
      SCMP_SYS(request_key),
      SCMP_SYS(kexec_load),
      SCMP_SYS(kexec_file_load),
  };
  for (int nr : denied) {
    if ((rc = seccomp_rule_add(ctx, kDeny, nr, 0)) != 0) return Failed("rule", rc);
  }
  // clone3 passes its flags, and openat2 its mode, in memory the filter cannot read: ENOSYS
  // makes libc fall back to clone and openat.
  for (int nr : {SCMP_SYS(clone3), SCMP_SYS(openat2)}) {
    if ((rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), nr, 0)) != 0) {
      return Failed("rule", rc);
    }
  }
  // No set-user-ID or set-group-ID bits: the command's files belong to the executor's host
  // uid (root, often), so such a file would be a way up on the host. A mask of the low bits
  // compares the low 32 bits only, as the kernel reads the mode.
  constexpr int kFchmodat2 = 452;  // the same number on x86-64 and aarch64
  const std::pair<int, unsigned> mode_args[] = {
      {SCMP_SYS(chmod), 1}, {SCMP_SYS(open), 2},   {SCMP_SYS(creat), 1},
      {SCMP_SYS(mknod), 1}, {SCMP_SYS(fchmod), 1}, {SCMP_SYS(fchmodat), 2},
      {kFchmodat2, 2},      {SCMP_SYS(openat), 3}, {SCMP_SYS(mknodat), 2},
  };
  for (const auto& [nr, arg] : mode_args) {
    if (nr < 0) continue;  // not on this architecture (chmod, open, creat, mknod on aarch64)
    for (scmp_datum_t bit : {scmp_datum_t{S_ISUID}, scmp_datum_t{S_ISGID}}) {
      rc = seccomp_rule_add(ctx, kDeny, nr, 1, SCMP_CMP(arg, SCMP_CMP_MASKED_EQ, bit, bit));
      if (rc != 0) return Failed("mode rule", rc);
    }
  }
  // ioctl(fd, TIOCSTI or TIOCLINUX, ...): the kernel uses the low 32 bits of the request, so
  // high bits set must not get through.
  for (scmp_datum_t request : {scmp_datum_t{TIOCSTI}, scmp_datum_t{TIOCLINUX}}) {
    rc = seccomp_rule_add(ctx, kDeny, SCMP_SYS(ioctl), 1,
                          SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, request));
    if (rc != 0) return Failed("ioctl rule", rc);
  }
  // socket(domain, ...): only AF_UNIX.
  if (!allow_network) {
    rc = seccomp_rule_add(ctx, kDeny, SCMP_SYS(socket), 1, SCMP_A0(SCMP_CMP_NE, AF_UNIX));
    if (rc != 0) return Failed("socket rule", rc);
  } else {
    // AF_UNIX, AF_INET, AF_INET6 and AF_NETLINK (1, 2, 10, 16): every other domain is denied,
    // one rule per gap (all 64 bits compared).
    static_assert(AF_UNIX == 1 && AF_INET == 2 && AF_INET6 == 10 && AF_NETLINK == 16);
    rc = seccomp_rule_add(ctx, kDeny, SCMP_SYS(socket), 1, SCMP_A0(SCMP_CMP_LT, AF_UNIX));
    if (rc == 0) {
      rc = seccomp_rule_add(ctx, kDeny, SCMP_SYS(socket), 1, SCMP_A0(SCMP_CMP_GT, AF_NETLINK));
    }
    for (scmp_datum_t domain = 3; rc == 0 && domain < AF_NETLINK; ++domain) {
      if (domain == AF_INET6) continue;
      rc = seccomp_rule_add(ctx, kDeny, SCMP_SYS(socket), 1, SCMP_A0(SCMP_CMP_EQ, domain));
    }
    if (rc != 0) return Failed("socket rule", rc);
  }

  // libseccomp 2.5 exports to a descriptor only: through a memfd into memory.
  UniqueFd memfd(memfd_create("rein-seccomp", MFD_CLOEXEC));
  if (!memfd.valid()) return Failed("memfd_create", -errno);
  if ((rc = seccomp_export_bpf(ctx, memfd.get())) != 0) return Failed("export", rc);
  const off_t size = lseek(memfd.get(), 0, SEEK_END);
  if (size <= 0 || size % sizeof(struct sock_filter) != 0) {
    return absl::InternalError("seccomp: the exported program has a bad size");
  }
  std::vector<struct sock_filter> program(static_cast<size_t>(size) / sizeof(struct sock_filter));
  if (pread(memfd.get(), program.data(), static_cast<size_t>(size), 0) != size) {
    return Failed("reading the program", -errno);
  }
  return program;
}

}  // namespace

const absl::StatusOr<std::vector<struct sock_filter>>& SandboxSeccompProgram(bool allow_network) {
  // Built once each: the policy never changes while the executor runs.
  static const auto* const program =
      new absl::StatusOr<std::vector<struct sock_filter>>(Build(/*allow_network=*/false));
  static const auto* const networked =
      new absl::StatusOr<std::vector<struct sock_filter>>(Build(/*allow_network=*/true));
  return allow_network ? *networked : *program;
}

absl::StatusOr<UniqueFd> SandboxSeccompProgramFd(bool allow_network) {
  const absl::StatusOr<std::vector<struct sock_filter>>& program =
      SandboxSeccompProgram(allow_network);
  if (!program.ok()) return program.status();
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    return absl::ResourceExhaustedError(absl::StrCat("seccomp pipe: ", strerror(errno)));
  }
  UniqueFd read_end(fds[0]);
  UniqueFd write_end(fds[1]);
  const char* data = reinterpret_cast<const char*>(program->data());
  size_t left = program->size() * sizeof(struct sock_filter);  // far below the pipe's buffer
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
