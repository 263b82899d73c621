// A resident sandbox: one bubblewrap sandbox, set up once for a run, in which rein-sandbox-init
// (sandbox_init.cc) starts each command of the run as a fresh process and kills everything it
// left before answering. See SANDBOX.md, "Resident sandbox".
#ifndef REIN_EXECUTOR_SERVICE_RESIDENT_SANDBOX_H_
#define REIN_EXECUTOR_SERVICE_RESIDENT_SANDBOX_H_

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "executor_service/process/child_process.h"
#include "executor_service/process/pids_cgroup.h"
#include "executor_service/process/unique_fd.h"
#include "executor_service/sandbox/protected_mounts.h"
#include "executor_service/workspace/workspace.h"

namespace rein {

// The "child-pid" bubblewrap reported on its --json-status-fd, or 0.
int BwrapChildPid(const std::string& status);
// Waits until process `pid` (not necessarily our child) has exited, for at most `limit`.
void WaitForExit(int pid, absl::Duration limit);
// Reads what is in `fd` now (non-blocking), up to 64 KiB.
std::string ReadAvailable(int fd);

// What a resident sandbox holds for its whole life: the workspace it binds (its own
// descriptor), the protected mounts it was built with (their placeholders stay while it lives),
// and its pids cgroup.
struct ResidentHoldings {
  std::unique_ptr<Workspace> workspace;
  std::unique_ptr<ProtectedMountLease> mounts;
  std::unique_ptr<PidsCgroup> cgroup;  // null without a pids hierarchy
  std::string plan;                    // the mount plan it was built with (Sandbox compares)
};

// One resident sandbox. Not thread-safe: one command at a time (the Sandbox hands it out).
class ResidentSandbox {
 public:
  // Argv and environment of a command above this size go the cold path.
  static constexpr size_t kMaxCommandBytes = 128 << 10;

  // Starts bubblewrap as `spec` describes, whose pass_fds already hold `init_socket` (init's
  // end of the socket pair whose other end is `socket`) and `status_write` (bwrap's
  // --json-status-fd), and waits until init says it is ready, at most until `deadline`.
  // FAILED_PRECONDITION with what bubblewrap said when the sandbox cannot be set up.
  static absl::StatusOr<std::unique_ptr<ResidentSandbox>> Start(
      ChildSpec spec, UniqueFd socket, UniqueFd init_socket, UniqueFd status_read,
      UniqueFd status_write, ResidentHoldings holdings, absl::Time deadline);
  // Kills it (Kill) if still alive.
  ~ResidentSandbox();
  ResidentSandbox(const ResidentSandbox&) = delete;
  ResidentSandbox& operator=(const ResidentSandbox&) = delete;

  // The result of one command.
  struct Result {
    // False when the command could not be handed to init (nothing ran: the caller may run it
    // another way); true once init has it, whatever happens next.
    bool handed_off = false;
    // Handed off, but init never answered (it died or broke the protocol): whether the
    // command ran, and what it did, is unknown. `outcome` then holds its output so far.
    bool lost = false;
    std::string error;  // why, when !handed_off or lost
    ChildOutcome outcome;
  };
  // Runs one command: `cwd` inside the sandbox, `env` its whole environment. Its output (stdout
  // and stderr) is captured as RunChild does, capped at `max_output_bytes` (the rest counted).
  // At `deadline` the whole resident sandbox is killed (outcome.timed_out); after a timeout, a
  // lost command, or a failed hand-off the sandbox is dead (alive() false).
  Result Run(const std::vector<std::string>& argv, const std::vector<std::string>& env,
             const std::string& cwd, absl::Time deadline, size_t max_output_bytes);

  // False once killed, or retired (init could not reset what a command left).
  bool alive() const { return !killed_ && !retired_; }
  const std::string& plan() const { return holdings_.plan; }
  void set_plan(std::string plan) { holdings_.plan = std::move(plan); }
  const ResidentHoldings& holdings() const { return holdings_; }
  // The host pid of init (pid 1 inside), or 0.
  int init_pid() const { return init_pid_; }

  // SIGKILLs bubblewrap and everything in the sandbox, and returns once init is gone and its
  // cgroup (when it has one) is empty. Idempotent.
  void Kill();
  // The rest of its teardown (reaping bubblewrap, removing the cgroup, giving the placeholders
  // back), which may wait for the kernel: done off a command's path. Kills first if needed.
  void Destroy();

 private:
  explicit ResidentSandbox(ResidentHoldings holdings) : holdings_(std::move(holdings)) {}

  ResidentHoldings holdings_;
  std::thread holder_;  // started bubblewrap; waits for release_ (bubblewrap dies with it)
  absl::Notification release_;
  int bwrap_pid_ = -1;
  int init_pid_ = 0;
  UniqueFd init_pidfd_;
  UniqueFd socket_;
  UniqueFd output_;  // bubblewrap's own stdout and stderr
  UniqueFd status_;  // bubblewrap's --json-status-fd
  bool killed_ = false;
  bool retired_ = false;
  bool reaped_ = false;
};

}  // namespace rein

#endif  // REIN_EXECUTOR_SERVICE_RESIDENT_SANDBOX_H_
