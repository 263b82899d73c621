// malloc_tuning_probe: what malloc_tuning_test starts. It logs the malloc tunables in effect
// (LogMallocTunables, on stderr), then measures how many freed blocks of one size this thread's
// cache gave back in last-freed-first order and prints that on stdout.
#include <cstdio>
#include <cstdlib>

#include "common/log.h"
#include "common/malloc_tuning.h"

namespace {

constexpr int kBlocks = 100;  // under the services' tcache_count of 128, far over glibc's 7
constexpr size_t kBlockBytes = 512;

}  // namespace

int main() {
  rein::SetLogService("malloc_tuning_probe");
  rein::LogMallocTunables();
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
  return 0;
}
