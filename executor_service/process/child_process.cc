// Starting, capturing and stopping one child process.
#include "executor_service/process/child_process.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "executor_service/process/errno_status.h"
#include "executor_service/process/fd_passing.h"
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
  int keep_fd;  // a spawner's socket: kept open (close-on-exec) until execve, else -1
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
  int keep = -1;
  if (a->keep_fd >= 0) {
    keep = fcntl(a->keep_fd, F_DUPFD_CLOEXEC, base);
    if (keep < 0) return Fail(a, "dup");
  }
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
  // Everything at or above `base` goes, but for a spawner's socket.
  const unsigned first = static_cast<unsigned>(base);
  if (keep >= 0) {
    const unsigned k = static_cast<unsigned>(keep);
    if ((k > first && syscall(SYS_close_range, first, k - 1, 0) != 0) ||
        syscall(SYS_close_range, k + 1, ~0u, 0) != 0) {
      return Fail(a, "close_range");
    }
  } else if (syscall(SYS_close_range, first, ~0u, 0) != 0) {
    return Fail(a, "close_range");
  }
  for (int i = 0; i < 6; ++i) {
    if (setrlimit(a->resources[i], &a->limits[i]) != 0) return Fail(a, "setrlimit");
  }
  // A spawner dies with the thread that forked it while it waits; the command it becomes
  // does not (as a command started by clone does not).
  if (a->keep_fd >= 0) prctl(PR_SET_PDEATHSIG, 0);
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

// What a spawner reads and writes of the executor's memory (which it shares until it executes
// the command): how it was started, and the command's ChildArgs, whose pointers point into
// `data`.
constexpr size_t kSpawnerAreaBytes = 4 << 20;  // reserved, not committed (MAP_NORESERVE)
constexpr size_t kSpawnerFds = kMaxPassFds + 4;
static_assert(kSpawnerFds <= kMaxPassedFds, "one message carries a command's descriptors");

struct SpawnerArea {
  int sock;      // its end of the socket pair
  int procs_fd;  // cgroup.procs to join, or -1
  pid_t parent;  // the executor
  pid_t pid;     // set by the spawner before it says it is ready
  ChildArgs args;
  char data[1];  // to the end of the mapping
};

namespace {

size_t SpawnerDataBytes() { return kSpawnerAreaBytes - offsetof(SpawnerArea, data); }

// The spawner: a child forked from a holder thread of the executor. It reads and writes only
// the shared SpawnerArea, and makes system calls only (the executor's other threads may have
// held locks at the fork).
int SpawnerMain(void* arg) {
  SpawnerArea* area = static_cast<SpawnerArea*>(arg);
  const int sock = area->sock;
  const int procs_fd = area->procs_fd;
  ResetSignalHandlers();
  prctl(PR_SET_PDEATHSIG, SIGKILL);  // while unused, it dies with the thread waiting for it
  if (getppid() != area->parent) _exit(1);
  // Nothing of the executor's stays open here (another command's pipe would never see EOF, and
  // a copy of a journal record's lock would outlive Finish), closed before the slow part.
  const unsigned lo = static_cast<unsigned>(procs_fd >= 0 ? std::min(sock, procs_fd) : sock);
  const unsigned hi = static_cast<unsigned>(procs_fd >= 0 ? std::max(sock, procs_fd) : sock);
  if (lo > 0) syscall(SYS_close_range, 0u, lo - 1, 0);
  if (hi > lo + 1) syscall(SYS_close_range, lo + 1, hi - 1, 0);
  syscall(SYS_close_range, hi + 1, ~0u, 0);
  // The slow part (a task migration on cgroup v1), done before any command waits for it.
  if (procs_fd >= 0) {
    if (write(procs_fd, "0", 1) != 1) _exit(1);
    close(procs_fd);
  }
  area->pid = static_cast<pid_t>(syscall(SYS_getpid));
  const char ready = 'R';
  if (write(sock, &ready, 1) != 1) _exit(1);

  char byte;
  int fds[kSpawnerFds];
  ReceivedFds got;
  if (ReceiveWithFds(sock, &byte, 1, fds, kSpawnerFds, &got) <= 0) {
    _exit(0);  // the executor dropped this spawner
  }
  ChildArgs* a = &area->args;
  const size_t want = 3 + (a->cwd_fd >= 0 ? 1 : 0) + a->pass_count;
  if (got.dropped || got.count != want) {
    errno = EBADF;
    Fail(a, "receiving the descriptors");
  }
  size_t i = 0;
  a->stdin_fd = fds[i++];
  a->out_fd = fds[i++];
  a->stdout_fd = fds[i++];
  if (a->cwd_fd >= 0) a->cwd_fd = fds[i++];
  for (size_t j = 0; j < a->pass_count; ++j) a->pass_fds[j] = fds[i++];
  a->cgroup_fd = -1;  // joined above
  a->keep_fd = sock;  // closes on execve: the executor's sign that it happened
  ChildMain(a);
  _exit(127);
}

// Copies `args` into `area`, with its strings and arrays in the area's data. False when they
// do not fit.
bool FillArea(SpawnerArea* area, const ChildArgs& args) {
  char* p = area->data;
  char* const end = area->data + SpawnerDataBytes();
  auto copy = [&](const char* str) -> char* {
    const size_t n = strlen(str) + 1;
    if (static_cast<size_t>(end - p) < n) return nullptr;
    char* out = static_cast<char*>(memcpy(p, str, n));
    p += n;
    return out;
  };
  auto copy_array = [&](char* const* strings) -> char** {
    size_t count = 0;
    while (strings[count] != nullptr) ++count;
    p += (alignof(char*) - reinterpret_cast<uintptr_t>(p) % alignof(char*)) % alignof(char*);
    if (static_cast<size_t>(end - p) < (count + 1) * sizeof(char*)) return nullptr;
    char** out = reinterpret_cast<char**>(p);
    p += (count + 1) * sizeof(char*);
    for (size_t i = 0; i < count; ++i) {
      out[i] = copy(strings[i]);
      if (out[i] == nullptr) return nullptr;
    }
    out[count] = nullptr;
    return out;
  };
  ChildArgs& a = area->args;
  a = args;
  a.path = copy(args.path);
  char** argv = copy_array(args.argv);
  char** envp = copy_array(args.envp);
  if (a.path == nullptr || argv == nullptr || envp == nullptr) return false;
  a.argv = argv;
  a.envp = envp;
  a.keep_fd = -1;
  a.error = 0;
  a.step = nullptr;
  return true;
}

}  // namespace

