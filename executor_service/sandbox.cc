// The sandbox mutating tools run in.
#include "executor_service/sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <signal.h>
#include <string.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <functional>
#include <set>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "executor_service/seccomp_filter.h"

namespace rein {
namespace {

// Files of /etc a command may need (dynamic linker, alternatives, time zone, certificates).
// Not all of /etc: the command's host uid may be root, which reads root-only files.
constexpr const char* kEtcEntries[] = {
    "alternatives",   "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "timezone",
    "nsswitch.conf",  "ssl/certs",   "ca-certificates", "ca-certificates.conf", "mime.types",
    "protocols",      "services",    "hosts",       "os-release",   "debian_version",
    "bash.bashrc",    "profile",     "inputrc",     "gitconfig",    "environment",
};
// Top-level system directories (or symlinks to /usr) mirrored read-only.
constexpr const char* kSystemDirs[] = {"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"};

absl::Status Errno(absl::string_view what) {
  return absl::InternalError(absl::StrCat(what, ": ", strerror(errno)));
}

// A pipe holding `data` (small: below the pipe buffer); returns the read end.
absl::StatusOr<UniqueFd> DataPipe(absl::string_view data) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return Errno("pipe");
  UniqueFd read_end(fds[0]);
  UniqueFd write_end(fds[1]);
  while (!data.empty()) {
    const ssize_t n = write(write_end.get(), data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Errno("pipe write");
    data.remove_prefix(static_cast<size_t>(n));
  }
  return read_end;
}

// Reads what is in `fd` now (non-blocking), up to 64 KiB.
std::string ReadAvailable(int fd) {
  fcntl(fd, F_SETFL, O_NONBLOCK);
  std::string out;
  char buf[4096];
  while (out.size() < (64 << 10)) {
    const ssize_t n = read(fd, buf, sizeof(buf));
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

// The "child-pid" bwrap reported on its --json-status-fd, or 0.
int ChildPid(const std::string& status) {
  const size_t at = status.find("\"child-pid\"");
  if (at == std::string::npos) return 0;
  size_t i = status.find(':', at);
  if (i == std::string::npos) return 0;
  ++i;
  while (i < status.size() && status[i] == ' ') ++i;
  int pid = 0;
  while (i < status.size() && status[i] >= '0' && status[i] <= '9' && pid < (1 << 26)) {
    pid = pid * 10 + (status[i++] - '0');
  }
  return pid;
}

// Waits until process `pid` (not necessarily our child) has exited, for at most `limit`.
void WaitForExit(int pid, absl::Duration limit) {
  if (pid <= 1) return;
  UniqueFd pidfd(static_cast<int>(syscall(SYS_pidfd_open, pid, 0)));
  if (!pidfd.valid()) return;  // already gone
  struct pollfd fd = {pidfd.get(), POLLIN, 0};
  poll(&fd, 1, static_cast<int>(absl::ToInt64Milliseconds(limit)));
}

// Finds `name` in kSandboxPath on the host (for unsandboxed runs).
std::string LookUp(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  for (absl::string_view dir : absl::StrSplit(kSandboxPath, ':')) {
    std::string candidate = absl::StrCat(dir, "/", name);
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

// What the sandbox does about one protected path, decided per command.
struct ProtectedMount {
  enum Kind { kPin, kReadOnly, kPlaceholder, kFilePlaceholder } kind;
  std::string path;  // workspace-relative
  UniqueFd fd;       // for kPin and kReadOnly; for kFilePlaceholder once it exists
};

// The content of the file placeholder kept for the missing protected path `path`, or null when
// a missing `path` gets an empty directory.
const char* FilePlaceholderContent(absl::string_view path) {
  for (const FilePlaceholder& placeholder : kFilePlaceholders) {
    if (path == placeholder.path) return placeholder.content;
  }
  return nullptr;
}

// Plans the mounts that keep `protected_paths` read-only: each existing protected path is
// bound read-only; each existing directory above one is bound onto itself, which makes it a
// mount point that cannot be renamed or removed (so the protected path cannot be moved away
// and recreated); a missing one gets an empty read-only directory at its first missing
// component, so it cannot be created either (when that component is the protected path itself
// and it is in kFilePlaceholders, a read-only file with the placeholder's content instead,
// created by the caller).
// `is_placeholder` says whether an existing entry is only another command's placeholder, to be
// treated as missing.
absl::StatusOr<std::vector<ProtectedMount>> PlanProtectedMounts(
    const Workspace& workspace, const ProtectedPaths& paths,
    const std::function<bool(const std::string&)>& is_placeholder) {
  std::vector<ProtectedMount> mounts;
  std::set<std::string> pinned;
  for (const std::string& path : paths.paths()) {
    std::vector<std::string> parts = absl::StrSplit(path, '/');
    std::string prefix;
    for (size_t i = 0; i < parts.size(); ++i) {
      prefix = i == 0 ? parts[0] : absl::StrCat(prefix, "/", parts[i]);
      const bool leaf = i + 1 == parts.size();
      const bool file_placeholder = leaf && FilePlaceholderContent(prefix) != nullptr;
      if (is_placeholder(prefix)) {
        UniqueFd existing;
        if (file_placeholder) {
          // Another command's: bound read-only here too, and counted, so that it stays.
          absl::StatusOr<UniqueFd> fd = OpenBeneath(workspace.dir_fd(), prefix,
                                                    O_PATH | O_NOFOLLOW, RESOLVE_NO_SYMLINKS);
          if (!fd.ok()) return fd.status();
          existing = *std::move(fd);
        }
        mounts.push_back({file_placeholder ? ProtectedMount::kFilePlaceholder
                                           : ProtectedMount::kPlaceholder,
                          prefix, std::move(existing)});
        break;
      }
      absl::StatusOr<UniqueFd> fd = OpenBeneath(workspace.dir_fd(), prefix, O_PATH | O_NOFOLLOW,
                                                RESOLVE_NO_SYMLINKS);
      if (!fd.ok()) {
        if (fd.status().code() == absl::StatusCode::kNotFound) {
          mounts.push_back({file_placeholder ? ProtectedMount::kFilePlaceholder
                                             : ProtectedMount::kPlaceholder,
                            prefix, UniqueFd()});
          break;
        }
        return absl::FailedPreconditionError(absl::StrCat(
            "protected path \"", path, "\" cannot be made read-only: ", fd.status().message(),
            " (a protected path and the directories above it must not be symbolic links)"));
      }
      struct stat st;
      if (fstat(fd->get(), &st) != 0) return Errno("fstat");
      if (S_ISLNK(st.st_mode)) {
        return absl::FailedPreconditionError(absl::StrCat(
            "protected path \"", path, "\": \"", prefix, "\" is a symbolic link"));
      }
      if (leaf || !S_ISDIR(st.st_mode)) {
        // The path itself, or a file where a directory above it would be.
        mounts.push_back({ProtectedMount::kReadOnly, prefix, *std::move(fd)});
        break;
      }
      if (pinned.insert(prefix).second) {
        mounts.push_back({ProtectedMount::kPin, prefix, *std::move(fd)});
      }
    }
  }
  // Outer paths first: a parent sorts before its children.
  std::stable_sort(mounts.begin(), mounts.end(),
                   [](const ProtectedMount& a, const ProtectedMount& b) { return a.path < b.path; });
  return mounts;
}

// The parent directory of the workspace-relative `path` (symbolic links refused) and the name.
absl::StatusOr<UniqueFd> OpenParentOf(const Workspace& workspace, const std::string& path,
                                      std::string* name) {
  const size_t slash = path.rfind('/');
  const std::string parent = slash == std::string::npos ? "." : path.substr(0, slash);
  *name = slash == std::string::npos ? path : path.substr(slash + 1);
  return OpenBeneath(workspace.dir_fd(), parent, O_PATH | O_DIRECTORY, RESOLVE_NO_SYMLINKS);
}

// Removes the placeholder at `path`: the empty directory bwrap created as a mount point, or
// the file the executor created, when it still holds only the placeholder's content.
void RemovePlaceholder(const Workspace& workspace, const ProtectedMount& mount) {
  std::string name;
  absl::StatusOr<UniqueFd> dir = OpenParentOf(workspace, mount.path, &name);
  if (!dir.ok()) return;
  if (mount.kind == ProtectedMount::kPlaceholder) {
    unlinkat(dir->get(), name.c_str(), AT_REMOVEDIR);  // only when empty
    return;
  }
  const char* content = FilePlaceholderContent(mount.path);
  struct stat st;
  if (content == nullptr || fstatat(dir->get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 ||
      !S_ISREG(st.st_mode) || st.st_size != static_cast<off_t>(strlen(content))) {
    return;
  }
  unlinkat(dir->get(), name.c_str(), 0);
}

// Creates the file placeholder `mount` (missing until now) read-only with its content; sets
// mount->fd to it.
absl::Status CreateFilePlaceholder(const Workspace& workspace, ProtectedMount* mount) {
  const char* content = FilePlaceholderContent(mount->path);
  if (content == nullptr) return absl::InternalError("no content for a file placeholder");
  std::string name;
  absl::StatusOr<UniqueFd> dir = OpenParentOf(workspace, mount->path, &name);
  if (!dir.ok()) return dir.status();
  UniqueFd file(openat(dir->get(), name.c_str(),
                       O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0444));
  if (!file.valid()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "protected path \"", mount->path, "\" cannot be made read-only: ", strerror(errno)));
  }
  const size_t size = strlen(content);
  if (write(file.get(), content, size) != static_cast<ssize_t>(size)) {
    const int err = errno;
    file.Reset();
    unlinkat(dir->get(), name.c_str(), 0);
    return absl::InternalError(absl::StrCat("writing the placeholder \"", mount->path,
                                            "\": ", strerror(err)));
  }
  mount->fd = std::move(file);
  return absl::OkStatus();
}

// The key of `path` in `workspace` for the placeholder counts.
std::string PlaceholderKey(const Workspace& workspace, const std::string& path) {
  struct stat st;
  if (fstat(workspace.dir_fd(), &st) != 0) return path;
  return absl::StrCat(st.st_dev, ":", st.st_ino, "/", path);
}

}  // namespace

absl::StatusOr<std::unique_ptr<Sandbox>> Sandbox::Create(SandboxOptions options) {
  if (options.mode == SandboxMode::kNone && !options.allow_unsandboxed) {
    return absl::InvalidArgumentError(
        "sandbox: none is refused unless --allow_unsandboxed is also given");
  }
  if (options.max_concurrent < 1) {
    return absl::InvalidArgumentError("max_concurrent: must be at least 1");
  }
  if (options.max_pids < 8) return absl::InvalidArgumentError("max_pids: must be at least 8");
  absl::StatusOr<ProtectedPaths> protected_paths = ProtectedPaths::Create(options.protected_paths);
  if (!protected_paths.ok()) return protected_paths.status();
  std::unique_ptr<Sandbox> sandbox(
      new Sandbox(std::move(options), *std::move(protected_paths)));

  const std::string& cgroup = sandbox->options_.cgroup;
  if (cgroup != "off") {
    absl::StatusOr<std::unique_ptr<PidsCgroupParent>> parent =
        cgroup.empty() ? PidsCgroupParent::Detect() : PidsCgroupParent::Open(cgroup);
    if (parent.ok()) {
      sandbox->cgroups_ = *std::move(parent);
    } else if (!cgroup.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("sandbox_cgroup: ", parent.status().message()));
    } else {
      sandbox->cgroup_note_ = std::string(parent.status().message());
    }
  }

  if (sandbox->options_.mode == SandboxMode::kNone) {
    sandbox->state_ = State::kUnsandboxed;
    return sandbox;
  }
  sandbox->BuildStaticArgs();
  absl::Status probe = sandbox->Probe();
  if (probe.ok()) {
    sandbox->state_ = State::kBwrap;
  } else {
    sandbox->state_ = State::kUnavailable;
    sandbox->unavailable_reason_ = std::string(probe.message());
  }
  return sandbox;
}

void Sandbox::BuildStaticArgs() {
  const std::string uid = absl::StrCat(options_.uid);
  const std::string gid = absl::StrCat(options_.gid);
  std::vector<std::string>& a = static_args_;
  a = {options_.bwrap_path,
       // Every namespace, the user one explicitly: started by root, bwrap would otherwise
       // run the command as root with capabilities.
       "--unshare-all", "--unshare-user", "--disable-userns", "--uid", uid, "--gid", gid,
       "--cap-drop", "ALL", "--die-with-parent", "--new-session", "--hostname", "sandbox",
       "--ro-bind", "/usr", "/usr"};
  for (const char* dir : kSystemDirs) {
    struct stat st;
    if (lstat(dir, &st) != 0) continue;
    if (S_ISLNK(st.st_mode)) {
      char target[PATH_MAX + 1];
      const ssize_t n = readlink(dir, target, sizeof(target) - 1);
      if (n <= 0) continue;
      a.insert(a.end(), {"--symlink", std::string(target, static_cast<size_t>(n)), dir});
    } else if (S_ISDIR(st.st_mode)) {
      a.insert(a.end(), {"--ro-bind", dir, dir});
    }
  }
  a.insert(a.end(), {"--dir", "/etc"});
  for (const char* entry : kEtcEntries) {
    const std::string path = absl::StrCat("/etc/", entry);
    a.insert(a.end(), {"--ro-bind-try", path, path});
  }
  a.insert(a.end(), {"--proc", "/proc", "--dev", "/dev", "--size",
                     absl::StrCat(options_.tmp_size_bytes), "--tmpfs", "/tmp"});
}

std::vector<std::string> Sandbox::Environment(const std::string& home) const {
  return {absl::StrCat("PATH=", kSandboxPath), absl::StrCat("HOME=", home), "TMPDIR=/tmp",
          "LANG=C.UTF-8", "LC_ALL=C.UTF-8", "TERM=dumb", "SHELL=/bin/sh", "USER=sandbox",
          "LOGNAME=sandbox"};
}

absl::Status Sandbox::Probe() {
  if (access(options_.bwrap_path.c_str(), X_OK) != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        options_.bwrap_path, " is not an executable (", strerror(errno),
        "); install bubblewrap (apt-get install bubblewrap)"));
  }
  UniqueFd root(open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!root.valid()) return Errno("open /");
  Workspace probe("probe", std::move(root));
  CommandRequest request;
  request.argv = {"true"};
  request.deadline = absl::Now() + absl::Seconds(20);
  request.max_output_bytes = 4096;
  absl::StatusOr<CommandOutcome> outcome = RunBwrap(probe, request, /*protect=*/false);
  if (!outcome.ok()) return outcome.status();
  if (outcome->child.exit_code != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "bubblewrap cannot start a sandbox (exit ", outcome->child.exit_code, "): ",
        outcome->child.output.substr(0, 512)));
  }
  return absl::OkStatus();
}

