// The seccomp-BPF program every sandboxed command runs under (handed to bubblewrap).
#ifndef REIN_EXECUTOR_SERVICE_SECCOMP_FILTER_H_
#define REIN_EXECUTOR_SERVICE_SECCOMP_FILTER_H_

#include <linux/filter.h>

#include <vector>

#include "absl/status/statusor.h"
#include "executor_service/process/unique_fd.h"

namespace rein {

// A classic BPF seccomp program for this machine's architecture that
//  - kills the process on a foreign architecture (e.g. int 0x80 on x86-64) and on an x32
//    syscall number;
//  - fails with EPERM: ptrace, process_vm_readv/writev, io_uring_setup/enter/register,
//    ioctl TIOCSTI and TIOCLINUX (the request's low 32 bits are compared, so high bits set
//    do not get through), socket() of any domain but AF_UNIX (all 64 bits of the domain
//    compared), bpf, perf_event_open, userfaultfd, keyctl/add_key/request_key,
//    kexec_load/kexec_file_load; chmod, fchmod, fchmodat(2), open, openat, creat, mknod(at)
//    with a set-user-ID or set-group-ID bit in the mode; clone3 and openat2 fail with ENOSYS
//    (their arguments are in memory the filter cannot read; libc falls back to clone and
//    openat);
//  - allows everything else.
// With `allow_network` (only for an MCP server the operator granted the network), socket()
// of AF_INET, AF_INET6 and AF_NETLINK is allowed too; every other domain still fails.
// Built with libseccomp once per process; INTERNAL when libseccomp fails.
const absl::StatusOr<std::vector<struct sock_filter>>& SandboxSeccompProgram(
    bool allow_network = false);

// The program in a pipe (read end returned, close-on-exec), ready for bwrap --seccomp FD.
absl::StatusOr<UniqueFd> SandboxSeccompProgramFd(bool allow_network = false);

}  // namespace rein

#endif  // REIN_EXECUTOR_SERVICE_SECCOMP_FILTER_H_
