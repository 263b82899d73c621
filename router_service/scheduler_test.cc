// Tests of Scheduler: timers fire when the fake clock reaches them, never before.
#include "router_service/scheduler.h"

#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "common/testing/fake_clock.h"
#include "gtest/gtest.h"

namespace rein {
namespace {

class SchedulerTest : public ::testing::Test {
 protected:
  SchedulerTest()
      : scheduler_(&clock_, [this](const std::string& id) {
          absl::MutexLock lock(&mu_);
          fired_.push_back(id);
        }) {
    scheduler_.Start();
  }

  // Waits (on real time, with no timeout) until `n` timers have fired.
  std::vector<std::string> AwaitFired(size_t n) {
    absl::MutexLock lock(&mu_);
    auto enough = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return fired_.size() >= n; };
    mu_.Await(absl::Condition(&enough));
    return fired_;
  }

  std::vector<std::string> fired() {
    absl::MutexLock lock(&mu_);
    return fired_;
  }

  FakeClock clock_;
  absl::Mutex mu_;
  std::vector<std::string> fired_ ABSL_GUARDED_BY(mu_);
  Scheduler scheduler_;
};

TEST_F(SchedulerTest, TimerFiresOnlyWhenTheClockReachesIt) {
  const absl::Time at = clock_.Now() + absl::Seconds(2);
  scheduler_.WakeAt(at, "run-a");
  // The loop now waits for exactly that deadline on the fake clock.
  EXPECT_EQ(clock_.BlockUntilWaiterBy(at), at);
  clock_.Advance(absl::Seconds(1));
  EXPECT_EQ(clock_.BlockUntilWaiterBy(at), at);  // still waiting, nothing fired
  EXPECT_TRUE(fired().empty());
  EXPECT_EQ(scheduler_.pending(), 1);
  clock_.Advance(absl::Seconds(1));
  EXPECT_EQ(AwaitFired(1), std::vector<std::string>{"run-a"});
  EXPECT_EQ(scheduler_.pending(), 0);
}

TEST_F(SchedulerTest, EarlierTimerAddedLaterFiresFirst) {
  const absl::Time start = clock_.Now();
  scheduler_.WakeAt(start + absl::Seconds(10), "late");
  clock_.BlockUntilWaiterBy(start + absl::Seconds(10));
  scheduler_.WakeAt(start + absl::Seconds(1), "early");
  // The loop re-arms for the earlier timer.
  EXPECT_EQ(clock_.BlockUntilWaiterBy(start + absl::Seconds(1)), start + absl::Seconds(1));
  clock_.Advance(absl::Seconds(1));
  EXPECT_EQ(AwaitFired(1), std::vector<std::string>{"early"});
  EXPECT_EQ(scheduler_.next_due(), start + absl::Seconds(10));
  clock_.Advance(absl::Seconds(9));
  EXPECT_EQ(AwaitFired(2), (std::vector<std::string>{"early", "late"}));
}

TEST_F(SchedulerTest, DueTimerFiresWithoutAdvancing) {
  scheduler_.WakeAt(clock_.Now(), "now");
  EXPECT_EQ(AwaitFired(1), std::vector<std::string>{"now"});
}

TEST_F(SchedulerTest, StopDropsPendingTimers) {
  scheduler_.WakeAt(clock_.Now() + absl::Hours(1), "never");
  scheduler_.Stop();
  clock_.Advance(absl::Hours(2));
  EXPECT_TRUE(fired().empty());
  EXPECT_EQ(clock_.waiters(), 0);
}

}  // namespace
}  // namespace rein
