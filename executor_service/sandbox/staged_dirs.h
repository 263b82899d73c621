// What the executor stages once at start for every sandbox: a copy of the /etc entries a
// command may read, and device nodes of its own (SANDBOX.md, "Filesystem" and "/dev").
#ifndef REIN_EXECUTOR_SERVICE_SANDBOX_STAGED_DIRS_H_
#define REIN_EXECUTOR_SERVICE_SANDBOX_STAGED_DIRS_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace rein {

// The sandbox's /etc/passwd and /etc/group: root and the command's user ("sandbox", home
// /workspace).
std::string PasswdData(uint32_t uid, uint32_t gid);
std::string GroupData(uint32_t gid);

// Makes the sandbox's /etc in a private directory "rein-sandbox-etc-*" of $TMPDIR (or /tmp),
// first removing those of executors of this pid namespace that are gone: a copy of each of
// SandboxEtcEntries the host has, passwd and group for `uid`/`gid`, and an empty resolv.conf.
// Returns the directory (the caller removes it); INTERNAL saying what failed otherwise.
absl::StatusOr<std::string> StageEtc(uint32_t uid, uint32_t gid);

// True when the executor's uid owns a host device node that bubblewrap's --dev binds: bubblewrap
// maps the sandbox's uid to it, so a command could chmod the host's node (a root executor).
bool HostDevNodesMapped();

// Makes the sandbox's own device nodes (SandboxDevNodes, mode 0666, owned by a uid bubblewrap
// does not map) in a private directory "rein-sandbox-dev-*" of the first of $TMPDIR (or /tmp),
// /var/tmp and /dev that is writable and mounted without nodev. `sandbox_host_uid` is the uid
// commands map to. FAILED_PRECONDITION saying what each candidate lacked otherwise.
absl::StatusOr<std::string> StageDev(uint32_t sandbox_host_uid);

}  // namespace rein

#endif  // REIN_EXECUTOR_SERVICE_SANDBOX_STAGED_DIRS_H_
