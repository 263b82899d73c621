// The sandbox mutating tools run in.
#include "executor_service/sandbox/sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <system_error>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "common/log.h"
#include "executor_service/process/errno_status.h"
#include "executor_service/sandbox/seccomp_filter.h"
#include "executor_service/sandbox/staged_dirs.h"

namespace rein {
namespace {

// A pipe holding `data` (small: below the pipe buffer); returns the read end.
absl::StatusOr<UniqueFd> DataPipe(absl::string_view data) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return ErrnoStatus("pipe");
  UniqueFd read_end(fds[0]);
  UniqueFd write_end(fds[1]);
  while (!data.empty()) {
    const ssize_t n = write(write_end.get(), data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return ErrnoStatus("pipe write");
    data.remove_prefix(static_cast<size_t>(n));
  }
  return read_end;
}

// True when a path bound for the command lies in /etc (its mount point cannot be made in the
// read-only staged /etc).
bool AnyUnderEtc(const std::vector<std::string>& paths) {
  for (const std::string& path : paths) {
    if (path == "/etc" || absl::StartsWith(path, "/etc/")) return true;
  }
  return false;
}

// The protected mounts as bubblewrap mounts.
void AddProtectedMounts(const std::vector<ProtectedMount>& mounts, BwrapCommand* command) {
  for (const ProtectedMount& mount : mounts) {
    // A file placeholder is read-only like a protected file.
    const BwrapMount::Kind kind = mount.kind == ProtectedMount::kPin ? BwrapMount::Kind::kBind
                                  : mount.kind == ProtectedMount::kPlaceholder
                                      ? BwrapMount::Kind::kReadOnlyTmpfs
                                      : BwrapMount::Kind::kReadOnlyBind;
    command->mounts.push_back({kind, mount.path, mount.fd.get()});
  }
}

// What a sandbox of `workspace` with `mounts` mounts, as a string: the workspace directory's
// identity and, per protected mount, its kind, path and the identity of what it binds. Two
// commands with equal plans see the same mounts.
absl::StatusOr<std::string> MountPlan(const Workspace& workspace,
                                      const std::vector<ProtectedMount>& mounts) {
  struct stat st;
  if (fstat(workspace.dir_fd(), &st) != 0) return ErrnoStatus("fstat workspace");
  std::string plan = absl::StrCat(st.st_dev, ":", st.st_ino);
  for (const ProtectedMount& mount : mounts) {
    absl::StrAppend(&plan, "|", static_cast<int>(mount.kind), " ", mount.path);
    // A placeholder has no descriptor; the directory Acquire made for it on the host has an
    // identity all the same: one removed and made again (its mount inside a resident sandbox
    // is then gone) is a different plan.
    UniqueFd placeholder;
    if (!mount.fd.valid()) {
      absl::StatusOr<UniqueFd> opened = workspace.Open(mount.path, O_PATH | O_NOFOLLOW);
      if (!opened.ok() && opened.status().code() != absl::StatusCode::kNotFound) {
        return opened.status();
      }
      if (!opened.ok()) {
        absl::StrAppend(&plan, " missing");
        continue;
      }
      placeholder = *std::move(opened);
    }
    const int fd = mount.fd.valid() ? mount.fd.get() : placeholder.get();
    if (fstat(fd, &st) != 0) return ErrnoStatus("fstat protected path");
    absl::StrAppend(&plan, " ", st.st_dev, ":", st.st_ino, ":", st.st_mode);
  }
  return plan;
}

// True when `request` may run in its run's resident sandbox: a plain command of a run (no
// server over stdin/stdout, no network, no extra binds).
bool ResidentEligible(const CommandRequest& request) {
  if (request.run_id.empty() || request.stdin_fd >= 0 || request.stdout_fd >= 0 ||
      request.stop_fd >= 0 || request.share_network || !request.read_only_paths.empty()) {
    return false;
  }
  size_t bytes = request.cwd.size() + 4096;  // the environment's fixed part, generously
  for (const std::string& arg : request.argv) bytes += arg.size() + 1;
  for (const std::string& var : request.env) bytes += var.size() + 1;
  return bytes <= ResidentSandbox::kMaxCommandBytes;
}

}  // namespace

std::string LookUpProgram(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  for (absl::string_view dir : absl::StrSplit(kSandboxPath, ':')) {
    std::string candidate = absl::StrCat(dir, "/", name);
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

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
  std::unique_ptr<Sandbox> sandbox(new Sandbox(std::move(options), *std::move(protected_paths)));

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
  BwrapConfig bwrap;
  bwrap.bwrap_path = sandbox->options_.bwrap_path;
  bwrap.uid = sandbox->options_.uid;
  bwrap.gid = sandbox->options_.gid;
  bwrap.tmp_size_bytes = sandbox->options_.tmp_size_bytes;
  bwrap.system_dirs = HostSystemDirs();
  if (HostDevNodesMapped()) {
    absl::StatusOr<std::string> dev = StageDev(getuid());
    if (!dev.ok()) {
      // The safe side: no sandbox in which a command could chmod the host's /dev/null.
      sandbox->state_ = State::kUnavailable;
      sandbox->unavailable_reason_ = absl::StrCat(
          "the host's device nodes (/dev/null, ...) belong to the executor's uid ", getuid(),
          ", which the sandbox's uid maps to, so a command could chmod them, and ",
          dev.status().message());
      sandbox->unavailable_fix_ =
          "Fix: give the executor CAP_MKNOD and CAP_CHOWN and a TMPDIR on a file system "
          "mounted without nodev, or run it as a user that does not own /dev/null (the "
          "container image runs it as uid 65532)";
      LogError("sandbox unavailable: its /dev cannot be staged",
               {{"error", sandbox->unavailable_reason_}});
      return sandbox;
    }
    sandbox->dev_dir_ = *dev;
    bwrap.dev_dir = *dev;
  }
  sandbox->per_entry_etc_args_ = BwrapStaticArgs(bwrap);
  absl::StatusOr<std::string> etc = StageEtc(bwrap.uid, bwrap.gid);
  if (etc.ok()) {
    sandbox->etc_dir_ = *etc;
    bwrap.etc_dir = *etc;
    sandbox->static_args_ = BwrapStaticArgs(bwrap);
  } else {
    // Still sandboxed, only slower to start: a bind per entry of the host's /etc.
    sandbox->static_args_ = sandbox->per_entry_etc_args_;
  }
  absl::Status probe = sandbox->Probe();
  if (!probe.ok() && !sandbox->etc_dir_.empty()) {
    // Not the staged /etc's fault, most likely; but without it the sandbox may still work.
    std::error_code ignored;
    std::filesystem::remove_all(sandbox->etc_dir_, ignored);
    sandbox->etc_dir_.clear();
    sandbox->static_args_ = sandbox->per_entry_etc_args_;
    probe = sandbox->Probe();
  }
  if (probe.ok()) {
    sandbox->state_ = State::kBwrap;
    if (sandbox->options_.resident && !sandbox->options_.init_binary.empty() &&
        !sandbox->etc_dir_.empty()) {
      if (access(sandbox->options_.init_binary.c_str(), X_OK) != 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("sandbox_init: ", sandbox->options_.init_binary,
                         " is not an executable: ", strerror(errno)));
      }
      sandbox->residents_ = std::make_unique<ResidentPool>(
          sandbox->options_.resident_idle, sandbox->options_.max_residents, RealClock());
    }
  } else {
    sandbox->state_ = State::kUnavailable;
    sandbox->unavailable_reason_ = std::string(probe.message());
  }
  return sandbox;
}

Sandbox::~Sandbox() {
  residents_.reset();
  for (const std::string* dir : {&etc_dir_, &dev_dir_}) {
    if (dir->empty()) continue;
    std::error_code ignored;
    std::filesystem::remove_all(*dir, ignored);
  }
}

std::vector<std::string> Sandbox::Environment(const std::string& home) const {
  return {absl::StrCat("PATH=", kSandboxPath),
          absl::StrCat("HOME=", home),
          "TMPDIR=/tmp",
          "LANG=C.UTF-8",
          "LC_ALL=C.UTF-8",
          "TERM=dumb",
          "SHELL=/bin/sh",
          "USER=sandbox",
          "LOGNAME=sandbox"};
}

absl::Status Sandbox::Probe() {
  if (access(options_.bwrap_path.c_str(), X_OK) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat(options_.bwrap_path, " is not an executable (", strerror(errno),
                     "); install bubblewrap (apt-get install bubblewrap)"));
  }
  UniqueFd root(open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!root.valid()) return ErrnoStatus("open /");
  Workspace probe("probe", std::move(root));
  CommandRequest request;
  // With the staged device nodes, the probe opens one: they work, or the sandbox is unavailable.
  request.argv = dev_dir_.empty() ? std::vector<std::string>{"true"}
                                  : std::vector<std::string>{"sh", "-c", ": </dev/null >/dev/null"};
  request.deadline = absl::Now() + absl::Seconds(20);
  request.max_output_bytes = 4096;
  absl::StatusOr<CommandOutcome> outcome = RunBwrap(probe, request, /*protect=*/false);
  if (!outcome.ok()) return outcome.status();
  if (outcome->child.exit_code != 0) {
    return absl::FailedPreconditionError(absl::StrCat("bubblewrap cannot start a sandbox (exit ",
                                                      outcome->child.exit_code,
                                                      "): ", outcome->child.output.substr(0, 512)));
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
                          absl::StrJoin(protected_.paths(), ", "), "), ",
                          dev_dir_.empty() ? ""
                                           : "own device nodes (the host's belong to the "
                                             "executor's uid), ",
                          "processes: ", processes, ", max_concurrent ", options_.max_concurrent,
                          residents_ != nullptr
                              ? absl::StrCat(", resident sandbox per run (idle ",
                                             absl::FormatDuration(options_.resident_idle),
                                             ", at most ", options_.max_residents, ")")
                              : "");
    case State::kUnsandboxed:
      return "none (unsandboxed: --sandbox=none --allow_unsandboxed; commands run as the "
             "executor's user with its view of the machine)";
    case State::kUnavailable: break;
  }
  return absl::StrCat("unavailable: ", unavailable_reason_);
}

