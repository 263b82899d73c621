// The child's side of starting a command: what runs between the clone (or a spawner's wake-up)
// and the execve. System calls only, no allocation, no locks and no dependencies, so that both
// the executor (child_process.cc) and rein-spawner (spawner_main.cc) link it.
#ifndef REIN_EXECUTOR_SERVICE_PROCESS_CHILD_EXEC_H_
#define REIN_EXECUTOR_SERVICE_PROCESS_CHILD_EXEC_H_

#include <sys/resource.h>
#include <sys/types.h>

#include <cstddef>

namespace rein {

inline constexpr size_t kMaxPassFds = 64;
// Most descriptors a command hands a spawner: stdin, the output, stdout, the cwd and the passed.
inline constexpr size_t kSpawnerFds = kMaxPassFds + 4;

// Everything the child needs, prepared by the parent: the child only makes system calls on it.
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
  bool reset_signals;  // the executor's handlers are installed here: every signal to default
  int resources[6];
  struct rlimit limits[6];
  // Set by the child when a step fails; read by the parent after the child has exited.
  int error;
  char step[32];
};

// Sets every signal's handler back to its default.
void ResetSignalHandlers();

// Makes the calling process (a fresh child, every signal blocked) the command of `arg` (a
// ChildArgs): descriptors, session, cgroup, limits, then execve. Returns only by _exit(127),
// with ChildArgs::error and ::step saying why.
int ChildMain(void* arg);

// The area a spawner shares with the executor (a memfd mapped by both): how it was started,
// and the command's ChildArgs. ChildArgs' path, argv and envp (and argv's and envp's entries)
// hold offsets from the area's start into `data`, so that the area means the same at any
// address.
inline constexpr size_t kSpawnerAreaBytes = 4 << 20;  // a sparse memfd, pages made on touch

struct SpawnerArea {
  int sock;      // the spawner's end of its socket pair
  int procs_fd;  // cgroup.procs to join, or -1
  pid_t parent;  // the executor
  pid_t pid;     // set by the spawner before it says it is ready
  ChildArgs args;
  char data[1];  // to the end of the mapping
};

inline size_t SpawnerDataBytes() { return kSpawnerAreaBytes - offsetof(SpawnerArea, data); }

// A spawner, once its signals are at their defaults and all blocked: asks to die with the
// thread that started it, closes every descriptor but the area's socket and cgroup.procs, joins
// the cgroup, says 'R' on the socket, waits for the command's descriptors ('G'), and becomes
// the command (ChildMain). Exits 0 when the executor drops it unused.
[[noreturn]] void SpawnerMain(SpawnerArea* area);

}  // namespace rein

#endif  // REIN_EXECUTOR_SERVICE_PROCESS_CHILD_EXEC_H_
