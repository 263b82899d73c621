// The bubblewrap command line of a sandboxed command, built from options alone: no bwrap, no
// processes, no file system access (but HostSystemDirs, which reads the host once).
#ifndef REIN_EXECUTOR_SERVICE_BWRAP_COMMAND_H_
#define REIN_EXECUTOR_SERVICE_BWRAP_COMMAND_H_

#include <cstdint>
#include <string>
#include <vector>

namespace rein {

// Where the workspace appears inside the sandbox (and the commands' HOME).
inline constexpr const char* kSandboxWorkspace = "/workspace";

// Where a resident sandbox's init program (rein-sandbox-init) appears inside it.
inline constexpr const char* kSandboxInitPath = "/.rein-sandbox-init";

// A top-level system directory of the host (/bin, /lib64, ...), mirrored read-only.
struct SystemDir {
  std::string path;            // absolute, e.g. "/lib64"
  std::string symlink_target;  // "" for a directory; else what the symbolic link points to
};

// /bin, /sbin, /lib, /lib32, /lib64 and /libx32 as this host has them: each that is a
// directory or a symbolic link (to /usr, usually); the others are left out.
std::vector<SystemDir> HostSystemDirs();

// The entries of the host's /etc a command sees ("ld.so.cache", "ssl/certs", ...): what a
// command may need (dynamic linker, alternatives, time zone, certificates), not all of /etc
// (the command's host uid may be root, which reads root-only files).
std::vector<std::string> SandboxEtcEntries();

// A device node bubblewrap's --dev binds from the host's /dev.
struct SandboxDevNode {
  const char* name;  // in /dev: "null", "zero", "full", "random", "urandom", "tty"
  unsigned major;
  unsigned minor;
};
// The nodes --dev binds. bubblewrap maps the sandbox's uid to the executor's host uid, so when
// that uid owns the host's nodes (root), a command could chmod them: Sandbox then binds its own
// copies over them (BwrapConfig::dev_dir; SANDBOX.md, "/dev").
std::vector<SandboxDevNode> SandboxDevNodes();

// What is the same for every command.
struct BwrapConfig {
  std::string bwrap_path = "/usr/bin/bwrap";
  uint32_t uid = 65534;  // the command's uid and gid inside the sandbox
  uint32_t gid = 65534;
  uint64_t tmp_size_bytes = 256 << 20;  // size of the private /tmp
  std::vector<SystemDir> system_dirs;
  // A directory prepared once (Sandbox: copies of SandboxEtcEntries, passwd, group, and an
  // empty resolv.conf as a mount point) bound read-only as /etc in one mount; "" = a
  // read-only bind per entry of the host's /etc, and passwd and group per command.
  std::string etc_dir;
  // A directory prepared once (Sandbox) holding a node per SandboxDevNodes, owned by a host uid
  // the sandbox does not map: each is bound (--dev-bind) over the host's node --dev bound, so
  // that a command cannot chmod the host's. "" = --dev's binds of the host's nodes as they are.
  std::string dev_dir;
};

// A mount inside the workspace (for the protected paths).
struct BwrapMount {
  enum class Kind {
    kBind,           // the directory `fd` bound onto itself (a mount point: cannot be moved)
    kReadOnlyBind,   // the file or directory `fd` bound read-only
    kReadOnlyTmpfs,  // an empty read-only directory
  };
  Kind kind;
  std::string path;  // workspace-relative
  int fd = -1;       // the executor's descriptor, for kBind and kReadOnlyBind
};

// One command: the executor's descriptors bwrap reads, and what to run where.
struct BwrapCommand {
  int seccomp_fd = -1;                  // the seccomp program (bwrap --seccomp)
  int status_fd = -1;                   // the write end of the status pipe (bwrap --json-status-fd)
  int workspace_fd = -1;                // the workspace directory, bound at kSandboxWorkspace
  int passwd_fd = -1;                   // the content of /etc/passwd (-1: in etc_dir)
  int group_fd = -1;                    // the content of /etc/group (-1: in etc_dir)
  std::vector<BwrapMount> mounts;       // outer paths first
  std::string cwd = kSandboxWorkspace;  // inside the sandbox
  std::vector<std::string> argv;        // the command
  bool share_network = false;           // --share-net (and /etc/resolv.conf) instead of none
  std::vector<std::string> read_only_paths;  // absolute host paths bound read-only, same place
  // A resident sandbox (SANDBOX.md): when set, this host file is bound read-only at
  // kSandboxInitPath and runs as the sandbox's pid 1 (--as-pid-1) instead of `argv`, with
  // `init_socket_fd` passed to it and its number as its argument.
  std::string init_binary;
  int init_socket_fd = -1;
};

// What to start: `argv` names each descriptor by its number in the child, which is 3 + its
// index in `pass_fds` (ChildSpec's convention).
struct BwrapInvocation {
  std::vector<std::string> argv;
  std::vector<int> pass_fds;
};

// The arguments every command shares: bwrap itself, every namespace (the user one explicitly,
// so that a root executor does not run commands as root with capabilities), the uid and gid,
// no capabilities, death with the executor, a new session, and the read-only system (/usr,
// the system directories, a short list of /etc files, /proc, /dev with dev_dir's nodes over
// the host's, and a private /tmp).
std::vector<std::string> BwrapStaticArgs(const BwrapConfig& config);

// `static_args` (from BwrapStaticArgs) followed by what is particular to `command`: the
// passwd and group data (unless both descriptors are -1), the workspace, the protected mounts, the
// root remounted read-only, the working directory, the seccomp program, the status descriptor, "--"
// and the command.
BwrapInvocation BuildBwrapInvocation(const std::vector<std::string>& static_args,
                                     const BwrapCommand& command);

}  // namespace rein

#endif  // REIN_EXECUTOR_SERVICE_BWRAP_COMMAND_H_