absl::Status Sandbox::CheckMutationAllowed() const {
  if (state_ != State::kUnavailable) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "mutating tools are refused: the sandbox is unavailable (", unavailable_reason_, "). ",
      !unavailable_fix_.empty()
          ? unavailable_fix_
          : "Fix: install bubblewrap and allow user namespaces (sysctl "
            "user.max_user_namespaces > 0, kernel.unprivileged_userns_clone=1 where it exists)",
      ", or start the executor with --sandbox=none --allow_unsandboxed to run without a "
      "sandbox"));
}

absl::StatusOr<SandboxSlot> Sandbox::Admit() {
  if (in_use_.fetch_add(1) >= options_.max_concurrent) {
    in_use_.fetch_sub(1);
    return absl::ResourceExhaustedError(
        absl::StrCat("executor is running ", options_.max_concurrent,
                     " sandboxed commands and workspace copies (--max_concurrent); use another "
                     "executor or retry"));
  }
  return SandboxSlot(&in_use_);
}

absl::StatusOr<CommandOutcome> Sandbox::Run(const Workspace& workspace,
                                            const CommandRequest& request) const {
  if (request.argv.empty() || request.argv[0].empty()) {
    return absl::InvalidArgumentError("the command is empty");
  }
  switch (state_) {
    case State::kBwrap: return RunBwrap(workspace, request, /*protect=*/true);
    case State::kUnsandboxed: return RunUnsandboxed(workspace, request);
    case State::kUnavailable: break;
  }
  return CheckMutationAllowed();
}