std::string Sandbox::Description() const {
  const std::string processes =
      cgroups_ ? absl::StrCat("pids cgroup ", cgroups_->path(), " (max ", options_.max_pids, ")")
               : absl::StrCat("RLIMIT_NPROC ", options_.limits.processes,
                              geteuid() == 0 ? " (does not bind root: no pids cgroup: " : " (",
                              cgroup_note_, ")");
  switch (state_) {
    case State::kBwrap:
      return absl::StrCat("bwrap: user/pid/net/ipc/uts/cgroup namespaces, uid ", options_.uid,
                          ", no capabilities, seccomp, read-only system, writable workspace "
                          "(protected: ",
                          absl::StrJoin(protected_.paths(), ", "), "), processes: ", processes,
                          ", max_concurrent ", options_.max_concurrent);
    case State::kUnsandboxed:
      return "none (unsandboxed: --sandbox=none --allow_unsandboxed; commands run as the "
             "executor's user with its view of the machine)";
    case State::kUnavailable:
      break;
  }
  return absl::StrCat("unavailable: ", unavailable_reason_);
}

absl::Status Sandbox::CheckMutationAllowed() const {
  if (state_ != State::kUnavailable) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "mutating tools are refused: the sandbox is unavailable (", unavailable_reason_,
      "). Fix: install bubblewrap and allow user namespaces (sysctl "
      "user.max_user_namespaces > 0, kernel.unprivileged_userns_clone=1 where it exists), or "
      "start the executor with --sandbox=none --allow_unsandboxed to run without a sandbox"));
}

