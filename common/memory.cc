// Keeping a service's resident memory near its idle size after bursts of large requests, on
// glibc's malloc (the one allocator the services ship with).
#include "common/memory.h"

#include <malloc.h>

namespace rein {

void ConfigureAllocator(const MemoryOptions& options) {
  if (options.mmap_threshold_bytes > 0) {
    mallopt(M_MMAP_THRESHOLD, static_cast<int>(options.mmap_threshold_bytes));
  }
}

size_t AllocatorFreeBytes() {
  struct mallinfo2 info = mallinfo2();
  return info.fordblks;
}

bool ReleaseFreeMemory() { return malloc_trim(0) != 0; }

MemoryReleaser::MemoryReleaser(MemoryOptions options) : options_(options) {}

MemoryReleaser::~MemoryReleaser() { Stop(); }

void MemoryReleaser::Start() {
  if (options_.release_interval <= absl::ZeroDuration() || thread_.joinable()) return;
  {
    absl::MutexLock lock(&mu_);
    stop_ = false;
  }
  thread_ = std::thread([this] { Loop(); });
}

void MemoryReleaser::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

int MemoryReleaser::releases() const {
  absl::MutexLock lock(&mu_);
  return releases_;
}

void MemoryReleaser::Loop() {
  // Released pages still count as free in the allocator's books, so a heap that holds much
  // free memory is released again only once that figure moved (blocks reused, which brings
  // pages back, or more freed); a quiet heap costs one look per interval.
  constexpr size_t kMoved = 1 << 20;
  bool released_once = false;
  size_t after_release = 0;
  absl::MutexLock lock(&mu_);
  while (!mu_.AwaitWithTimeout(absl::Condition(&stop_), options_.release_interval)) {
    // The heap is looked at without the lock held: mallinfo2 and malloc_trim take the
    // allocator's own locks, and Stop() must not wait behind them.
    mu_.Unlock();
    size_t free_bytes = AllocatorFreeBytes();
    size_t moved =
        free_bytes > after_release ? free_bytes - after_release : after_release - free_bytes;
    bool released = false;
    if (free_bytes > options_.release_above_bytes && (!released_once || moved > kMoved)) {
      released = ReleaseFreeMemory();
      released_once = true;
      after_release = AllocatorFreeBytes();
    }
    mu_.Lock();
    if (released) ++releases_;
  }
}

}  // namespace rein
