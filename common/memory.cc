// Keeping a service's resident memory near its idle size after bursts of large requests.
//
// The allocator is found at run time: gperftools' tcmalloc and jemalloc are recognised by their
// control functions (MallocExtension_*, mallctl), looked up in the process's global symbols, so
// the same code serves a binary linked with either and one started with it in LD_PRELOAD.
// Otherwise glibc's malloc is in use.
#include "common/memory.h"

#include <dlfcn.h>
#include <malloc.h>

#include <cstdint>
#include <cstdlib>

namespace rein {
namespace {

// gperftools' C API (gperftools/malloc_extension_c.h).
using TcGetProperty = int (*)(const char*, size_t*);
using TcSetProperty = int (*)(const char*, size_t);
using TcReleaseFreeMemory = void (*)();
// jemalloc's control function.
using JeMallctl = int (*)(const char*, void*, size_t*, void*, size_t);

struct AllocatorApi {
  Allocator kind = Allocator::kGlibc;
  TcGetProperty tc_get = nullptr;
  TcSetProperty tc_set = nullptr;
  TcReleaseFreeMemory tc_release = nullptr;
  JeMallctl je_mallctl = nullptr;
};

const AllocatorApi& Api() {
  static const AllocatorApi api = [] {
    AllocatorApi a;
    a.tc_get =
        reinterpret_cast<TcGetProperty>(dlsym(RTLD_DEFAULT, "MallocExtension_GetNumericProperty"));
    a.tc_set =
        reinterpret_cast<TcSetProperty>(dlsym(RTLD_DEFAULT, "MallocExtension_SetNumericProperty"));
    a.tc_release = reinterpret_cast<TcReleaseFreeMemory>(
        dlsym(RTLD_DEFAULT, "MallocExtension_ReleaseFreeMemory"));
    a.je_mallctl = reinterpret_cast<JeMallctl>(dlsym(RTLD_DEFAULT, "mallctl"));
    if (a.tc_get != nullptr && a.tc_set != nullptr && a.tc_release != nullptr) {
      a.kind = Allocator::kTcmalloc;
    } else if (a.je_mallctl != nullptr) {
      a.kind = Allocator::kJemalloc;
    }
    return a;
  }();
  return api;
}

size_t TcProperty(const char* name) {
  size_t value = 0;
  return Api().tc_get(name, &value) ? value : 0;
}

// jemalloc's statistics are a snapshot refreshed by writing "epoch".
size_t JeDirtyBytes() {
  JeMallctl mallctl = Api().je_mallctl;
  uint64_t epoch = 1;
  size_t len = sizeof(epoch);
  mallctl("epoch", &epoch, &len, &epoch, len);
  size_t pdirty = 0, page = 0;
  len = sizeof(size_t);
  // 4096 is MALLCTL_ARENAS_ALL: every arena merged.
  if (mallctl("stats.arenas.4096.pdirty", &pdirty, &len, nullptr, 0) != 0) return 0;
  len = sizeof(size_t);
  if (mallctl("arenas.page", &page, &len, nullptr, 0) != 0) return 0;
  return pdirty * page;
}

}  // namespace

Allocator ActiveAllocator() { return Api().kind; }

const char* AllocatorName(Allocator allocator) {
  switch (allocator) {
    case Allocator::kTcmalloc: return "tcmalloc";
    case Allocator::kJemalloc: return "jemalloc";
    case Allocator::kGlibc: break;
  }
  return "glibc";
}

void ConfigureAllocator(const MemoryOptions& options) {
  switch (ActiveAllocator()) {
    case Allocator::kGlibc:
      if (options.mmap_threshold_bytes > 0) {
        mallopt(M_MMAP_THRESHOLD, static_cast<int>(options.mmap_threshold_bytes));
      }
      break;
    case Allocator::kTcmalloc:
      // An explicit TCMALLOC_MAX_TOTAL_THREAD_CACHE_BYTES in the environment wins.
      if (options.max_thread_cache_bytes > 0 &&
          getenv("TCMALLOC_MAX_TOTAL_THREAD_CACHE_BYTES") == nullptr) {
        Api().tc_set("tcmalloc.max_total_thread_cache_bytes", options.max_thread_cache_bytes);
      }
      break;
    case Allocator::kJemalloc: break;  // configured through malloc_conf / MALLOC_CONF
  }
}

size_t AllocatorFreeBytes() {
  switch (ActiveAllocator()) {
    case Allocator::kTcmalloc:
      // Whole free pages still mapped; what sits in the thread and central caches is
      // bounded by max_thread_cache_bytes and reused, not returned.
      return TcProperty("tcmalloc.pageheap_free_bytes");
    case Allocator::kJemalloc: return JeDirtyBytes();
    case Allocator::kGlibc: break;
  }
  struct mallinfo2 info = mallinfo2();
  return info.fordblks;
}

bool ReleaseFreeMemory() {
  switch (ActiveAllocator()) {
    case Allocator::kTcmalloc: {
      size_t before = TcProperty("tcmalloc.pageheap_unmapped_bytes");
      Api().tc_release();
      return TcProperty("tcmalloc.pageheap_unmapped_bytes") > before;
    }
    case Allocator::kJemalloc: {
      size_t before = JeDirtyBytes();
      Api().je_mallctl("arena.4096.purge", nullptr, nullptr, nullptr, 0);
      return before > 0 && JeDirtyBytes() < before;
    }
    case Allocator::kGlibc: break;
  }
  return malloc_trim(0) != 0;
}
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
