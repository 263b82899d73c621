// Starting, capturing and stopping one child process.
#include "executor_service/process/child_process.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "executor_service/process/errno_status.h"
#include "executor_service/process/unique_fd.h"

namespace rein {
namespace {

constexpr size_t kMaxPassFds = 64;
constexpr size_t kChildStackBytes = 64 << 10;
constexpr absl::Duration kDrainGrace = absl::Seconds(1);

// Everything the child needs, prepared by the parent: the child (sharing the parent's memory
// until it executes) only makes system calls on it.
struct ChildArgs {
  const char* path;
  char* const* argv;
  char* const* envp;
  int stdin_fd;
  int out_fd;
  int stdout_fd;  // the child's stdout: out_fd unless ChildSpec::stdout_fd is set
  int pass_fds[kMaxPassFds];
  size_t pass_count;
  int cwd_fd;
  int cgroup_fd;
  bool new_session;
  int resources[6];
  struct rlimit limits[6];
  // Set by the child when a step fails; read by the parent after the child has exited.
  int error;
  const char* step;
};

int Fail(ChildArgs* a, const char* step) {
  a->error = errno;
  a->step = step;
  _exit(127);
}

// Handlers the executor installed must not run in a child: every signal back to its default.
void ResetSignalHandlers() {
  struct sigaction dfl;
  memset(&dfl, 0, sizeof(dfl));
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig != SIGKILL && sig != SIGSTOP) sigaction(sig, &dfl, nullptr);  // EINVAL is fine
  }
}

int ChildMain(void* arg) {
  ChildArgs* a = static_cast<ChildArgs*>(arg);
  // Signals stay blocked (the parent blocked them all) until just before execve.
  ResetSignalHandlers();
  if (a->new_session && setsid() < 0) return Fail(a, "setsid");
  if (a->cgroup_fd >= 0 && write(a->cgroup_fd, "0", 1) != 1) return Fail(a, "joining the cgroup");
  if (a->cwd_fd >= 0 && fchdir(a->cwd_fd) != 0) return Fail(a, "fchdir");
  // Move every kept descriptor above the targets first, so that no dup2 clobbers another.
  const int base = static_cast<int>(3 + a->pass_count);
  const int in = fcntl(a->stdin_fd, F_DUPFD, base);
  const int out = fcntl(a->out_fd, F_DUPFD, base);
  const int std_out = fcntl(a->stdout_fd, F_DUPFD, base);
  if (in < 0 || out < 0 || std_out < 0) return Fail(a, "dup");
  int high[kMaxPassFds];
  for (size_t i = 0; i < a->pass_count; ++i) {
    high[i] = fcntl(a->pass_fds[i], F_DUPFD, base);
    if (high[i] < 0) return Fail(a, "dup");
  }
  if (dup2(in, 0) < 0 || dup2(std_out, 1) < 0 || dup2(out, 2) < 0) return Fail(a, "dup2");
  for (size_t i = 0; i < a->pass_count; ++i) {
    if (dup2(high[i], static_cast<int>(3 + i)) < 0) return Fail(a, "dup2");
  }
  // Everything at or above `base` goes.
  if (syscall(SYS_close_range, static_cast<unsigned>(base), ~0u, 0) != 0) {
    return Fail(a, "close_range");
  }
  for (int i = 0; i < 6; ++i) {
    if (setrlimit(a->resources[i], &a->limits[i]) != 0) return Fail(a, "setrlimit");
  }
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  execve(a->path, a->argv, a->envp);
  return Fail(a, "execve");
}

struct rlimit Limit(uint64_t value) {
  struct rlimit rl;
  rl.rlim_cur = rl.rlim_max = value == 0 ? RLIM_INFINITY : static_cast<rlim_t>(value);
  return rl;
}