void Sandbox::ForgetRun(const std::string& run_id) const {
  if (residents_ != nullptr) residents_->Forget(run_id);
}

size_t Sandbox::ResidentCount() const { return residents_ != nullptr ? residents_->alive() : 0; }

absl::StatusOr<std::unique_ptr<PidsCgroup>> Sandbox::TakeCgroup() const {
  if (!cgroups_) return std::unique_ptr<PidsCgroup>();
  return cgroups_->Take(options_.max_pids, /*pool_size=*/std::min(options_.max_concurrent, 8),
                        /*spawners=*/options_.prefork, options_.spawner_binary);
}

void Sandbox::RetireCgroup(std::unique_ptr<PidsCgroup> cgroup) const {
  if (cgroups_) cgroups_->Retire(std::move(cgroup));
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
  if (protect && residents_ != nullptr && ResidentEligible(request)) {
    std::optional<absl::StatusOr<CommandOutcome>> resident = RunResident(workspace, request, cwd);
    if (resident.has_value()) return *std::move(resident);
  }
  absl::StatusOr<ProtectedMountLease> mounts =
      protect ? protected_mounts_.Acquire(workspace) : ProtectedMountLease();
  if (!mounts.ok()) return mounts.status();
  absl::StatusOr<UniqueFd> seccomp = SandboxSeccompProgramFd(request.share_network);
  if (!seccomp.ok()) return seccomp.status();
  int status_fds[2];
  if (pipe2(status_fds, O_CLOEXEC) != 0) return ErrnoStatus("pipe");
  UniqueFd status_read(status_fds[0]);
  UniqueFd status_write(status_fds[1]);
  // The staged /etc has passwd and group, but cannot take a mount point for a path in /etc.
  const bool staged_etc = !etc_dir_.empty() && !AnyUnderEtc(request.read_only_paths);
  UniqueFd passwd, group;
  if (!staged_etc) {
    absl::StatusOr<UniqueFd> passwd_pipe = DataPipe(PasswdData(options_.uid, options_.gid));
    if (!passwd_pipe.ok()) return passwd_pipe.status();
    absl::StatusOr<UniqueFd> group_pipe = DataPipe(GroupData(options_.gid));
    if (!group_pipe.ok()) return group_pipe.status();
    passwd = *std::move(passwd_pipe);
    group = *std::move(group_pipe);
  }

  BwrapCommand command;
  command.seccomp_fd = seccomp->get();
  command.status_fd = status_write.get();
  command.workspace_fd = workspace.dir_fd();
  command.passwd_fd = passwd.get();
  command.group_fd = group.get();
  AddProtectedMounts(mounts->mounts(), &command);
  command.cwd = cwd;
  command.argv = request.argv;
  command.share_network = request.share_network;
  command.read_only_paths = request.read_only_paths;
  BwrapInvocation invocation =
      BuildBwrapInvocation(staged_etc ? static_args_ : per_entry_etc_args_, command);

  // Taken last: from here every path retires it (the pool counts it in flight until then).
  absl::StatusOr<std::unique_ptr<PidsCgroup>> cgroup = TakeCgroup();
  if (!cgroup.ok()) return cgroup.status();
  ChildSpec spec;
  spec.path = options_.bwrap_path;
  spec.argv = std::move(invocation.argv);
  spec.pass_fds = std::move(invocation.pass_fds);
  spec.env = Environment(kSandboxWorkspace);
  spec.env.insert(spec.env.end(), request.env.begin(), request.env.end());
  spec.limits = options_.limits;
  spec.cgroup_procs_fd = *cgroup ? (*cgroup)->procs_fd() : -1;
  spec.spawner = *cgroup ? (*cgroup)->spawner() : nullptr;
  spec.new_session = true;
  spec.stdin_fd = request.stdin_fd;
  spec.stdout_fd = request.stdout_fd;
  spec.stop_fd = request.stop_fd;

  std::string status;
  absl::StatusOr<ChildOutcome> child =
      RunChild(spec, request.deadline, request.max_output_bytes, [&](int /*pid*/) {
        // bwrap's pid 1 dies with bwrap (--die-with-parent), and the kernel kills the rest of
        // its pid namespace before pid 1 is gone: wait for that, so that nothing of the
        // command outlives the call. The cgroup catches anything still running.
        status += ReadAvailable(status_read.get());
        WaitForExit(BwrapChildPid(status), absl::Seconds(2));
        if (*cgroup) (*cgroup)->KillAll();
      });
  status_write.Reset();
  status += ReadAvailable(status_read.get());
  // Its processes are gone (KillAll waited for an empty cgroup); removing the directory can
  // take the kernel a while and is done off the reply's path.
  RetireCgroup(*std::move(cgroup));
  mounts->Release();
  if (!child.ok()) return child.status();
  if (!absl::StrContains(status, "\"child-pid\"") && !child->timed_out) {
    // bwrap failed before it started the command; what it said is the output.
    return absl::FailedPreconditionError(
        absl::StrCat("the sandbox could not be set up: ", child->output.substr(0, 1024)));
  }
  CommandOutcome outcome;
  outcome.child = *std::move(child);
  outcome.sandboxed = true;
  return outcome;
}

