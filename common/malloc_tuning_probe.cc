// malloc_tuning_probe: what malloc_tuning_test starts. It calls TuneMallocOrReexec (unless its
// first argument is "untuned"), then measures how many freed blocks of one size this thread's
// cache gave back in last-freed-first order, and prints that, its pid, its start count and the
// environment the tuning may change.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "common/malloc_tuning.h"

namespace {

constexpr int kBlocks = 100;  // under kMallocTcacheCount, far over glibc's default of 7
constexpr size_t kBlockBytes = 512;

void Print(const char* name) {
  const char* value = getenv(name);
  printf("%s=%s\n", name, value == nullptr ? "(unset)" : value);
}

}  // namespace

int main(int argc, char** argv) {
  const bool tune = !(argc > 1 && strcmp(argv[1], "untuned") == 0);
  // Counts the starts across the exec (the environment survives it, this variable is ours).
  const char* starts = getenv("PROBE_STARTS");
  setenv("PROBE_STARTS", starts == nullptr ? "1" : "2", 1);
  if (tune) rein::TuneMallocOrReexec(argv);
  // Blocks freed in order come back from the thread's cache in the reverse order, as long as
  // the cache holds them all; past its size they go to the shared bins, where neighbours merge
  // and later allocations are cut from the merged block in address order.
  static void* blocks[kBlocks];
  static void* again[kBlocks];
  for (void*& b : blocks) b = malloc(kBlockBytes);
  for (void* b : blocks) free(b);
  for (void*& b : again) b = malloc(kBlockBytes);
  int reversed = 0;
  for (int i = 0; i < kBlocks; ++i) reversed += again[i] == blocks[kBlocks - 1 - i];
  for (void* b : again) free(b);
  printf("reversed=%d of %d\n", reversed, kBlocks);
  printf("pid=%d\n", static_cast<int>(getpid()));
  // The process's name as top and pgrep see it.
  char comm[64] = {0};
  if (FILE* f = fopen("/proc/self/comm", "r")) {
    if (fgets(comm, sizeof comm, f) == nullptr) comm[0] = '\0';
    fclose(f);
  }
  comm[strcspn(comm, "\n")] = '\0';
  printf("comm=%s\n", comm);
  Print("PROBE_STARTS");
  Print("GLIBC_TUNABLES");
  Print("REIN_MALLOC_TUNED");
  Print("REIN_GLIBC_TUNABLES_BEFORE");
  return 0;
}
