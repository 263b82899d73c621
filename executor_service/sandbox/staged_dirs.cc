// What the executor stages once at start for every sandbox: its /etc and its device nodes.
#include "executor_service/sandbox/staged_dirs.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <filesystem>
#include <system_error>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "executor_service/process/errno_status.h"
#include "executor_service/process/pids_cgroup.h"
#include "executor_service/process/unique_fd.h"
#include "executor_service/sandbox/bwrap_command.h"

namespace rein {
namespace {

bool WriteFile(const std::filesystem::path& path, absl::string_view data) {
  UniqueFd fd(open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (!fd.valid()) return false;
  while (!data.empty()) {
    const ssize_t n = write(fd.get(), data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

// The directory TMPDIR names, or /tmp.
std::string TempParent() {
  const char* tmpdir = getenv("TMPDIR");
  return tmpdir != nullptr && tmpdir[0] == '/' ? tmpdir : "/tmp";
}

// Removes the staged directories ("rein-sandbox-<what>-<pid namespace>-<pid>-*", what being etc
// or dev) in `parent` of executors of this pid namespace that are gone (killed before they could
// remove their own); never one of a live process, nor one of another pid namespace.
void RemoveStaleDirs(const std::string& parent, absl::string_view what, uint64_t pid_namespace) {
  namespace fs = std::filesystem;
  const std::string prefix = absl::StrCat("rein-sandbox-", what, "-", pid_namespace, "-");
  std::error_code error;
  for (auto it = fs::directory_iterator(parent, error); !error && it != fs::directory_iterator();
       it.increment(error)) {
    const std::string name = it->path().filename().string();
    if (pid_namespace == 0 || !absl::StartsWith(name, prefix)) continue;
    std::vector<std::string> parts = absl::StrSplit(name.substr(prefix.size()), '-');
    int pid = 0;
    if (parts.size() != 2 || !absl::SimpleAtoi(parts[0], &pid) || pid <= 0) continue;
    if (kill(pid, 0) == 0 || errno != ESRCH) continue;  // alive (or not ours to ask)
    std::error_code ignored;
    fs::remove_all(it->path(), ignored);
  }
}

}  // namespace

// The passwd and group files of the sandbox: root and the command's user.
std::string PasswdData(uint32_t uid, uint32_t gid) {
  return absl::StrCat("root:x:0:0:root:/root:/bin/sh\nsandbox:x:", uid, ":", gid,
                      ":sandbox:", kSandboxWorkspace, ":/bin/sh\n");
}
std::string GroupData(uint32_t gid) { return absl::StrCat("root:x:0:\nsandbox:x:", gid, ":\n"); }

// Makes the sandbox's /etc once: a copy of each of SandboxEtcEntries that exists on the host
// (a symbolic link at the top followed, as a bind would; links inside directories kept, they
// resolve inside the sandbox), passwd and group, and an empty resolv.conf where --share-net
// binds the host's. One read-only bind of it replaces a bind per entry: bubblewrap's mounts
// are most of a command's start-up time. Copies what the host has now: a change to those files
// of the host's /etc is seen by commands after the executor restarts.
absl::StatusOr<std::string> StageEtc(uint32_t uid, uint32_t gid) {
  namespace fs = std::filesystem;
  const std::string parent = TempParent();
  const uint64_t pid_namespace = PidNamespace();
  RemoveStaleDirs(parent, "etc", pid_namespace);
  std::string dir =
      absl::StrCat(parent, "/rein-sandbox-etc-", pid_namespace, "-", getpid(), "-XXXXXX");
  if (mkdtemp(dir.data()) == nullptr) return ErrnoStatus(absl::StrCat("mkdtemp ", dir));
  std::error_code error;
  auto fail = [&](absl::string_view what) {
    fs::remove_all(dir, error);
    return absl::InternalError(absl::StrCat("staging the sandbox's /etc: ", what));
  };
  if (chmod(dir.c_str(), 0755) != 0) return fail(strerror(errno));
  constexpr uintmax_t kMaxBytes = 64 << 20;
  uintmax_t bytes = 0;
  for (const std::string& entry : SandboxEtcEntries()) {
    const fs::path source = fs::path("/etc") / entry;
    fs::path resolved = fs::canonical(source, error);
    if (error) continue;  // absent on this host (or a dangling link): as --ro-bind-try
    const fs::path target = fs::path(dir) / entry;
    fs::create_directories(target.parent_path(), error);
    if (error) return fail(absl::StrCat(entry, ": ", error.message()));
    fs::copy(resolved, target, fs::copy_options::recursive | fs::copy_options::copy_symlinks,
             error);
    if (error) return fail(absl::StrCat(entry, ": ", error.message()));
    for (auto it = fs::recursive_directory_iterator(target, error);
         !error && it != fs::recursive_directory_iterator(); it.increment(error)) {
      if (it->is_regular_file(error) && !it->is_symlink(error)) bytes += it->file_size(error);
    }
    if (fs::is_regular_file(target, error) && !fs::is_symlink(target, error)) {
      bytes += fs::file_size(target, error);
    }
    if (bytes > kMaxBytes) return fail(absl::StrCat("more than ", kMaxBytes, " bytes"));
  }
  if (!WriteFile(fs::path(dir) / "passwd", PasswdData(uid, gid)) ||
      !WriteFile(fs::path(dir) / "group", GroupData(gid)) ||
      !WriteFile(fs::path(dir) / "resolv.conf", "")) {
    return fail(strerror(errno));
  }
  return dir;
}

// True when a command could chmod (or chown, utime, setfacl) a host device node that bubblewrap's
// --dev binds: bubblewrap maps the sandbox's uid to the executor's real uid, and an inode that
// uid owns belongs to the command inside, no capability needed. So it is when the executor is
// root (or whoever owns the host's /dev/null, in a container's own /dev).
bool HostDevNodesMapped() {
  for (const SandboxDevNode& node : SandboxDevNodes()) {
    struct stat st;
    if (stat(absl::StrCat("/dev/", node.name).c_str(), &st) == 0 && st.st_uid == getuid()) {
      return true;
    }
  }
  return false;
}

// Makes the sandbox's own device nodes once (SandboxDevNodes, mode 0666), owned by a host uid
// and gid bubblewrap does not map (65534, nobody; a command sees the overflow uid and can change
// nothing of them), in a private directory ("rein-sandbox-dev-*") of the first of TMPDIR (or
// /tmp), /var/tmp and /dev on a writable file system mounted without nodev (a bind of a node
// from a nodev mount cannot be opened). Needs CAP_MKNOD and CAP_CHOWN; says why when it fails.
absl::StatusOr<std::string> StageDev(uint32_t sandbox_host_uid) {
  const uint32_t owner = sandbox_host_uid != 65534 ? 65534 : 65533;
  const uint64_t pid_namespace = PidNamespace();
  std::vector<std::string> tried;
  for (const std::string& parent : {TempParent(), std::string("/var/tmp"), std::string("/dev")}) {
    struct statvfs fs_info;
    if (statvfs(parent.c_str(), &fs_info) != 0) {
      tried.push_back(absl::StrCat(parent, ": ", strerror(errno)));
      continue;
    }
    if ((fs_info.f_flag & (ST_NODEV | ST_RDONLY)) != 0) {
      tried.push_back(absl::StrCat(parent, ": mounted nodev or read-only"));
      continue;
    }
    RemoveStaleDirs(parent, "dev", pid_namespace);
    std::string dir =
        absl::StrCat(parent, "/rein-sandbox-dev-", pid_namespace, "-", getpid(), "-XXXXXX");
    if (mkdtemp(dir.data()) == nullptr) {
      tried.push_back(absl::StrCat(parent, ": mkdtemp: ", strerror(errno)));
      continue;
    }
    std::string failed;
    if (chmod(dir.c_str(), 0755) != 0) failed = absl::StrCat("chmod: ", strerror(errno));
    for (const SandboxDevNode& node : SandboxDevNodes()) {
      if (!failed.empty()) break;
      const std::string path = absl::StrCat(dir, "/", node.name);
      struct stat st;
      if (mknod(path.c_str(), S_IFCHR | 0666, makedev(node.major, node.minor)) != 0) {
        failed = absl::StrCat("mknod ", node.name, ": ", strerror(errno));
      } else if (chmod(path.c_str(), 0666) != 0 || chown(path.c_str(), owner, owner) != 0) {
        failed = absl::StrCat(node.name, ": ", strerror(errno));
      } else if (lstat(path.c_str(), &st) != 0 || !S_ISCHR(st.st_mode) || st.st_uid != owner ||
                 st.st_rdev != makedev(node.major, node.minor)) {
        failed = absl::StrCat(node.name, ": not the node made");
      }
    }
    if (failed.empty()) return dir;
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
    tried.push_back(absl::StrCat(parent, ": ", failed));
  }
  return absl::FailedPreconditionError(
      absl::StrCat("the sandbox's /dev cannot be staged (", absl::StrJoin(tried, "; "), ")"));
}

}  // namespace rein