std::optional<absl::StatusOr<CommandOutcome>> Sandbox::RunResident(const Workspace& workspace,
                                                                   const CommandRequest& request,
                                                                   const std::string& cwd) const {
  absl::StatusOr<ProtectedMountLease> mounts = protected_mounts_.Acquire(workspace);
  if (!mounts.ok()) return absl::StatusOr<CommandOutcome>(mounts.status());
  absl::StatusOr<std::string> plan = MountPlan(workspace, mounts->mounts());
  if (!plan.ok()) return std::nullopt;
  bool cold = false;
  std::unique_ptr<ResidentSandbox> resident = residents_->Take(request.run_id, *plan, &cold);
  if (cold) return std::nullopt;
  if (resident == nullptr) {
    absl::StatusOr<std::unique_ptr<ResidentSandbox>> started = StartResident(
        workspace, *plan, std::min(request.deadline, absl::Now() + absl::Seconds(20)));
    if (!started.ok()) {
      residents_->Put(request.run_id, nullptr);
      LogError("resident sandbox not started; the command runs in a sandbox of its own",
               {{"run_id", request.run_id}, {"error", started.status().message()}});
      return std::nullopt;
    }
    resident = *std::move(started);
  }
  std::vector<std::string> env = Environment(kSandboxWorkspace);
  env.insert(env.end(), request.env.begin(), request.env.end());
  ResidentSandbox::Result result =
      resident->Run(request.argv, env, cwd, request.deadline, request.max_output_bytes);
  // A resident that timed out or broke down is dead: Put hands it to be torn down.
  residents_->Put(request.run_id, std::move(resident));
  mounts->Release();
  if (!result.handed_off) return std::nullopt;  // nothing ran: the cold path runs it
  CommandOutcome outcome;
  outcome.child = std::move(result.outcome);
  outcome.sandboxed = true;
  if (result.lost) {
    outcome.outcome_unknown = true;
    outcome.error = result.error;
  }
  return absl::StatusOr<CommandOutcome>(std::move(outcome));
}