absl::StatusOr<SandboxSlot> Sandbox::Admit() {
  if (in_use_.fetch_add(1) >= options_.max_concurrent) {
    in_use_.fetch_sub(1);
    return absl::ResourceExhaustedError(absl::StrCat(
        "executor is running ", options_.max_concurrent,
        " sandboxed commands (--max_concurrent); use another executor or retry"));
  }
  return SandboxSlot(&in_use_);
}

absl::StatusOr<CommandOutcome> Sandbox::Run(const Workspace& workspace,
                                            const CommandRequest& request) const {
  if (request.argv.empty() || request.argv[0].empty()) {
    return absl::InvalidArgumentError("the command is empty");
  }
  switch (state_) {
    case State::kBwrap:
      return RunBwrap(workspace, request, /*protect=*/true);
    case State::kUnsandboxed:
      return RunUnsandboxed(workspace, request);
    case State::kUnavailable:
      break;
  }
  return CheckMutationAllowed();
}

absl::StatusOr<CommandOutcome> Sandbox::RunBwrap(const Workspace& workspace,
                                                 const CommandRequest& request,
                                                 bool protect) const {
  std::string cwd = kSandboxWorkspace;
  if (!request.cwd.empty()) {
    absl::StatusOr<UniqueFd> dir = workspace.Open(request.cwd, O_PATH | O_DIRECTORY);
    if (!dir.ok()) return dir.status();
    absl::StatusOr<std::string> relative = workspace.RelativePathOf(dir->get());
    if (!relative.ok()) return relative.status();
    if (!relative->empty()) cwd = absl::StrCat(kSandboxWorkspace, "/", *relative);
  }
  std::vector<ProtectedMount> mounts;
  if (protect) {
    // Planned and counted under the lock, so that a placeholder is never removed between
    // another command's plan and its mount.
    absl::MutexLock lock(&placeholders_mu_);
    absl::StatusOr<std::vector<ProtectedMount>> planned =
        PlanProtectedMounts(workspace, protected_, [&](const std::string& path) {
          placeholders_mu_.AssertHeld();
          return placeholders_.count(PlaceholderKey(workspace, path)) > 0;
        });
    if (!planned.ok()) return planned.status();
    for (ProtectedMount& mount : *planned) {
      if (mount.kind == ProtectedMount::kFilePlaceholder && !mount.fd.valid()) {
        absl::Status created = CreateFilePlaceholder(workspace, &mount);
        if (!created.ok()) {
          // Those counted so far are released below.
          for (ProtectedMount& counted : mounts) {
            if (counted.kind != ProtectedMount::kPin && counted.kind != ProtectedMount::kReadOnly) {
              auto it = placeholders_.find(PlaceholderKey(workspace, counted.path));
              if (it != placeholders_.end() && --it->second == 0) {
                placeholders_.erase(it);
                RemovePlaceholder(workspace, counted);
              }
            }
          }
          return created;
        }
      }
      if (mount.kind == ProtectedMount::kPlaceholder ||
          mount.kind == ProtectedMount::kFilePlaceholder) {
        ++placeholders_[PlaceholderKey(workspace, mount.path)];
      }
      mounts.push_back(std::move(mount));
    }
  }
  absl::Cleanup release_placeholders = [&] {
    absl::MutexLock lock(&placeholders_mu_);
    for (const ProtectedMount& mount : mounts) {
      if (mount.kind != ProtectedMount::kPlaceholder &&
          mount.kind != ProtectedMount::kFilePlaceholder) {
        continue;
      }
      auto it = placeholders_.find(PlaceholderKey(workspace, mount.path));
      if (it == placeholders_.end() || --it->second > 0) continue;
      placeholders_.erase(it);
      RemovePlaceholder(workspace, mount);
    }
  };
  std::unique_ptr<PidsCgroup> cgroup;
  if (cgroups_) {
    absl::StatusOr<std::unique_ptr<PidsCgroup>> created = cgroups_->Create(options_.max_pids);
    if (!created.ok()) return created.status();
    cgroup = *std::move(created);
  }
  absl::StatusOr<UniqueFd> seccomp = SandboxSeccompProgramFd();
  if (!seccomp.ok()) return seccomp.status();
  int status_fds[2];
  if (pipe2(status_fds, O_CLOEXEC) != 0) return Errno("pipe");
  UniqueFd status_read(status_fds[0]);
  UniqueFd status_write(status_fds[1]);
  absl::StatusOr<UniqueFd> passwd = DataPipe(absl::StrCat(
      "root:x:0:0:root:/root:/bin/sh\nsandbox:x:", options_.uid, ":", options_.gid,
      ":sandbox:", kSandboxWorkspace, ":/bin/sh\n"));
  if (!passwd.ok()) return passwd.status();
  absl::StatusOr<UniqueFd> group =
      DataPipe(absl::StrCat("root:x:0:\nsandbox:x:", options_.gid, ":\n"));
  if (!group.ok()) return group.status();

  ChildSpec spec;
  spec.path = options_.bwrap_path;
  spec.argv = static_args_;
  // Descriptors: 3 seccomp, 4 status, 5 workspace, 6 passwd, 7 group, 8... protected paths.
  spec.pass_fds = {seccomp->get(), status_write.get(), workspace.dir_fd(), passwd->get(),
                   group->get()};
  std::vector<std::string>& a = spec.argv;
  a.insert(a.end(), {"--ro-bind-data", "6", "/etc/passwd", "--ro-bind-data", "7", "/etc/group",
                     "--bind-fd", "5", kSandboxWorkspace});
  for (const ProtectedMount& mount : mounts) {
    const std::string dest = absl::StrCat(kSandboxWorkspace, "/", mount.path);
    if (mount.kind == ProtectedMount::kPlaceholder) {
      a.insert(a.end(), {"--size", "4096", "--tmpfs", dest, "--remount-ro", dest});
      continue;
    }
    const std::string fd = absl::StrCat(3 + spec.pass_fds.size());
    spec.pass_fds.push_back(mount.fd.get());
    // A file placeholder is read-only like a protected file.
    a.insert(a.end(), {mount.kind == ProtectedMount::kPin ? "--bind-fd" : "--ro-bind-fd", fd, dest});
  }
  // The root (where /etc and the mount points live) becomes read-only too.
  a.insert(a.end(), {"--remount-ro", "/", "--chdir", cwd, "--seccomp", "3", "--json-status-fd",
                     "4", "--"});
  a.insert(a.end(), request.argv.begin(), request.argv.end());
  spec.env = Environment(kSandboxWorkspace);
  spec.limits = options_.limits;
  spec.cgroup_procs_fd = cgroup ? cgroup->procs_fd() : -1;
  spec.new_session = true;

  std::string status;
  absl::StatusOr<ChildOutcome> child =
      RunChild(spec, request.deadline, request.max_output_bytes, [&](int /*pid*/) {
        // bwrap's pid 1 dies with bwrap (--die-with-parent), and the kernel kills the rest of
        // its pid namespace before pid 1 is gone: wait for that, so that nothing of the
        // command outlives the call. The cgroup catches anything still running.
        status += ReadAvailable(status_read.get());
        WaitForExit(ChildPid(status), absl::Seconds(2));
        if (cgroup) cgroup->KillAll();
      });
  status_write.Reset();
  status += ReadAvailable(status_read.get());
  cgroup.reset();
  std::move(release_placeholders).Invoke();
  if (!child.ok()) return child.status();
  if (!absl::StrContains(status, "\"child-pid\"") && !child->timed_out) {
    // bwrap failed before it started the command; what it said is the output.
    return absl::FailedPreconditionError(absl::StrCat(
        "the sandbox could not be set up: ", child->output.substr(0, 1024)));
  }
  CommandOutcome outcome;
  outcome.child = *std::move(child);
  outcome.sandboxed = true;
  return outcome;
}

