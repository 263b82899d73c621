// Tests that freed heap memory goes back to the system.
#include "common/memory.h"

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace rein {
namespace {

// Under AddressSanitizer the sanitizer's allocator replaces the real one, which these tests are
// about.
#if defined(__SANITIZE_ADDRESS__)
#define SKIP_UNDER_SANITIZER() GTEST_SKIP() << "malloc is replaced by the sanitizer's"
#else
#define SKIP_UNDER_SANITIZER() (void)0
#endif

// Resident memory of this process in KiB.
long RssKiB() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

// Leaves about 32 MiB free inside the heap: 512 touched blocks of 64 KiB (under the mmap
// threshold), all freed but the last, which pins the top of the heap so that free() alone
// cannot shrink it. Returns the pinning block (free it when done); `*peak_rss_kib`, when
// given, is the RSS with every block touched, before any was freed (a releaser running
// meanwhile may hand the freed ones back before the caller could measure).
void* FragmentHeap(long* peak_rss_kib = nullptr) {
  std::vector<void*> blocks;
  for (int i = 0; i < 512; ++i) {
    void* p = malloc(64 * 1024);
    memset(p, 1, 64 * 1024);
    blocks.push_back(p);
  }
  if (peak_rss_kib != nullptr) *peak_rss_kib = RssKiB();
  for (size_t i = 0; i + 1 < blocks.size(); ++i) free(blocks[i]);
  return blocks.back();
}

TEST(MemoryTest, ReleaseFreeMemoryReturnsFreedHeapToTheSystem) {
  SKIP_UNDER_SANITIZER();
  ConfigureAllocator(MemoryOptions{});
  void* pin = FragmentHeap();
  EXPECT_GT(AllocatorFreeBytes(), size_t{24} << 20);
  long before = RssKiB();
  EXPECT_TRUE(ReleaseFreeMemory());
  long after = RssKiB();
  EXPECT_LT(after, before - 20 * 1024) << "RSS " << before << " KiB -> " << after << " KiB";
  free(pin);
}

TEST(MemoryTest, ReleaserHandsBackMemoryAfterABurst) {
  SKIP_UNDER_SANITIZER();
  MemoryOptions options;
  options.release_interval = absl::Milliseconds(10);
  options.release_above_bytes = 1 << 20;
  MemoryReleaser releaser(options);
  releaser.Start();
  long burst = 0;
  void* pin = FragmentHeap(&burst);
  absl::Time until = absl::Now() + absl::Seconds(10);
  while ((releaser.releases() == 0 || RssKiB() > burst - 20 * 1024) && absl::Now() < until) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_LT(RssKiB(), burst - 20 * 1024);
  EXPECT_GE(releaser.releases(), 1);
  releaser.Stop();
  free(pin);
}

TEST(MemoryTest, ReleaserDoesNotTrimAgainWhileNothingNewIsFreed) {
  SKIP_UNDER_SANITIZER();
  MemoryOptions options;
  options.release_interval = absl::Milliseconds(10);
  options.release_above_bytes = 1 << 20;
  MemoryReleaser releaser(options);
  void* pin = FragmentHeap();  // freed pages stay "free" in malloc's books after a trim
  releaser.Start();
  absl::Time until = absl::Now() + absl::Seconds(10);
  while (releaser.releases() == 0 && absl::Now() < until) absl::SleepFor(absl::Milliseconds(10));
  ASSERT_GE(releaser.releases(), 1);
  absl::SleepFor(absl::Milliseconds(300));  // some 30 more looks at an unchanged heap
  EXPECT_LE(releaser.releases(), 2);
  releaser.Stop();
  free(pin);
}

TEST(MemoryTest, ZeroIntervalStartsNoThread) {
  MemoryOptions options;
  options.release_interval = absl::ZeroDuration();
  MemoryReleaser releaser(options);
  releaser.Start();
  releaser.Stop();
  EXPECT_EQ(releaser.releases(), 0);
}

}  // namespace
}  // namespace rein