absl::StatusOr<std::unique_ptr<ResidentSandbox>> Sandbox::StartResident(const Workspace& workspace,
                                                                        const std::string& plan,
                                                                        absl::Time deadline) const {
  ResidentHoldings holdings;
  UniqueFd dir(fcntl(workspace.dir_fd(), F_DUPFD_CLOEXEC, 0));
  if (!dir.valid()) return ErrnoStatus("dup");
  holdings.workspace = std::make_unique<Workspace>(workspace.name(), std::move(dir));
  absl::StatusOr<ProtectedMountLease> lease = protected_mounts_.Acquire(*holdings.workspace);
  if (!lease.ok()) return lease.status();
  holdings.mounts = std::make_unique<ProtectedMountLease>(*std::move(lease));
  absl::StatusOr<std::string> own_plan = MountPlan(*holdings.workspace, holdings.mounts->mounts());
  if (!own_plan.ok()) return own_plan.status();
  if (*own_plan != plan) return absl::AbortedError("the workspace changed meanwhile");
  holdings.plan = plan;
  if (cgroups_) {
    // The command's allowance is unchanged: bubblewrap's two processes (its monitor and pid 1,
    // here init) are counted as on the cold path, where pid 1 is bubblewrap's own reaper.
    absl::StatusOr<std::unique_ptr<PidsCgroup>> cgroup = cgroups_->Create(options_.max_pids);
    if (!cgroup.ok()) return cgroup.status();
    holdings.cgroup = *std::move(cgroup);
  }
  absl::StatusOr<UniqueFd> seccomp = SandboxSeccompProgramFd(/*share_network=*/false);
  if (!seccomp.ok()) return seccomp.status();
  int status_fds[2];
  if (pipe2(status_fds, O_CLOEXEC) != 0) return ErrnoStatus("pipe");
  UniqueFd status_read(status_fds[0]);
  UniqueFd status_write(status_fds[1]);
  int sockets[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sockets) != 0) {
    return ErrnoStatus("socketpair");
  }
  UniqueFd ours(sockets[0]);
  UniqueFd theirs(sockets[1]);
  const int buffer = static_cast<int>(2 * ResidentSandbox::kMaxCommandBytes);
  setsockopt(ours.get(), SOL_SOCKET, SO_SNDBUF, &buffer, sizeof(buffer));
  setsockopt(theirs.get(), SOL_SOCKET, SO_RCVBUF, &buffer, sizeof(buffer));

  BwrapCommand command;
  command.seccomp_fd = seccomp->get();
  command.status_fd = status_write.get();
  command.workspace_fd = holdings.workspace->dir_fd();
  AddProtectedMounts(holdings.mounts->mounts(), &command);
  command.init_binary = options_.init_binary;
  command.init_socket_fd = theirs.get();
  BwrapInvocation invocation = BuildBwrapInvocation(static_args_, command);
  ChildSpec spec;
  spec.path = options_.bwrap_path;
  spec.argv = std::move(invocation.argv);
  spec.pass_fds = std::move(invocation.pass_fds);
  spec.env = Environment(kSandboxWorkspace);
  spec.limits = options_.limits;
  spec.new_session = true;
  absl::StatusOr<std::unique_ptr<ResidentSandbox>> resident = ResidentSandbox::Start(
      std::move(spec), std::move(ours), std::move(theirs), std::move(status_read),
      std::move(status_write), std::move(holdings), deadline);
  if (!resident.ok()) return resident.status();
  // Its placeholders exist now: the plan the next commands will compute.
  const ResidentHoldings& held = (*resident)->holdings();
  absl::StatusOr<std::string> built = MountPlan(*held.workspace, held.mounts->mounts());
  if (!built.ok()) return built.status();
  (*resident)->set_plan(*std::move(built));
  return resident;
}

