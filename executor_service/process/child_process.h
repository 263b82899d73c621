// Starting one child process with limits, capturing its output, and stopping it at a deadline.
#ifndef REIN_EXECUTOR_SERVICE_CHILD_PROCESS_H_
#define REIN_EXECUTOR_SERVICE_CHILD_PROCESS_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"

namespace rein {

// Resource limits set (soft = hard) in the child before it executes anything. 0 = unlimited.
struct ResourceLimits {
  uint64_t cpu_seconds = 0;          // RLIMIT_CPU
  uint64_t address_space_bytes = 0;  // RLIMIT_AS
  uint64_t file_size_bytes = 0;      // RLIMIT_FSIZE
  uint64_t open_files = 0;           // RLIMIT_NOFILE
  uint64_t processes = 0;            // RLIMIT_NPROC (binds only a non-root uid)
  uint64_t core_bytes = 0;           // RLIMIT_CORE; always set, 0 = no core dumps
};

class Spawner;

// What to start. Every descriptor of the parent is closed in the child except stdin
// (/dev/null), stdout and stderr (both the capture pipe) and `pass_fds`, which become
// descriptors 3, 4, 5, ... in their order.
struct ChildSpec {
  std::string path;               // the executable, absolute
  std::vector<std::string> argv;  // argv[0] included
  std::vector<std::string> env;   // the whole environment, "NAME=value"
  std::vector<int> pass_fds;
  int cwd_fd = -1;  // a directory to fchdir into; -1 = the executor's cwd
  ResourceLimits limits;
  int cgroup_procs_fd = -1;  // when >= 0, the child joins this cgroup ("0" written)
  // When set and unused, the command starts in this pre-forked process (which joined its
  // cgroup ahead of time; cgroup_procs_fd is then only for the fallback) instead of a new
  // child. Not owned; marked used once the command went to it.
  Spawner* spawner = nullptr;
  bool new_session = true;  // setsid(): own session and process group
  // For a long-lived child that speaks over its stdin and stdout (an MCP stdio server): when
  // >= 0, its stdin instead of /dev/null and its stdout instead of the capture pipe (stderr is
  // still captured). Not owned.
  int stdin_fd = -1;
  int stdout_fd = -1;
  // When >= 0: once readable or hung up (its write end written or closed), the child is
  // killed as at the deadline, but not counted as timed out. Not owned.
  int stop_fd = -1;
};

// How a child ended and what it wrote.
struct ChildOutcome {
  std::string output;         // stdout and stderr interleaved, at most the cap, raw bytes
  uint64_t output_bytes = 0;  // everything it wrote, kept or not
  bool timed_out = false;     // killed at the deadline
  bool stopped = false;       // killed because ChildSpec::stop_fd became readable
  int exit_code = -1;         // its exit status, or 128 + signal when killed by one
  int signal = 0;             // the signal that ended it, or 0
  absl::Duration elapsed;
};

// Milliseconds for poll() until `until`: 0 once it has passed, rounded up, at most 2^30.
int PollMillis(absl::Time until);

// Reads what `fd` (non-blocking) holds now into `outcome`: every byte counted in output_bytes,
// kept in output up to `max_output_bytes`; `chunk` is the caller's read buffer. True at EOF.
bool ReadAvailableOutput(int fd, std::string& chunk, size_t max_output_bytes,
                         ChildOutcome& outcome);

struct SpawnerArea;

// A process started ahead of time that waits to become one command's process: it has already
// joined its cgroup (a task migration that takes the kernel milliseconds on cgroup v1) when the
// command arrives, so the command's start does not wait for it. It is started by a thread of its
// own that lives as long as it: as rein-spawner (spawner_main.cc), a program of a few mappings
// started by posix_spawn, when its path is given, else as a fork of the executor. At command
// time it receives the command's descriptors over a socket (SCM_RIGHTS) and reads its argv,
// environment and limits from a memory area shared with the executor (SpawnerArea,
// child_exec.h), and executes the command itself: the command is the executor's child, waited
// for, killed and limited exactly as one started by clone. It makes system calls only (no
// allocation, no locks). Used for exactly one command.
class Spawner {
 public:
  // Starts the spawner (rein-spawner at `binary` when not empty, else a fork of the executor);
  // it joins the cgroup whose cgroup.procs is open for writing as `cgroup_procs_fd` (-1 = none)
  // and closes every other descriptor. Returns once it is ready (or INTERNAL/RESOURCE_EXHAUSTED
  // saying why it is not). `cgroup_procs_fd` must stay open until then.
  static absl::StatusOr<std::unique_ptr<Spawner>> Start(int cgroup_procs_fd,
                                                        const std::string& binary = "");
  // An unused spawner is killed and reaped; a used one is the command's, reaped by RunChild.
  ~Spawner();
  Spawner(const Spawner&) = delete;
  Spawner& operator=(const Spawner&) = delete;

  int pid() const { return pid_; }
  bool used() const { return used_; }

 private:
  friend struct SpawnerAccess;  // RunChild's side, in child_process.cc
  Spawner() = default;

  int pid_ = -1;
  int cloned_pid_ = -1;  // fork's or posix_spawn's answer, set by holder_ (read after joining it)
  int socket_ = -1;
  SpawnerArea* area_ = nullptr;  // read by the spawner
  bool used_ = false;
  std::thread holder_;  // started it; suspended until it executed, then waits for release_
  absl::Notification release_;
};

// Starts `spec` with its stdout (unless ChildSpec::stdout_fd) and stderr on `output_fd` (not
// owned; the caller closes its copy) and returns its pid once it has executed; the caller waits
// for it (waitpid) and kills it. Errors as RunChild's.
absl::StatusOr<int> StartChild(const ChildSpec& spec, int output_fd);

// Starts `spec` and reads its output until it exits and the pipe reaches EOF, or until
// `deadline` (or ChildSpec::stop_fd fires), when it is killed with SIGKILL. The pipe is always
// drained (bytes past `max_output_bytes` are counted and dropped), so a flood never blocks the
// child. When the child has ended (or was killed), `kill_rest` is called to kill whatever it left
// behind (its process group, cgroup or pid namespace); then the pipe is drained for at most a
// second more. Thread-safe: may run in many threads at once. Errors: the child could not be
// started (RESOURCE_EXHAUSTED for fd or process exhaustion, FAILED_PRECONDITION for a
// missing or non-executable `path`, INTERNAL otherwise).
absl::StatusOr<ChildOutcome> RunChild(const ChildSpec& spec, absl::Time deadline,
                                      size_t max_output_bytes,
                                      const std::function<void(int pid)>& kill_rest);

}  // namespace rein

#endif  // REIN_EXECUTOR_SERVICE_CHILD_PROCESS_H_
