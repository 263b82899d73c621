// The bubblewrap command line of a sandboxed command.
#include "executor_service/sandbox/bwrap_command.h"

#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <iterator>

#include "absl/strings/str_cat.h"

namespace rein {
namespace {

// SandboxEtcEntries.
constexpr const char* kEtcEntries[] = {
    "alternatives",   "ld.so.cache",   "ld.so.conf", "ld.so.conf.d",    "localtime",
    "timezone",       "nsswitch.conf", "ssl/certs",  "ca-certificates", "ca-certificates.conf",
    "mime.types",     "protocols",     "services",   "hosts",           "os-release",
    "debian_version", "bash.bashrc",   "profile",    "inputrc",         "gitconfig",
    "environment",
};
// SandboxDevNodes: what bubblewrap's --dev binds (its devnodes[]), with the kernel's numbers.
constexpr SandboxDevNode kDevNodes[] = {
    {"null", 1, 3},   {"zero", 1, 5},    {"full", 1, 7},
    {"random", 1, 8}, {"urandom", 1, 9}, {"tty", 5, 0},
};
// Top-level system directories (or symlinks to /usr) mirrored read-only.
constexpr const char* kSystemDirs[] = {"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"};

// The descriptors every command passes first, as the child numbers them.
constexpr int kSeccompChildFd = 3;
constexpr int kStatusChildFd = 4;
constexpr int kWorkspaceChildFd = 5;
constexpr int kPasswdChildFd = 6;
constexpr int kGroupChildFd = 7;

}  // namespace

std::vector<std::string> SandboxEtcEntries() {
  return std::vector<std::string>(std::begin(kEtcEntries), std::end(kEtcEntries));
}

std::vector<SandboxDevNode> SandboxDevNodes() {
  return std::vector<SandboxDevNode>(std::begin(kDevNodes), std::end(kDevNodes));
}

std::vector<SystemDir> HostSystemDirs() {
  std::vector<SystemDir> dirs;
  for (const char* dir : kSystemDirs) {
    struct stat st;
    if (lstat(dir, &st) != 0) continue;
    if (S_ISLNK(st.st_mode)) {
      char target[PATH_MAX + 1];
      const ssize_t n = readlink(dir, target, sizeof(target) - 1);
      if (n <= 0) continue;
      dirs.push_back({dir, std::string(target, static_cast<size_t>(n))});
    } else if (S_ISDIR(st.st_mode)) {
      dirs.push_back({dir, ""});
    }
  }
  return dirs;
}

std::vector<std::string> BwrapStaticArgs(const BwrapConfig& config) {
  const std::string uid = absl::StrCat(config.uid);
  const std::string gid = absl::StrCat(config.gid);
  std::vector<std::string> a = {config.bwrap_path,
                                // Every namespace, the user one explicitly: started by root, bwrap
                                // would otherwise run the command as root with capabilities.
                                "--unshare-all", "--unshare-user", "--disable-userns", "--uid", uid,
                                "--gid", gid, "--cap-drop", "ALL", "--die-with-parent",
                                "--new-session", "--hostname", "sandbox", "--ro-bind", "/usr",
                                "/usr"};
  for (const SystemDir& dir : config.system_dirs) {
    if (!dir.symlink_target.empty()) {
      a.insert(a.end(), {"--symlink", dir.symlink_target, dir.path});
    } else {
      a.insert(a.end(), {"--ro-bind", dir.path, dir.path});
    }
  }
  if (!config.etc_dir.empty()) {
    a.insert(a.end(), {"--ro-bind", config.etc_dir, "/etc"});
  } else {
    a.insert(a.end(), {"--dir", "/etc"});
    for (const char* entry : kEtcEntries) {
      const std::string path = absl::StrCat("/etc/", entry);
      a.insert(a.end(), {"--ro-bind-try", path, path});
    }
  }
  a.insert(a.end(), {"--proc", "/proc", "--dev", "/dev"});
  if (!config.dev_dir.empty()) {
    for (const SandboxDevNode& node : kDevNodes) {
      a.insert(a.end(), {"--dev-bind", absl::StrCat(config.dev_dir, "/", node.name),
                         absl::StrCat("/dev/", node.name)});
    }
  }
  a.insert(a.end(), {"--size", absl::StrCat(config.tmp_size_bytes), "--tmpfs", "/tmp"});
  return a;
}

BwrapInvocation BuildBwrapInvocation(const std::vector<std::string>& static_args,
                                     const BwrapCommand& command) {
  BwrapInvocation out;
  out.argv = static_args;
  out.pass_fds = {command.seccomp_fd, command.status_fd, command.workspace_fd};
  std::vector<std::string>& a = out.argv;
  if (command.passwd_fd >= 0 || command.group_fd >= 0) {
    out.pass_fds.insert(out.pass_fds.end(), {command.passwd_fd, command.group_fd});
    a.insert(a.end(), {"--ro-bind-data", absl::StrCat(kPasswdChildFd), "/etc/passwd",
                       "--ro-bind-data", absl::StrCat(kGroupChildFd), "/etc/group"});
  }
  a.insert(a.end(), {"--bind-fd", absl::StrCat(kWorkspaceChildFd), kSandboxWorkspace});
  // Protected paths missing under one missing directory share its placeholder (.git for
  // .git/config, .git/hooks, ...): it is mounted once. Nothing else is mounted beneath a
  // placeholder (what lies below it does not exist), so a second one would only hide the first.
  std::vector<std::string> placeholders;
  for (const BwrapMount& mount : command.mounts) {
    const std::string dest = absl::StrCat(kSandboxWorkspace, "/", mount.path);
    if (mount.kind == BwrapMount::Kind::kReadOnlyTmpfs) {
      if (std::find(placeholders.begin(), placeholders.end(), dest) != placeholders.end()) {
        continue;
      }
      placeholders.push_back(dest);
      a.insert(a.end(), {"--size", "4096", "--tmpfs", dest, "--remount-ro", dest});
      continue;
    }
    const std::string fd = absl::StrCat(3 + out.pass_fds.size());
    out.pass_fds.push_back(mount.fd);
    a.insert(a.end(),
             {mount.kind == BwrapMount::Kind::kBind ? "--bind-fd" : "--ro-bind-fd", fd, dest});
  }
  for (const std::string& path : command.read_only_paths) {
    a.insert(a.end(), {"--ro-bind", path, path});
  }
  if (command.share_network) {
    a.insert(a.end(), {"--share-net", "--ro-bind-try", "/etc/resolv.conf", "/etc/resolv.conf"});
  }
  std::string init_socket;
  if (!command.init_binary.empty()) {
    init_socket = absl::StrCat(3 + out.pass_fds.size());
    out.pass_fds.push_back(command.init_socket_fd);
    a.insert(a.end(), {"--as-pid-1", "--ro-bind", command.init_binary, kSandboxInitPath});
  }
  // The root (where /etc and the mount points live) becomes read-only too.
  a.insert(a.end(),
           {"--remount-ro", "/", "--chdir", command.cwd, "--seccomp", absl::StrCat(kSeccompChildFd),
            "--json-status-fd", absl::StrCat(kStatusChildFd), "--"});
  if (!command.init_binary.empty()) {
    a.insert(a.end(), {kSandboxInitPath, init_socket});
  } else {
    a.insert(a.end(), command.argv.begin(), command.argv.end());
  }
  return out;
}

}  // namespace rein