std::vector<char*> CStrings(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (const std::string& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

// ErrnoStatus, but what an exec's errors mean for starting a child: a program that is missing
// or not executable is FAILED_PRECONDITION, too long a command line INVALID_ARGUMENT.
absl::Status StartStatus(int err, absl::string_view what) {
  if (err == E2BIG) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": ", strerror(err), " (the command line is too long)"));
  }
  if (err == ENOENT || err == EACCES || err == ENOEXEC || err == ENOTDIR) {
    return absl::FailedPreconditionError(absl::StrCat(what, ": ", strerror(err)));
  }
  if (err == ENOSPC || err == EDQUOT || err == EEXIST) {
    return absl::InternalError(absl::StrCat(what, ": ", strerror(err)));
  }
  return ErrnoStatus(err, what);
}

}  // namespace

int PollMillis(absl::Time until) {
  const absl::Duration left = until - absl::Now();
  if (left <= absl::ZeroDuration()) return 0;
  return static_cast<int>(std::min<int64_t>(absl::ToInt64Milliseconds(left) + 1, 1 << 30));
}

bool ReadAvailableOutput(int fd, std::string& chunk, size_t max_output_bytes,
                         ChildOutcome& outcome) {
  for (;;) {
    const ssize_t got = read(fd, chunk.data(), chunk.size());
    if (got > 0) {
      outcome.output_bytes += static_cast<uint64_t>(got);
      const size_t room = max_output_bytes - std::min(max_output_bytes, outcome.output.size());
      outcome.output.append(chunk.data(), std::min(room, static_cast<size_t>(got)));
      continue;
    }
    return got == 0;  // EAGAIN, EINTR or an error: poll again
  }
}

