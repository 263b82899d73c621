// Keeping a service's resident memory near its idle size after bursts of large requests.
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
  absl::MutexLock lock(&mu_);
  while (!mu_.AwaitWithTimeout(absl::Condition(&stop_), options_.release_interval)) {
    // The heap is looked at without the lock held: mallinfo2 and malloc_trim take the
    // allocator's own locks, and Stop() must not wait behind them.
    mu_.Unlock();
    bool released = AllocatorFreeBytes() > options_.release_above_bytes && ReleaseFreeMemory();
    mu_.Lock();
    if (released) ++releases_;
  }
}

}  // namespace rein
