// The sandbox mutating tools run in: bubblewrap with every namespace unshared, a read-only
// system, the workspace as the only writable place, seccomp, rlimits and a pids cgroup; or,
// only when the operator insists, no sandbox at all.
#ifndef REIN_EXECUTOR_SERVICE_SANDBOX_H_
#define REIN_EXECUTOR_SERVICE_SANDBOX_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "executor_service/process/child_process.h"
#include "executor_service/process/pids_cgroup.h"
#include "executor_service/sandbox/bwrap_command.h"
#include "executor_service/sandbox/protected_mounts.h"
#include "executor_service/sandbox/protected_paths.h"
#include "executor_service/sandbox/resident/resident_pool.h"
#include "executor_service/sandbox/resident/resident_sandbox.h"
#include "executor_service/sandbox/sandbox_mode.h"
#include "executor_service/workspace/sandbox_placeholders.h"
#include "executor_service/workspace/workspace.h"

namespace rein {

// The PATH commands get.
inline constexpr const char* kSandboxPath =
    "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin";

// `name` when it has a '/', else the first executable `dir/name` for dir in kSandboxPath, or
// "" when there is none. The sandbox mirrors those directories, so the answer holds inside it.
std::string LookUpProgram(const std::string& name);

struct SandboxOptions {
  SandboxMode mode = SandboxMode::kBwrap;
  bool allow_unsandboxed = false;  // required for SandboxMode::kNone
  std::string bwrap_path = "/usr/bin/bwrap";
  uint32_t uid = 65534;  // the command's uid and gid inside the sandbox
  uint32_t gid = 65534;
  ResourceLimits limits = DefaultLimits();
  uint64_t max_pids = 512;              // pids.max of a command's cgroup
  uint64_t tmp_size_bytes = 256 << 20;  // size of the private /tmp
  // A cgroup directory (v1 pids hierarchy or delegated v2 with +pids) for per-command
  // cgroups; "" = detect a writable v1 pids hierarchy; "off" = none.
  std::string cgroup;
  // Each pooled cgroup gets a process forked ahead of time that has already joined it
  // (Spawner): a command then starts without waiting for the kernel to move a process into its
  // cgroup. Only with a pids cgroup.
  bool prefork = true;
  // rein-spawner, absolute: each spawner is that small program, started without copying the
  // executor's memory, whose execve of bubblewrap has almost nothing to tear down. "" = each
  // spawner is a fork of the executor (slower: its execve tears down a copy of the executor).
  std::string spawner_binary;
  std::vector<std::string> protected_paths;  // in addition to kDefaultProtectedPaths
  // Commands, workspace snapshots and workspace copies at once; more are RESOURCE_EXHAUSTED.
  int max_concurrent = 8;
  // Resident sandboxes (--sandbox_resident, off by default; SANDBOX.md, "Resident sandbox"):
  // a performance mode. The commands of one run start inside one sandbox set up by its first
  // command, each as a fresh process of rein-sandbox-init that kills everything the command
  // left before the reply. Never shared between runs. Its isolation between the commands of a
  // run rests on that cleanup (an enumerated list of what a command may change), not on fresh
  // namespaces per command as by default.
  bool resident = false;
  std::string init_binary;  // rein-sandbox-init, absolute; "" = residents off
  absl::Duration resident_idle = absl::Seconds(60);  // an idle resident is removed after this
  int max_residents = 16;  // at most this many at once; the least recently used goes first
  // Records the placeholders the sandbox puts in workspaces, for workspace copies to leave
  // out (WorkspaceHistoryOptions::placeholders). Not owned; null = the sandbox keeps its own.
  SandboxPlaceholders* placeholders = nullptr;

  static ResourceLimits DefaultLimits() {
    ResourceLimits limits;
    limits.cpu_seconds = 600;
    limits.address_space_bytes = 4ull << 30;
    limits.file_size_bytes = 1ull << 30;
    limits.open_files = 1024;
    limits.processes = 512;
    return limits;
  }
};

// One command to run.
struct CommandRequest {
  std::vector<std::string> argv;  // argv[0] is looked up in kSandboxPath when it has no '/'
  std::string cwd;                // workspace-relative; "" = the workspace
  absl::Time deadline = absl::InfiniteFuture();
  size_t max_output_bytes = 1 << 20;
  // For a long-lived server that speaks over stdin and stdout (an MCP stdio server); see
  // ChildSpec. Not owned; -1 = none.
  int stdin_fd = -1;
  int stdout_fd = -1;
  int stop_fd = -1;
  bool share_network = false;                // keep the host's network (granted per server)
  std::vector<std::string> read_only_paths;  // absolute host paths bound read-only, same place
  std::vector<std::string> env;              // "NAME=value", added to the environment
  // The run the command belongs to: its commands may share the run's resident sandbox. "" =
  // none (always a sandbox of its own).
  std::string run_id;
};

// How a command went.
struct CommandOutcome {
  ChildOutcome child;
  bool sandboxed = false;
  // The command was handed to a resident sandbox that then died or broke down before it
  // answered: whether and how the command ran is unknown (`error` says why). Never run again.
  bool outcome_unknown = false;
  std::string error;
};

// A slot among --max_concurrent (a command, a workspace snapshot or copy); released on
// destruction.
class SandboxSlot {
 public:
  SandboxSlot() = default;  // none held
  explicit SandboxSlot(std::atomic<int>* in_use) : in_use_(in_use) {}
  SandboxSlot(SandboxSlot&& other) noexcept : in_use_(std::exchange(other.in_use_, nullptr)) {}
  SandboxSlot& operator=(SandboxSlot&& other) noexcept {
    if (this != &other) {
      Release();
      in_use_ = std::exchange(other.in_use_, nullptr);
    }
    return *this;
  }
  ~SandboxSlot() { Release(); }
  // Gives the slot back now (nothing when none is held).
  void Release() {
    if (in_use_ != nullptr) std::exchange(in_use_, nullptr)->fetch_sub(1);
  }

