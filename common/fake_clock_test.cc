// Tests of FakeClock: time moves only when told, and moving it wakes the right waiters.
#include "common/testing/fake_clock.h"

#include <thread>

#include "gtest/gtest.h"

namespace rein {
namespace {

TEST(FakeClockTest, SleepMovesTimeByDefaultAndIsRecorded) {
  FakeClock clock;
  const absl::Time start = clock.Now();
  clock.SleepUntil(start + absl::Seconds(3));
  EXPECT_EQ(clock.Now(), start + absl::Seconds(3));
  clock.SleepUntil(start);  // in the past: returns at once, time unchanged
  EXPECT_EQ(clock.Now(), start + absl::Seconds(3));
  EXPECT_EQ(clock.sleeps().size(), 2u);
}

TEST(FakeClockTest, BlockingSleepReturnsOnlyAfterAdvance) {
  FakeClock clock(FakeClock::DefaultStart(), FakeClock::SleepMode::kSleepBlocks);
  const absl::Time start = clock.Now();
  std::thread sleeper([&] { clock.SleepUntil(start + absl::Seconds(1)); });
  while (clock.waiters() == 0) std::this_thread::yield();
  clock.Advance(absl::Milliseconds(999));
  EXPECT_EQ(clock.waiters(), 1);
  clock.Advance(absl::Milliseconds(1));
  sleeper.join();
  EXPECT_EQ(clock.waiters(), 0);
}

TEST(FakeClockTest, AwaitReturnsTrueWhenTheConditionHolds) {
  FakeClock clock;
  absl::Mutex mu;
  bool flag = false;
  bool result = false;
  std::thread waiter([&] {
    absl::MutexLock lock(&mu);
    result = clock.AwaitWithDeadline(&mu, absl::Condition(&flag), clock.Now() + absl::Seconds(1));
  });
  clock.BlockUntilWaiterBy(absl::InfiniteFuture());
  {
    absl::MutexLock lock(&mu);
    flag = true;
  }
  waiter.join();
  EXPECT_TRUE(result);
  EXPECT_EQ(clock.waiters(), 0);
}

TEST(FakeClockTest, AwaitTimesOutOnlyWhenFakeTimeReachesTheDeadline) {
  FakeClock clock;
  absl::Mutex mu;
  bool flag = false;
  bool result = true;
  const absl::Time deadline = clock.Now() + absl::Seconds(5);
  std::thread waiter([&] {
    absl::MutexLock lock(&mu);
    result = clock.AwaitWithDeadline(&mu, absl::Condition(&flag), deadline);
  });
  EXPECT_EQ(clock.BlockUntilWaiterBy(deadline), deadline);
  clock.Advance(absl::Seconds(4));
  EXPECT_EQ(clock.waiters(), 1);
  clock.Advance(absl::Seconds(1));
  waiter.join();
  EXPECT_FALSE(result);
}

TEST(FakeClockTest, AwaitWithPastDeadlineReturnsAtOnce) {
  FakeClock clock;
  absl::Mutex mu;
  bool flag = false;
  absl::MutexLock lock(&mu);
  EXPECT_FALSE(clock.AwaitWithDeadline(&mu, absl::Condition(&flag), clock.Now()));
  flag = true;
  EXPECT_TRUE(clock.AwaitWithDeadline(&mu, absl::Condition(&flag), clock.Now()));
}

TEST(FakeClockTest, RealClockAwaitsOnTheWallClock) {
  absl::Mutex mu;
  bool flag = false;
  absl::MutexLock lock(&mu);
  EXPECT_FALSE(RealClock()->AwaitWithDeadline(&mu, absl::Condition(&flag), absl::InfinitePast()));
}

}  // namespace
}  // namespace rein
