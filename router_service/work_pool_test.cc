// Tests of the work pool's fair share between namespaces.
#include "router_service/work_pool.h"

#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"

namespace rein {
namespace {

// One worker, held busy while a thousand items of one share and one of another are queued:
// the lone item runs second, not after the thousand.
TEST(WorkPoolTest, ALoneShareIsNotQueuedBehindAFloodingOne) {
  WorkPool pool(/*max_inline=*/0);
  pool.Start(/*workers=*/1);
  absl::Notification started, release;
  pool.Post(
      [&] {
        started.Notify();
        release.WaitForNotification();
      },
      "team-a");
  started.WaitForNotification();
  absl::Mutex mu;
  std::vector<std::string> order;
  auto record = [&](std::string what) {
    return [&, what] {
      absl::MutexLock lock(&mu);
      order.push_back(what);
    };
  };
  for (int i = 0; i < 1000; ++i) pool.Post(record("a"), "team-a");
  pool.Post(record("b"), "team-b");
  release.Notify();
  pool.Stop();
  ASSERT_EQ(order.size(), 1001u);
  // team-a queued first, so it goes first; the next turn is team-b's.
  EXPECT_EQ(order[0], "a");
  EXPECT_EQ(order[1], "b");
}

TEST(WorkPoolTest, EachSharesWorkRunsInOrderAndTurnsAlternate) {
  WorkPool pool(/*max_inline=*/0);
  pool.Start(/*workers=*/1);
  absl::Notification started, release;
  pool.Post(
      [&] {
        started.Notify();
        release.WaitForNotification();
      },
      "x");
  started.WaitForNotification();
  absl::Mutex mu;
  std::string order;
  auto record = [&](char c) {
    return [&, c] {
      absl::MutexLock lock(&mu);
      order.push_back(c);
    };
  };
  for (char c : std::string("abc")) pool.Post(record(c), "one");
  for (char c : std::string("XY")) pool.Post(record(c), "two");
  pool.Post(record('z'), "");
  release.Notify();
  pool.Stop();
  EXPECT_EQ(order, "aXzbYc");
}

TEST(WorkPoolTest, InlineRepliesWaitWhileAnyShareHasWorkQueued) {
  WorkPool pool(/*max_inline=*/1);
  EXPECT_TRUE(pool.BeginInline());
  pool.EndInline();
  pool.Post([] {}, "team-a");  // no workers yet: it stays queued
  EXPECT_FALSE(pool.BeginInline());
  pool.Start(1);
  pool.Stop();
}

}  // namespace
}  // namespace rein