absl::StatusOr<CommandOutcome> Sandbox::RunUnsandboxed(const Workspace& workspace,
                                                       const CommandRequest& request) const {
  absl::StatusOr<UniqueFd> dir =
      workspace.Open(request.cwd.empty() ? "." : request.cwd, O_PATH | O_DIRECTORY);
  if (!dir.ok()) return dir.status();
  char real[PATH_MAX + 1];
  const ssize_t n =
      readlink(absl::StrCat("/proc/self/fd/", workspace.dir_fd()).c_str(), real, sizeof(real) - 1);
  const std::string workspace_path = n > 0 ? std::string(real, static_cast<size_t>(n)) : "/";
  ChildSpec spec;
  spec.path = LookUpProgram(request.argv[0]);
  if (spec.path.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("command \"", request.argv[0], "\" not found in ", kSandboxPath));
  }
  spec.argv = request.argv;
  spec.env = Environment(workspace_path);
  spec.env.insert(spec.env.end(), request.env.begin(), request.env.end());
  spec.cwd_fd = dir->get();
  spec.limits = options_.limits;
  spec.stdin_fd = request.stdin_fd;
  spec.stdout_fd = request.stdout_fd;
  spec.stop_fd = request.stop_fd;
  absl::StatusOr<std::unique_ptr<PidsCgroup>> cgroup = TakeCgroup();
  if (!cgroup.ok()) return cgroup.status();
  spec.cgroup_procs_fd = *cgroup ? (*cgroup)->procs_fd() : -1;
  spec.spawner = *cgroup ? (*cgroup)->spawner() : nullptr;
  absl::StatusOr<ChildOutcome> child =
      RunChild(spec, request.deadline, request.max_output_bytes, [&](int pid) {
        kill(-pid, SIGKILL);  // its process group (it called setsid)
        if (*cgroup) (*cgroup)->KillAll();
      });
  RetireCgroup(*std::move(cgroup));
  if (!child.ok()) return child.status();
  CommandOutcome outcome;
  outcome.child = *std::move(child);
  outcome.sandboxed = false;
  return outcome;
}

}  // namespace rein