// RunChild's access to a spawner.
struct SpawnerAccess {
  // Hands the command in `args` to `spawner` and waits until it has executed it or failed
  // (then `error`/`step` of the area say why). False, with the spawner untouched, when it
  // cannot take it (too large a command, or the spawner is gone): start it another way.
  static bool Launch(Spawner* spawner, const ChildArgs& args, ChildArgs** result) {
    if (spawner->used_ || !FillArea(spawner->area_, args)) return false;
    int fds[kSpawnerFds];
    size_t count = 0;
    fds[count++] = args.stdin_fd;
    fds[count++] = args.out_fd;
    fds[count++] = args.stdout_fd;
    if (args.cwd_fd >= 0) fds[count++] = args.cwd_fd;
    for (size_t i = 0; i < args.pass_count; ++i) fds[count++] = args.pass_fds[i];
    const char go = 'G';
    if (SendWithFds(spawner->socket_, &go, 1, fds, count) != 1) return false;
    spawner->used_ = true;  // from here the pid is the command's: RunChild reaps it
    // EOF once it executed (the socket is close-on-exec) or exited.
    struct pollfd wait = {spawner->socket_, POLLIN, 0};
    while (true) {
      const int ready = poll(&wait, 1, 30000);
      if (ready < 0 && errno == EINTR) continue;
      if (ready <= 0) kill(spawner->pid_, SIGKILL);  // stuck: cannot be; killed, then reaped
      break;
    }
    *result = &spawner->area_->args;
    return true;
  }
};

absl::StatusOr<std::unique_ptr<Spawner>> Spawner::Start(int cgroup_procs_fd) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
    return StartStatus(errno, "spawner socketpair");
  }
  void* memory = mmap(nullptr, kSpawnerAreaBytes, PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (memory == MAP_FAILED) {
    close(sv[0]);
    close(sv[1]);
    return StartStatus(errno, "spawner memory");
  }
  std::unique_ptr<Spawner> spawner(new Spawner());
  spawner->socket_ = sv[0];
  SpawnerArea* area = static_cast<SpawnerArea*>(memory);
  spawner->area_ = area;
  area->sock = sv[1];
  area->procs_fd = cgroup_procs_fd;
  area->parent = getpid();
  area->pid = -1;
  // The holder thread forks the spawner, then waits until the spawner is released. The command
  // (bubblewrap asks to die with its parent, the thread that forked it) never outlives it.
  spawner->holder_ = std::thread([spawner = spawner.get(), theirs = sv[1]] {
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);  // the spawner starts with every signal blocked
    const pid_t pid = fork();
    if (pid == 0) {
      SpawnerMain(spawner->area_);
      _exit(127);
    }
    spawner->cloned_pid_ = pid;
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    close(theirs);  // the executor's copy: EOF for the executor once the spawner's is gone too
    spawner->release_.WaitForNotification();
  });
  struct pollfd ready = {spawner->socket_, POLLIN, 0};
  char byte = 0;
  int r;
  do {
    r = poll(&ready, 1, 10000);
  } while (r < 0 && errno == EINTR);
  if (r != 1 || read(spawner->socket_, &byte, 1) != 1 || byte != 'R') {
    return absl::InternalError("a spawner could not be started in its cgroup");
  }
  spawner->pid_ = area->pid;
  return spawner;
}

Spawner::~Spawner() {
  if (socket_ >= 0) close(socket_);  // an unused spawner exits on EOF
  if (!used_ && pid_ > 0) kill(pid_, SIGKILL);
  release_.Notify();
  if (holder_.joinable()) holder_.join();  // returns once the spawner executed or exited
  // Known from clone even when the spawner never said it was ready.
  const int pid = pid_ > 0 ? pid_ : cloned_pid_;
  if (!used_ && pid > 0) {
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  if (area_ != nullptr) munmap(area_, kSpawnerAreaBytes);
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

  args.keep_fd = -1;
  int pid = -1;
  ChildArgs* started = nullptr;
  if (spec.spawner != nullptr && SpawnerAccess::Launch(spec.spawner, args, &started)) {
    pid = spec.spawner->pid();
  } else {
    void* stack = mmap(nullptr, kChildStackBytes, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (stack == MAP_FAILED) return StartStatus(errno, "child stack");
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    // Like posix_spawn: the child shares our memory and we are suspended until it executes.
    pid = clone(ChildMain, static_cast<char*>(stack) + kChildStackBytes,
                CLONE_VM | CLONE_VFORK | SIGCHLD, &args);
    const int clone_errno = errno;
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    munmap(stack, kChildStackBytes);
    if (pid < 0) return StartStatus(clone_errno, "clone");
    started = &args;
  }
  if (started->error != 0) {
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return StartStatus(started->error,
                       absl::StrCat("cannot start ", spec.path, " (", started->step, ")"));
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
