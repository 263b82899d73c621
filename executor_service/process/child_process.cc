// Starting, capturing and stopping one child process.
#include "executor_service/process/child_process.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
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
#include "executor_service/process/child_exec.h"
#include "executor_service/process/errno_status.h"
#include "executor_service/process/fd_passing.h"
#include "executor_service/process/unique_fd.h"

namespace rein {
namespace {

constexpr size_t kChildStackBytes = 64 << 10;
constexpr absl::Duration kDrainGrace = absl::Seconds(1);

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

namespace {

// Copies `args` into `area`, with its strings and arrays in the area's data as offsets from the
// area's start (SpawnerArea). False when they do not fit.
bool FillArea(SpawnerArea* area, const ChildArgs& args) {
  char* const base = reinterpret_cast<char*>(area);
  char* p = area->data;
  char* const end = area->data + SpawnerDataBytes();
  auto offset = [base](const char* at) { return reinterpret_cast<char*>(at - base); };
  auto copy = [&](const char* str) -> char* {
    const size_t n = strlen(str) + 1;
    if (static_cast<size_t>(end - p) < n) return nullptr;
    char* out = static_cast<char*>(memcpy(p, str, n));
    p += n;
    return offset(out);
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
    return reinterpret_cast<char**>(offset(reinterpret_cast<char*>(out)));
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
  a.step[0] = '\0';
  return true;
}

// Starts rein-spawner at `binary` from the calling (holder) thread, its parent, with `sock`,
// `area_fd` and `procs_fd` (-1 = none) as its descriptors 3, 4 and 5, every signal at its
// default and blocked, nothing else open and an empty environment. posix_spawn does not copy
// the executor's memory. Returns the pid, or -1.
pid_t SpawnSpawner(const std::string& binary, int sock, int area_fd, int procs_fd) {
  // Above the targets, so that no dup2 below clobbers a descriptor still to be moved.
  UniqueFd s(fcntl(sock, F_DUPFD_CLOEXEC, 6));
  UniqueFd a(fcntl(area_fd, F_DUPFD_CLOEXEC, 6));
  UniqueFd c(procs_fd >= 0 ? fcntl(procs_fd, F_DUPFD_CLOEXEC, 6) : -1);
  if (!s.valid() || !a.valid() || (procs_fd >= 0 && !c.valid())) return -1;
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  if (posix_spawn_file_actions_init(&actions) != 0) return -1;
  if (posix_spawnattr_init(&attr) != 0) {
    posix_spawn_file_actions_destroy(&actions);
    return -1;
  }
  sigset_t all;
  sigfillset(&all);
  bool ok = posix_spawn_file_actions_adddup2(&actions, s.get(), 3) == 0 &&
            posix_spawn_file_actions_adddup2(&actions, a.get(), 4) == 0 &&
            (procs_fd < 0 || posix_spawn_file_actions_adddup2(&actions, c.get(), 5) == 0) &&
            posix_spawn_file_actions_addclosefrom_np(&actions, procs_fd >= 0 ? 6 : 5) == 0 &&
            posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF) == 0 &&
            posix_spawnattr_setsigmask(&attr, &all) == 0 &&
            posix_spawnattr_setsigdefault(&attr, &all) == 0;
  pid_t pid = -1;
  if (ok) {
    char arg0[] = "rein-spawner", arg1[] = "3", arg2[] = "4", arg3[] = "5";
    char* argv[] = {arg0, arg1, arg2, procs_fd >= 0 ? arg3 : nullptr, nullptr};
    char* envp[] = {nullptr};
    if (posix_spawn(&pid, binary.c_str(), &actions, &attr, argv, envp) != 0) pid = -1;
  }
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  return pid;
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

absl::StatusOr<std::unique_ptr<Spawner>> Spawner::Start(int cgroup_procs_fd,
                                                        const std::string& binary) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
    return StartStatus(errno, "spawner socketpair");
  }
  UniqueFd ours(sv[0]);
  UniqueFd theirs(sv[1]);
  UniqueFd area_fd(static_cast<int>(syscall(SYS_memfd_create, "rein-spawner", MFD_CLOEXEC)));
  if (!area_fd.valid() || ftruncate(area_fd.get(), kSpawnerAreaBytes) != 0) {
    return StartStatus(errno, "spawner memory");
  }
  void* memory =
      mmap(nullptr, kSpawnerAreaBytes, PROT_READ | PROT_WRITE, MAP_SHARED, area_fd.get(), 0);
  if (memory == MAP_FAILED) return StartStatus(errno, "spawner memory");
  std::unique_ptr<Spawner> spawner(new Spawner());
  spawner->socket_ = ours.Release();
  SpawnerArea* area = static_cast<SpawnerArea*>(memory);
  spawner->area_ = area;
  area->sock = theirs.get();
  area->procs_fd = cgroup_procs_fd;
  area->parent = getpid();
  area->pid = -1;
  // The holder thread starts the spawner, then waits until the spawner is released. The command
  // (bubblewrap asks to die with its parent, the thread that started it) never outlives it.
  spawner->holder_ = std::thread([spawner = spawner.get(), theirs = theirs.Release(),
                                  area_fd = area_fd.Release(), cgroup_procs_fd, binary] {
    pid_t pid = -1;
    if (!binary.empty()) {
      pid = SpawnSpawner(binary, theirs, area_fd, cgroup_procs_fd);
    } else {
      sigset_t all, old;
      sigfillset(&all);
      pthread_sigmask(SIG_SETMASK, &all, &old);  // the spawner starts with every signal blocked
      pid = fork();
      if (pid == 0) {
        ResetSignalHandlers();
        SpawnerMain(spawner->area_);
      }
      pthread_sigmask(SIG_SETMASK, &old, nullptr);
    }
    spawner->cloned_pid_ = pid;
    close(area_fd);
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
  args.reset_signals = true;
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
