// The child's side of starting a command (child_exec.h).
#include "executor_service/process/child_exec.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>

#include "executor_service/process/fd_passing.h"

namespace rein {
namespace {

static_assert(kSpawnerFds <= kMaxPassedFds, "one message carries a command's descriptors");

int Fail(ChildArgs* a, const char* step) {
  a->error = errno;
  size_t i = 0;
  for (; step[i] != '\0' && i + 1 < sizeof(a->step); ++i) a->step[i] = step[i];
  a->step[i] = '\0';
  _exit(127);
}

// An offset from the area's start (FillArea in child_process.cc) as a pointer into it.
char* At(SpawnerArea* area, const void* offset) {
  return reinterpret_cast<char*>(area) + reinterpret_cast<uintptr_t>(offset);
}

// Turns the offsets of a null-terminated array at `offset` (and the array's own) into pointers.
char** RelocateArray(SpawnerArea* area, char* const* offset) {
  char** array = reinterpret_cast<char**>(At(area, offset));
  for (size_t i = 0; array[i] != nullptr; ++i) array[i] = At(area, array[i]);
  return array;
}

}  // namespace

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
  if (a->reset_signals) ResetSignalHandlers();
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
  // A spawner dies with the thread that started it while it waits; the command it becomes
  // does not (as a command started by clone does not).
  if (a->keep_fd >= 0) prctl(PR_SET_PDEATHSIG, 0);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  execve(a->path, a->argv, a->envp);
  return Fail(a, "execve");
}

void SpawnerMain(SpawnerArea* area) {
  const int sock = area->sock;
  const int procs_fd = area->procs_fd;
  prctl(PR_SET_PDEATHSIG, SIGKILL);  // while unused, it dies with the thread waiting for it
  if (getppid() != area->parent) _exit(1);
  // Nothing of the executor's stays open here (another command's pipe would never see EOF, and
  // a copy of a journal record's lock would outlive Finish), closed before the slow part.
  const unsigned lo = static_cast<unsigned>(procs_fd >= 0 && procs_fd < sock ? procs_fd : sock);
  const unsigned hi = static_cast<unsigned>(procs_fd > sock ? procs_fd : sock);
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
  a->path = At(area, a->path);
  a->argv = RelocateArray(area, a->argv);
  a->envp = RelocateArray(area, a->envp);
  size_t i = 0;
  a->stdin_fd = fds[i++];
  a->out_fd = fds[i++];
  a->stdout_fd = fds[i++];
  if (a->cwd_fd >= 0) a->cwd_fd = fds[i++];
  for (size_t j = 0; j < a->pass_count; ++j) a->pass_fds[j] = fds[i++];
  a->cgroup_fd = -1;         // joined above
  a->keep_fd = sock;         // closes on execve: the executor's sign that it happened
  a->reset_signals = false;  // at their defaults since the spawner started
  ChildMain(a);
  _exit(127);
}

}  // namespace rein
