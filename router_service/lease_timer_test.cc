// Tests of LeaseTimer: the router's margins around its lease, on a fake clock.
#include "router_service/lease_timer.h"

#include "common/testing/fake_clock.h"
#include "gtest/gtest.h"

namespace rein {
namespace {

TEST(LeaseTimerTest, NothingIsAllowedBeforeTheFirstRenewal) {
  FakeClock clock;
  LeaseTimer lease(absl::Seconds(9));
  EXPECT_FALSE(lease.joined());
  EXPECT_FALSE(lease.MayMutate(clock.Now()));
  EXPECT_FALSE(lease.Live(clock.Now()));
}

TEST(LeaseTimerTest, MutatingStopsAtHalfTheTtlAndEverythingAtTheTtl) {
  FakeClock clock;
  LeaseTimer lease(absl::Seconds(9));
  EXPECT_EQ(lease.renew_interval(), absl::Seconds(3));
  const absl::Time sent = clock.Now();
  clock.Advance(absl::Milliseconds(400));  // the renewal statement took this long
  lease.Renewed(sent);
  EXPECT_TRUE(lease.joined());
  // Measured from when the renewal was SENT, not when it was answered.
  clock.Advance(absl::Seconds(4));  // 4.4 s after sending
  EXPECT_TRUE(lease.MayMutate(clock.Now()));
  clock.Advance(absl::Milliseconds(100));  // 4.5 s = ttl / 2
  EXPECT_FALSE(lease.MayMutate(clock.Now()));
  EXPECT_TRUE(lease.Live(clock.Now()));
  clock.Advance(absl::Milliseconds(4499));
  EXPECT_TRUE(lease.Live(clock.Now()));
  clock.Advance(absl::Milliseconds(1));  // 9 s = ttl
  EXPECT_FALSE(lease.Live(clock.Now()));
}

TEST(LeaseTimerTest, ARenewalAfterALapseRestoresTheLease) {
  FakeClock clock;
  LeaseTimer lease(absl::Seconds(3));
  lease.Renewed(clock.Now());
  clock.Advance(absl::Seconds(10));
  EXPECT_FALSE(lease.Live(clock.Now()));
  lease.Renewed(clock.Now());
  EXPECT_TRUE(lease.Live(clock.Now()));
  EXPECT_TRUE(lease.MayMutate(clock.Now()));
}

TEST(LeaseTimerTest, AnOlderRenewalAnsweredLateDoesNotMoveTheLeaseBack) {
  FakeClock clock;
  LeaseTimer lease(absl::Seconds(3));
  const absl::Time first = clock.Now();
  clock.Advance(absl::Seconds(1));
  lease.Renewed(clock.Now());
  lease.Renewed(first);
  clock.Advance(absl::Milliseconds(2500));  // 3.5 s after `first`, 2.5 s after the second
  EXPECT_TRUE(lease.Live(clock.Now()));
}

TEST(LeaseTimerTest, RetriesComeSoonerThanRenewals) {
  LeaseTimer lease(absl::Seconds(30));
  EXPECT_EQ(lease.renew_interval(), absl::Seconds(10));
  EXPECT_EQ(lease.retry_interval(), absl::Seconds(1));
  EXPECT_EQ(LeaseTimer(absl::Seconds(2)).retry_interval(), absl::Milliseconds(200));
}

}  // namespace
}  // namespace rein
