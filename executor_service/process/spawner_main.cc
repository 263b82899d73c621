// rein-spawner: a spawner (child_process.h, Spawner) as a program of its own. The executor
// starts it ahead of time with posix_spawn (its memory is never copied) as
//   rein-spawner SOCKET_FD AREA_FD [CGROUP_PROCS_FD]
// with every signal at its default and blocked. Its address space is a handful of mappings, so
// the execve of a command (bubblewrap) that ends it tears down almost nothing, where a fork of
// the executor tore down a copy of the executor's hundreds of mappings on the command's path.
// Statically linked, without the executor's libraries; system calls only after the area is
// mapped.
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "executor_service/process/child_exec.h"

namespace {

// A descriptor number in `text`, or -1.
int Fd(const char* text) {
  char* end = nullptr;
  const long fd = strtol(text, &end, 10);
  if (end == text || *end != '\0' || fd < 0 || fd > 1 << 20) return -1;
  return static_cast<int>(fd);
}

void Usage() {
  static const char kUsage[] =
      "rein-spawner: usage: rein-spawner SOCKET_FD AREA_FD [CGROUP_PROCS_FD] (started by "
      "rein-executor)\n";
  (void)!write(2, kUsage, sizeof(kUsage) - 1);
  _exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 && argc != 4) Usage();
  const int sock = Fd(argv[1]);
  const int area_fd = Fd(argv[2]);
  const int procs_fd = argc == 4 ? Fd(argv[3]) : -1;
  if (sock < 0 || area_fd < 0 || (argc == 4 && procs_fd < 0)) Usage();
  void* memory =
      mmap(nullptr, rein::kSpawnerAreaBytes, PROT_READ | PROT_WRITE, MAP_SHARED, area_fd, 0);
  if (memory == MAP_FAILED) _exit(1);
  close(area_fd);
  rein::SpawnerArea* area = static_cast<rein::SpawnerArea*>(memory);
  area->sock = sock;
  area->procs_fd = procs_fd;
  rein::SpawnerMain(area);
}