absl::StatusOr<CommandOutcome> Sandbox::RunUnsandboxed(const Workspace& workspace,
                                                       const CommandRequest& request) const {
  absl::StatusOr<UniqueFd> dir =
      workspace.Open(request.cwd.empty() ? "." : request.cwd, O_PATH | O_DIRECTORY);
  if (!dir.ok()) return dir.status();
  char real[PATH_MAX + 1];
  const ssize_t n = readlink(absl::StrCat("/proc/self/fd/", workspace.dir_fd()).c_str(), real,
                             sizeof(real) - 1);
  const std::string workspace_path = n > 0 ? std::string(real, static_cast<size_t>(n)) : "/";
  ChildSpec spec;
  spec.path = LookUp(request.argv[0]);
  if (spec.path.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("command \"", request.argv[0], "\" not found in ", kSandboxPath));
  }
  spec.argv = request.argv;
  spec.env = Environment(workspace_path);
  spec.cwd_fd = dir->get();
  spec.limits = options_.limits;
  std::unique_ptr<PidsCgroup> cgroup;
  if (cgroups_) {
    absl::StatusOr<std::unique_ptr<PidsCgroup>> created = cgroups_->Create(options_.max_pids);
    if (!created.ok()) return created.status();
    cgroup = *std::move(created);
  }
  spec.cgroup_procs_fd = cgroup ? cgroup->procs_fd() : -1;
  absl::StatusOr<ChildOutcome> child =
      RunChild(spec, request.deadline, request.max_output_bytes, [&](int pid) {
        kill(-pid, SIGKILL);  // its process group (it called setsid)
        if (cgroup) cgroup->KillAll();
      });
  if (!child.ok()) return child.status();
  CommandOutcome outcome;
  outcome.child = *std::move(child);
  outcome.sandboxed = false;
  return outcome;
}

}  // namespace rein
