// rein-sandbox-init: pid 1 of a resident sandbox (executor_service/SANDBOX.md, "Resident
// sandbox"). bubblewrap starts it (--as-pid-1) instead of a command, inside the sandbox every
// command of one run shares: same namespaces, mounts, uid, no capabilities, seccomp filter. It
// holds no privilege the commands lack. Per command it receives, on the socket whose number is
// its only argument, the command (cwd, argv, environment) and its stdin, stdout and stderr
// (SCM_RIGHTS); it forks the command, reaps everything until the command has exited, then kills
// every other process of the pid namespace, reaps them all, empties /tmp and /dev/shm, removes
// the System V IPC objects left behind, and only then replies with the command's wait status.
// So nothing of one command is alive, or left in /tmp, when the next one starts.
//
// Protocol (SOCK_SEQPACKET, one message each):
//   init -> executor  "R"                          ready
//   executor -> init  u32 argc, u32 envc, cwd\0, argv[i]\0..., env[i]\0...  + 3 descriptors
//   init -> executor  "X" + int32 wait status      the command and everything else are gone
//                     "D" + int32 wait status      the same, but a leftover could not be
//                                                  removed, or init's own limits, priority,
//                                                  affinity, scheduling, I/O priority or OOM
//                                                  score were changed, or its fork failed:
//                                                  the sandbox is not used again
// Any protocol error or EOF makes init exit; pid 1 exiting kills the whole namespace.
//
// Plain C++ on system calls only, no dependencies: it runs in the sandbox's minimal root.
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <initializer_list>

#include "executor_service/process/fd_passing.h"
#include "executor_service/sandbox/resident/sandbox_init_limits.h"

namespace {

constexpr size_t kMaxMessageBytes = 256 << 10;  // the executor sends at most 128 KiB
constexpr size_t kMaxStrings = rein::kSandboxInitMaxStrings;
constexpr const char* kDefaultPath = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin";

char message[kMaxMessageBytes + 1];
// [cwd][argv...][NULL][env...][NULL]: at most 1 + kMaxStrings strings and two NULLs.
char* strings[kMaxStrings + 3];

void WriteAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    data += n;
    size -= static_cast<size_t>(n);
  }
}

void Say(int fd, const char* a, const char* b, const char* c, const char* d = "") {
  for (const char* part : {a, b, c, d}) WriteAll(fd, part, strlen(part));
  WriteAll(fd, "\n", 1);
}

// In the forked command: execvp with the PATH of the command's own environment.
[[noreturn]] void ExecCommand(char** argv, char** envp) {
  const char* name = argv[0];
  if (strchr(name, '/') != nullptr) {
    execve(name, argv, envp);
    Say(2, "rein-sandbox-init: execvp ", name, ": ", strerror(errno));
    _exit(127);
  }
  // The first PATH=, as getenv (and so bubblewrap's execvp on the cold path) takes it.
  const char* path = kDefaultPath;
  for (char** e = envp; *e != nullptr; ++e) {
    if (strncmp(*e, "PATH=", 5) == 0) {
      path = *e + 5;
      break;
    }
  }
  int saved = ENOENT;
  char candidate[4096];
  const size_t name_len = strlen(name);
  for (const char* p = path;;) {
    const char* end = strchr(p, ':');
    const size_t dir_len = end != nullptr ? static_cast<size_t>(end - p) : strlen(p);
    if (dir_len > 0 && dir_len + 1 + name_len < sizeof(candidate)) {
      memcpy(candidate, p, dir_len);
      candidate[dir_len] = '/';
      memcpy(candidate + dir_len + 1, name, name_len + 1);
      execve(candidate, argv, envp);
      if (errno != ENOENT && errno != ENOTDIR) saved = errno;
    }
    if (end == nullptr) break;
    p = end + 1;
  }
  Say(2, "rein-sandbox-init: execvp ", name, ": ", strerror(saved));
  _exit(127);
}

// Removes everything inside the directory `dir_fd` (not the directory itself). The command ran as
// this uid, so whatever it made is ours to remove; a directory it made unreadable is opened up.
void EmptyDirectory(int dir_fd, int depth) {
  if (depth > 256) {
    close(dir_fd);
    return;
  }
  DIR* dir = fdopendir(dir_fd);
  if (dir == nullptr) {
    close(dir_fd);
    return;
  }
  // One pass (what cannot be removed stays, and the caller sees /tmp is not empty): a second
  // pass per level would make a deep tree cost exponential time.
  while (struct dirent* entry = readdir(dir)) {
    const char* name = entry->d_name;
    if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0) continue;
    if (unlinkat(dirfd(dir), name, 0) == 0) continue;
    if (errno == EISDIR || errno == EPERM) {
      fchmodat(dirfd(dir), name, 0700, 0);
      const int sub = openat(dirfd(dir), name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (sub >= 0) EmptyDirectory(sub, depth + 1);
      unlinkat(dirfd(dir), name, AT_REMOVEDIR);
    }
  }
  closedir(dir);
}