absl::StatusOr<int> StartChild(const ChildSpec& spec, int output_fd) {
  if (spec.argv.empty()) return absl::InvalidArgumentError("argv must not be empty");
  if (spec.pass_fds.size() > kMaxPassFds) {
    return absl::InvalidArgumentError(absl::StrCat("at most ", kMaxPassFds, " fds are passed"));
  }
  UniqueFd dev_null(open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!dev_null.valid()) return StartStatus(errno, "/dev/null");

  std::vector<char*> argv = CStrings(spec.argv);
  std::vector<char*> envp = CStrings(spec.env);
  ChildArgs args;
  memset(&args, 0, sizeof(args));
  args.path = spec.path.c_str();
  args.argv = argv.data();
  args.envp = envp.data();
  args.stdin_fd = spec.stdin_fd >= 0 ? spec.stdin_fd : dev_null.get();
  args.out_fd = output_fd;
  args.stdout_fd = spec.stdout_fd >= 0 ? spec.stdout_fd : output_fd;
  args.pass_count = spec.pass_fds.size();
  std::copy(spec.pass_fds.begin(), spec.pass_fds.end(), args.pass_fds);
  args.cwd_fd = spec.cwd_fd;
  args.cgroup_fd = spec.cgroup_procs_fd;
  args.new_session = spec.new_session;
  const int resources[6] = {RLIMIT_CPU,    RLIMIT_AS,    RLIMIT_FSIZE,
                            RLIMIT_NOFILE, RLIMIT_NPROC, RLIMIT_CORE};
  const uint64_t values[6] = {spec.limits.cpu_seconds,     spec.limits.address_space_bytes,
                              spec.limits.file_size_bytes, spec.limits.open_files,
                              spec.limits.processes,       spec.limits.core_bytes};
  for (int i = 0; i < 6; ++i) {
    args.resources[i] = resources[i];
    args.limits[i] = Limit(values[i]);
  }
  // RLIMIT_CORE 0 means no core dumps, not "unlimited".
  args.limits[5].rlim_cur = args.limits[5].rlim_max = static_cast<rlim_t>(spec.limits.core_bytes);

  void* stack = mmap(nullptr, kChildStackBytes, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (stack == MAP_FAILED) return StartStatus(errno, "child stack");
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  // Like posix_spawn: the child shares our memory and we are suspended until it executes.
  const int pid = clone(ChildMain, static_cast<char*>(stack) + kChildStackBytes,
                        CLONE_VM | CLONE_VFORK | SIGCHLD, &args);
  const int clone_errno = errno;
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  munmap(stack, kChildStackBytes);
  if (pid < 0) return StartStatus(clone_errno, "clone");
  if (args.error != 0) {
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return StartStatus(args.error, absl::StrCat("cannot start ", spec.path, " (", args.step, ")"));
  }
  return pid;
}

absl::StatusOr<ChildOutcome> RunChild(const ChildSpec& spec, absl::Time deadline,
                                      size_t max_output_bytes,
                                      const std::function<void(int pid)>& kill_rest) {
  const absl::Time start = absl::Now();
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) return StartStatus(errno, "pipe");
  UniqueFd read_end(pipe_fds[0]);
  UniqueFd write_end(pipe_fds[1]);
  absl::StatusOr<int> started = StartChild(spec, write_end.get());
  if (!started.ok()) return started.status();
  const int pid = *started;
  write_end.Reset();

  ChildOutcome outcome;
  UniqueFd pidfd(static_cast<int>(syscall(SYS_pidfd_open, pid, 0)));
  bool exited = false;
  bool eof = false;
  bool killed = false;
  absl::Time drain_until = absl::InfiniteFuture();
  std::string chunk(64 << 10, '\0');
  fcntl(read_end.get(), F_SETFL, O_NONBLOCK);
  auto end_child = [&](bool timeout) {
    if (killed) return;
    killed = true;
    if (timeout) {
      outcome.timed_out = true;
      kill(pid, SIGKILL);  // not yet reaped, so the pid is still ours
    }
    kill_rest(pid);
    drain_until = absl::Now() + kDrainGrace;
  };
  while (!eof || !exited) {
    const absl::Time now = absl::Now();
    if (!killed && now >= deadline) end_child(/*timeout=*/true);
    if (killed && now >= drain_until) break;
    struct pollfd fds[3] = {};
    int n = 0;
    if (!eof) fds[n++] = {read_end.get(), POLLIN, 0};
    const int pid_index = n;
    if (!exited && pidfd.valid()) fds[n++] = {pidfd.get(), POLLIN, 0};
    const int stop_index = n;
    if (!killed && spec.stop_fd >= 0) fds[n++] = {spec.stop_fd, POLLIN, 0};
    int wait_ms = PollMillis(killed ? drain_until : deadline);
    if (!exited && !pidfd.valid()) wait_ms = std::min(wait_ms, 10);  // no pidfd: poll waitpid
    if (n == 0) {
      // Output is at EOF and only the exit is missing, without a pidfd.
      usleep(static_cast<useconds_t>(wait_ms) * 1000);
    } else if (poll(fds, static_cast<nfds_t>(n), wait_ms) < 0 && errno != EINTR) {
      break;
    }
    if (!eof && (fds[0].revents & (POLLIN | POLLHUP | POLLERR))) {
      eof = ReadAvailableOutput(read_end.get(), chunk, max_output_bytes, outcome);
    }
    if (!killed && spec.stop_fd >= 0 && (fds[stop_index].revents & (POLLIN | POLLHUP | POLLERR))) {
      outcome.stopped = true;
      if (!exited) kill(pid, SIGKILL);  // not yet reaped, so the pid is still ours
      end_child(/*timeout=*/false);
    }
    if (!exited) {
      const bool ready = pidfd.valid() ? (fds[pid_index].revents & POLLIN) != 0 : true;
      if (ready) {
        int status;
        const int r = waitpid(pid, &status, WNOHANG);
        if (r == pid) {
          exited = true;
          if (WIFEXITED(status)) {
            outcome.exit_code = WEXITSTATUS(status);
          } else if (WIFSIGNALED(status)) {
            outcome.signal = WTERMSIG(status);
            outcome.exit_code = 128 + outcome.signal;
          }
          end_child(/*timeout=*/false);
        }
      }
    }
  }
  if (!exited) {
    // Only when the drain gave up or poll failed: the child itself is killed and reaped.
    kill(pid, SIGKILL);
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFEXITED(status)) outcome.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) {
      outcome.signal = WTERMSIG(status);
      outcome.exit_code = 128 + outcome.signal;
    }
    if (!killed) kill_rest(pid);
  }
  outcome.elapsed = absl::Now() - start;
  return outcome;
}

}  // namespace rein