 private:
  std::atomic<int>* in_use_ = nullptr;
};

// Runs commands confined to a workspace. Created once; thread-safe.
class Sandbox {
 public:
  enum class State { kBwrap, kUnsandboxed, kUnavailable };

  // Checks `options` (INVALID_ARGUMENT for bad ones, e.g. mode kNone without
  // allow_unsandboxed) and probes bubblewrap by running /bin/true in a full sandbox (see
  // SANDBOX.md, "/dev", for a root executor). A failed probe is not an error: the sandbox is then
  // kUnavailable and says why.
  static absl::StatusOr<std::unique_ptr<Sandbox>> Create(SandboxOptions options);
  // Kills every resident sandbox and removes the staged /etc and device nodes.
  ~Sandbox();

  State state() const { return state_; }
  const SandboxOptions& options() const { return options_; }
  const ProtectedPaths& protected_paths() const { return protected_; }

  // "bwrap (…what holds…)", "none (unsandboxed)", or "unavailable: why; how to fix".
  std::string Description() const;

  // OK when mutating tools may run; FAILED_PRECONDITION saying why and how to fix otherwise.
  absl::Status CheckMutationAllowed() const;

  // A slot for one command or one workspace copy (a snapshot, a fork's copy), or
  // RESOURCE_EXHAUSTED naming --max_concurrent when max_concurrent are running.
  absl::StatusOr<SandboxSlot> Admit();

  // Runs `request` in `workspace`. The command's failures (non-zero exit, timeout) are in the
  // outcome; errors are for a command that could not be started: INVALID_ARGUMENT (a bad cwd,
  // an unknown program), FAILED_PRECONDITION (unavailable sandbox, a protected path that is a
  // symbolic link), INTERNAL/RESOURCE_EXHAUSTED (the machine).
  absl::StatusOr<CommandOutcome> Run(const Workspace& workspace,
                                     const CommandRequest& request) const;

  // The run ended: its resident sandbox (if idle) is removed now.
  void ForgetRun(const std::string& run_id) const;
  // Resident sandboxes alive now (idle or running a command), for tests.
  size_t ResidentCount() const;

 private:
  Sandbox(SandboxOptions options, ProtectedPaths protected_paths)
      : options_(std::move(options)),
        protected_(std::move(protected_paths)),
        protected_mounts_(protected_, options_.placeholders) {}

  absl::Status Probe();
  // `protect` = false only for the probe, whose "workspace" is / and must not be touched.
  absl::StatusOr<CommandOutcome> RunBwrap(const Workspace& workspace, const CommandRequest& request,
                                          bool protect) const;
  // The command in the run's resident sandbox; nullopt when it did not run there (not
  // eligible, or nothing ran: the cold path runs it).
  std::optional<absl::StatusOr<CommandOutcome>> RunResident(const Workspace& workspace,
                                                            const CommandRequest& request,
                                                            const std::string& cwd) const;
  absl::StatusOr<std::unique_ptr<ResidentSandbox>> StartResident(const Workspace& workspace,
                                                                 const std::string& plan,
                                                                 absl::Time deadline) const;
  absl::StatusOr<CommandOutcome> RunUnsandboxed(const Workspace& workspace,
                                                const CommandRequest& request) const;
  std::vector<std::string> Environment(const std::string& home) const;
  // A fresh pids cgroup for one command (null when there is no pids hierarchy), and its
  // removal in the background once the command's processes are dead.
  absl::StatusOr<std::unique_ptr<PidsCgroup>> TakeCgroup() const;
  void RetireCgroup(std::unique_ptr<PidsCgroup> cgroup) const;

  SandboxOptions options_;
  ProtectedPaths protected_;
  State state_ = State::kUnavailable;
  std::string unavailable_reason_;
  std::string unavailable_fix_;  // "" = install bubblewrap, allow user namespaces
  std::string cgroup_note_;
  std::unique_ptr<PidsCgroupParent> cgroups_;
  std::string etc_dir_;  // the staged /etc (BwrapConfig::etc_dir), "" when staging failed
  std::string dev_dir_;  // the staged device nodes (BwrapConfig::dev_dir), "" when not needed
  std::vector<std::string> static_args_;  // BwrapStaticArgs, the same for every command
  // BwrapStaticArgs without etc_dir: for a command that binds a path in /etc.
  std::vector<std::string> per_entry_etc_args_;
  std::atomic<int> in_use_{0};
  mutable ProtectedMounts protected_mounts_;  // counts placeholders across const Run calls
  std::unique_ptr<ResidentPool> residents_;   // null when residents are off
};

}  // namespace rein

#endif  // REIN_EXECUTOR_SERVICE_SANDBOX_H_