void EmptyPath(const char* path) {
  const int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd >= 0) EmptyDirectory(fd, 0);
}

// /dev as bubblewrap made it (its own tmpfs, writable by the command's uid): the device nodes are
// bind mounts a command cannot remove or replace, but it can add entries, replace the symbolic
// links (/dev/stdout, /dev/fd, ...) and change modes. Recorded at start, restored after each
// command.
struct DevEntry {
  char name[64];
  mode_t mode;
  bool link;
  char target[256];
};
constexpr int kMaxDevEntries = 64;
DevEntry dev_entries[kMaxDevEntries];
int dev_count = 0;
mode_t dev_mode = 0, tmp_mode = 0;

mode_t ModeOf(const char* path) {
  struct stat st;
  return lstat(path, &st) == 0 ? st.st_mode : 0;
}

void RecordDev() {
  dev_mode = ModeOf("/dev");
  tmp_mode = ModeOf("/tmp");
  DIR* dir = opendir("/dev");
  if (dir == nullptr) return;
  while (struct dirent* entry = readdir(dir)) {
    if (strcmp(entry->d_name, ".") == 0 || strcmp(entry->d_name, "..") == 0) continue;
    if (dev_count == kMaxDevEntries || strlen(entry->d_name) >= sizeof(DevEntry::name)) continue;
    DevEntry& e = dev_entries[dev_count];
    struct stat st;
    if (fstatat(dirfd(dir), entry->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    strcpy(e.name, entry->d_name);
    e.mode = st.st_mode;
    e.link = S_ISLNK(st.st_mode);
    e.target[0] = '\0';
    if (e.link) {
      const ssize_t n = readlinkat(dirfd(dir), e.name, e.target, sizeof(e.target) - 1);
      if (n <= 0) continue;
      e.target[n] = '\0';
    }
    ++dev_count;
  }
  closedir(dir);
}

const DevEntry* Recorded(const char* name) {
  for (int i = 0; i < dev_count; ++i) {
    if (strcmp(dev_entries[i].name, name) == 0) return &dev_entries[i];
  }
  return nullptr;
}

void RemoveAt(int dir_fd, const char* name) {
  if (unlinkat(dir_fd, name, 0) == 0) return;
  if (errno == EISDIR || errno == EPERM) {
    fchmodat(dir_fd, name, 0700, 0);
    const int sub = openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (sub >= 0) EmptyDirectory(sub, 0);
    unlinkat(dir_fd, name, AT_REMOVEDIR);
  }
}

void RestoreDev() {
  const int dev = open("/dev", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dev < 0) return;
  if (dev_mode != 0) fchmod(dev, dev_mode & 07777);
  DIR* dir = fdopendir(dup(dev));
  if (dir != nullptr) {
    while (struct dirent* entry = readdir(dir)) {
      if (strcmp(entry->d_name, ".") == 0 || strcmp(entry->d_name, "..") == 0) continue;
      if (Recorded(entry->d_name) == nullptr) RemoveAt(dev, entry->d_name);
    }
    closedir(dir);
  }
  for (int i = 0; i < dev_count; ++i) {
    const DevEntry& e = dev_entries[i];
    struct stat st;
    bool present = fstatat(dev, e.name, &st, AT_SYMLINK_NOFOLLOW) == 0;
    // Another type in its place (/dev/shm replaced by a symbolic link, say) is removed, never
    // followed, and made again.
    if (present && (st.st_mode & S_IFMT) != (e.mode & S_IFMT)) {
      RemoveAt(dev, e.name);
      present = false;
    }
    if (e.link) {
      char target[sizeof(e.target)];
      ssize_t n =
          present && S_ISLNK(st.st_mode) ? readlinkat(dev, e.name, target, sizeof(target) - 1) : -1;
      if (n >= 0) target[n] = '\0';
      if (n < 0 || strcmp(target, e.target) != 0) {
        if (present) RemoveAt(dev, e.name);
        symlinkat(e.target, dev, e.name);
      }
      continue;
    }
    if (!present && S_ISDIR(e.mode) && mkdirat(dev, e.name, 0700) == 0) {
      fchmodat(dev, e.name, e.mode & 07777, 0);  // not through the umask
    }
    if (present && (st.st_mode & 07777) != (e.mode & 07777)) {
      fchmodat(dev, e.name, e.mode & 07777, 0);  // the same type, so not a link
    }
  }
  close(dev);
  // /tmp is a mount point: a command can change its mode, not replace it.
  const int tmp = open("/tmp", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (tmp >= 0) {
    if (tmp_mode != 0) fchmod(tmp, tmp_mode & 07777);
    close(tmp);
  }
}

// True when `path` is a directory (not a symbolic link to one) and empty.
bool IsEmpty(const char* path) {
  const int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return false;
  DIR* dir = fdopendir(fd);
  if (dir == nullptr) {
    close(fd);
    return false;
  }
  bool empty = true;
  while (struct dirent* entry = readdir(dir)) {
    if (strcmp(entry->d_name, ".") != 0 && strcmp(entry->d_name, "..") != 0) empty = false;
  }
  closedir(dir);
  return empty;
}

// True when /dev has exactly the recorded entries, each of the type it had, links pointing where
// they did.
bool DevAsRecorded() {
  DIR* dir = opendir("/dev");
  if (dir == nullptr) return false;
  int seen = 0;
  bool same = true;
  while (struct dirent* entry = readdir(dir)) {
    if (strcmp(entry->d_name, ".") == 0 || strcmp(entry->d_name, "..") == 0) continue;
    const DevEntry* e = Recorded(entry->d_name);
    if (e == nullptr) {
      same = false;
      break;
    }
    ++seen;
    struct stat st;
    if (fstatat(dirfd(dir), e->name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
        (st.st_mode & S_IFMT) != (e->mode & S_IFMT)) {
      same = false;
      break;
    }
    if (e->link) {
      char target[sizeof(e->target)];
      const ssize_t n = readlinkat(dirfd(dir), e->name, target, sizeof(target) - 1);
      if (n < 0 || static_cast<size_t>(n) != strlen(e->target) ||
          memcmp(target, e->target, static_cast<size_t>(n)) != 0) {
        same = false;
      }
    }
  }
  closedir(dir);
  return same && seen == dev_count;
}

// Removes the System V IPC objects of this IPC namespace (the sandbox's own): the ids are in
// /proc/sysvipc/{shm,sem,msg}, second column. With `remove` false, only looks. True when there
// was none (or the kernel has no System V IPC).
bool NoIpcObjects(bool remove) {
  const char* files[] = {"/proc/sysvipc/shm", "/proc/sysvipc/sem", "/proc/sysvipc/msg"};
  bool none = true;
  for (int kind = 0; kind < 3; ++kind) {
    FILE* f = fopen(files[kind], "re");
    if (f == nullptr) {
      if (errno != ENOENT) none = false;
      continue;
    }
    char line[1024];
    bool header = true;
    while (fgets(line, sizeof(line), f) != nullptr) {
      if (header) {
        header = false;
        continue;
      }
      none = false;
      long key = 0;
      int id = -1;
      if (!remove || sscanf(line, "%ld %d", &key, &id) != 2 || id < 0) continue;
      if (kind == 0) shmctl(id, IPC_RMID, nullptr);
      if (kind == 1) semctl(id, 0, IPC_RMID);
      if (kind == 2) msgctl(id, IPC_RMID, nullptr);
    }
    fclose(f);
  }
  return none;
}

// Removes them; true when none is left (looked at again only when there were some, so the
// usual command costs one read of each file).
bool RemoveIpcObjects() { return NoIpcObjects(/*remove=*/true) || NoIpcObjects(/*remove=*/false); }

// Kills every other process of the pid namespace (pid 1 is spared by kill(-1), and only pid 1
// calls it) and reaps them, until none is left. False when some are still there.
bool KillTheRest() {
  for (int round = 0; round < 1000; ++round) {
    kill(-1, SIGKILL);
    int status;
    while (waitpid(-1, &status, __WALL) > 0 || errno == EINTR) {
    }
    if (kill(-1, 0) == -1 && errno == ESRCH) return true;
  }
  return false;
}

// What a command could change about init itself from outside (same uid, no capability):
// its resource limits (prlimit), nice value (setpriority, also through PRIO_USER), CPU
// affinity, scheduling attributes, I/O priority, OOM score adjustment and autogroup nice
// (/proc/1/..., writable when the executor runs as root). Recorded at start and compared after
// every command: any change retires the sandbox, since init cannot always put it back (a hard
// limit once lowered stays lowered) and a later command would inherit it or break init.
struct SchedAttr {  // struct sched_attr, SCHED_ATTR_SIZE_VER1
  uint32_t size, policy;
  uint64_t flags;
  int32_t nice;
  uint32_t priority;
  uint64_t runtime, deadline, period;
  uint32_t util_min, util_max;
};
struct InitState {
  struct rlimit limits[RLIM_NLIMITS];
  int nice;
  cpu_set_t affinity;
  SchedAttr sched;
  long ioprio;
  char oom_score_adj[32];
  char autogroup[64];
};
InitState recorded_state;
int oom_fd = -1, autogroup_fd = -1;  // /proc/self/{oom_score_adj,autogroup}, kept open

void ReadSmallFile(int fd, char* out, size_t size) {
  memset(out, 0, size);
  if (fd >= 0 && pread(fd, out, size - 1, 0) < 0) strcpy(out, "?");
}

void ReadState(InitState* s) {
  memset(s, 0, sizeof(*s));
  for (int r = 0; r < RLIM_NLIMITS; ++r)
    getrlimit(static_cast<__rlimit_resource>(r), &s->limits[r]);
  errno = 0;
  s->nice = getpriority(PRIO_PROCESS, 0);
  if (errno != 0) s->nice = 100;
  sched_getaffinity(0, sizeof(s->affinity), &s->affinity);
  syscall(SYS_sched_getattr, 0, &s->sched, sizeof(s->sched), 0);
  s->ioprio = syscall(SYS_ioprio_get, 1 /* IOPRIO_WHO_PROCESS */, 0);
  ReadSmallFile(oom_fd, s->oom_score_adj, sizeof(s->oom_score_adj));
  ReadSmallFile(autogroup_fd, s->autogroup, sizeof(s->autogroup));
}

void RecordState() {
  oom_fd = open("/proc/self/oom_score_adj", O_RDONLY | O_CLOEXEC);
  autogroup_fd = open("/proc/self/autogroup", O_RDONLY | O_CLOEXEC);
  ReadState(&recorded_state);
}

// Init's own CPU time (its cleanup work, summed over the run) counts against RLIMIT_CPU like
// any process's: past the hard limit the kernel would kill init in the middle of a command.
// Retired long before, at half the soft limit.
bool CpuLeft(const struct rlimit& cpu) {
  if (cpu.rlim_cur == RLIM_INFINITY) return true;
  struct rusage usage;
  if (getrusage(RUSAGE_SELF, &usage) != 0) return false;
  const uint64_t used = static_cast<uint64_t>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + 1;
  return used * 2 < cpu.rlim_cur;
}

bool StateAsRecorded() {
  InitState now;
  ReadState(&now);
  const InitState& was = recorded_state;
  for (int r = 0; r < RLIM_NLIMITS; ++r) {
    if (now.limits[r].rlim_cur != was.limits[r].rlim_cur ||
        now.limits[r].rlim_max != was.limits[r].rlim_max) {
      return false;
    }
  }
  return now.nice == was.nice && CPU_EQUAL(&now.affinity, &was.affinity) &&
         memcmp(&now.sched, &was.sched, sizeof(SchedAttr)) == 0 && now.ioprio == was.ioprio &&
         strcmp(now.oom_score_adj, was.oom_score_adj) == 0 &&
         strcmp(now.autogroup, was.autogroup) == 0 && CpuLeft(now.limits[RLIMIT_CPU]);
}

// Reads one command; false on EOF or a malformed message (then init exits).
bool ReceiveCommand(int sock, int fds[3], char** cwd, char*** argv, char*** envp) {
  rein::ReceivedFds got;
  const ssize_t n = rein::ReceiveWithFds(sock, message, kMaxMessageBytes, fds, 3, &got);
  if (n <= 0) return false;
  if (got.count != 3 || got.dropped || got.truncated || n < 8) return false;
  message[n] = '\0';
  uint32_t argc, envc;
  memcpy(&argc, message, 4);
  memcpy(&envc, message + 4, 4);
  if (argc == 0 || argc > kMaxStrings || envc > kMaxStrings - argc) return false;
  // cwd, then argc + envc strings, each NUL-terminated, filling the message exactly.
  char* p = message + 8;
  char* const end = message + n;
  size_t index = 0;
  const size_t want = 1 + argc + envc;
  while (p < end && index < want) {
    char* nul = static_cast<char*>(memchr(p, '\0', static_cast<size_t>(end - p)));
    if (nul == nullptr) return false;
    strings[index++] = p;
    p = nul + 1;
  }
  if (index != want || p != end) return false;
  *cwd = strings[0];
  // strings: [cwd][argv...][NULL][env...][NULL]: shift env by one to make room for argv's NULL.
  for (size_t i = want; i > 1 + argc; --i) strings[i] = strings[i - 1];
  strings[1 + argc] = nullptr;
  strings[want + 1] = nullptr;
  *argv = strings + 1;
  *envp = strings + 2 + argc;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    Say(2, "rein-sandbox-init: ", "usage: rein-sandbox-init SOCKET_FD", "");
    return 2;
  }
  const int sock = atoi(argv[1]);
  if (sock < 3 || fcntl(sock, F_GETFD) < 0) {
    Say(2, "rein-sandbox-init: ", "no socket at descriptor ", argv[1]);
    return 2;
  }
  // Nothing else of bubblewrap's or the executor's stays open.
  if (sock > 3) syscall(SYS_close_range, 3u, static_cast<unsigned>(sock - 1), 0);
  syscall(SYS_close_range, static_cast<unsigned>(sock + 1), ~0u, 0);
  fcntl(sock, F_SETFD, FD_CLOEXEC);
  // Not dumpable: a command (same uid) cannot read or write init's memory or descriptors
  // through /proc/1 (ptrace is refused by the seccomp filter as well).
  prctl(PR_SET_DUMPABLE, 0);
  // Its own stdio goes nowhere: the executor's pipe is read only while bubblewrap starts.
  const int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null_fd >= 0) {
    dup2(null_fd, 0);
    dup2(null_fd, 1);
    dup2(null_fd, 2);
    if (null_fd > 2) close(null_fd);
  }
  RecordDev();
  RecordState();
  WriteAll(sock, "R", 1);

  for (;;) {
    int fds[3] = {-1, -1, -1};
    char* cwd = nullptr;
    char** command_argv = nullptr;
    char** command_env = nullptr;
    if (!ReceiveCommand(sock, fds, &cwd, &command_argv, &command_env)) return 1;
    const pid_t child = fork();
    if (child == 0) {
      setsid();
      if (dup2(fds[0], 0) < 0 || dup2(fds[1], 1) < 0 || dup2(fds[2], 2) < 0) _exit(127);
      syscall(SYS_close_range, 3u, ~0u, 0);
      if (chdir(cwd) != 0) {
        Say(2, "rein-sandbox-init: chdir ", cwd, ": no such directory");
        _exit(127);
      }
      sigset_t none;
      sigemptyset(&none);
      sigprocmask(SIG_SETMASK, &none, nullptr);
      ExecCommand(command_argv, command_env);
    }
    if (child < 0) Say(fds[2], "rein-sandbox-init: fork: ", strerror(errno), "");
    for (int fd : fds) close(fd);
    int status = 0;
    if (child < 0) {
      status = 127 << 8;  // exit 127, as for a command that cannot be started
    } else {
      // Reaps orphans as they come (they count against the pids limit) until the command ends.
      for (;;) {
        int s;
        const pid_t pid = waitpid(-1, &s, __WALL);
        if (pid == child) {
          status = s;
          break;
        }
        if (pid < 0 && errno != EINTR) break;
      }
    }
    const bool all_gone = KillTheRest();
    RestoreDev();
    EmptyPath("/tmp");
    EmptyPath("/dev/shm");
    const bool no_ipc = RemoveIpcObjects();
    // 'D' (dirty): something could not be reset (a directory nested deeper than the walk
    // goes, say), init itself was changed, or it could not fork; the executor then retires
    // this sandbox after the reply.
    const bool clean = child >= 0 && all_gone && no_ipc && IsEmpty("/tmp") && IsEmpty("/dev/shm") &&
                       DevAsRecorded() && StateAsRecorded();
    char reply[5] = {clean ? 'X' : 'D'};
    const int32_t value = status;
    memcpy(reply + 1, &value, 4);
    ssize_t sent;
    do {
      sent = send(sock, reply, sizeof(reply), MSG_NOSIGNAL);
    } while (sent < 0 && errno == EINTR);
    if (sent != static_cast<ssize_t>(sizeof(reply))) return 1;
  }
}
