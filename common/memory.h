// Keeping a service's resident memory near its idle size after bursts of large requests.
#ifndef REIN_COMMON_MEMORY_H_
#define REIN_COMMON_MEMORY_H_

#include <cstddef>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace rein {

struct MemoryOptions {
  // Allocations of at least this many bytes get pages of their own (mmap) that go back to the
  // system when freed. Fixing it also stops glibc from raising the threshold after the first
  // large free, which otherwise keeps every later 4 MiB request buffer in the heap for good.
  // 0 = leave the allocator's default.
  size_t mmap_threshold_bytes = 128 * 1024;
  // How often the heap is checked for free memory to hand back; zero = never.
  absl::Duration release_interval = absl::Seconds(1);
  // Free heap memory (fragments between live blocks) the allocator may keep before it is
  // returned with ReleaseFreeMemory. Small enough that a burst leaves little behind, large enough
  // that a light load does not trim on every check.
  size_t release_above_bytes = 4 << 20;
};

// Applies MemoryOptions to glibc's malloc (mallopt of the mmap threshold). Call once, early in
// main, before threads start.
void ConfigureAllocator(const MemoryOptions& options);

// Free bytes glibc's malloc holds in its heaps (free heap blocks, not returned to the system).
size_t AllocatorFreeBytes();

// Hands free heap memory back to the system (malloc_trim); returns true if any was released.
bool ReleaseFreeMemory();

// A background thread that looks at the heaps every `release_interval` and calls
// ReleaseFreeMemory while they hold more than `release_above_bytes` free, again only after
// that figure moved by over 1 MiB (so a quiet heap is not trimmed over and over). At most one
// release per interval; one costs about a millisecond per 30 MiB of fragments. Thread-safe;
// Stop() (or the destructor) joins.
class MemoryReleaser {
 public:
  explicit MemoryReleaser(MemoryOptions options);
  ~MemoryReleaser();
  MemoryReleaser(const MemoryReleaser&) = delete;
  MemoryReleaser& operator=(const MemoryReleaser&) = delete;

  // Starts the thread (no-op when the interval is zero or it already runs).
  void Start();
  void Stop();
  // How many times memory was handed back so far.
  int releases() const;

 private:
  void Loop();

  const MemoryOptions options_;
  mutable absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  int releases_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread thread_;
};

}  // namespace rein

#endif  // REIN_COMMON_MEMORY_H_
