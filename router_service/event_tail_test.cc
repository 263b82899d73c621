// Tests of EventTail: live watchers are served from memory and wait on the fake clock.
#include "router_service/event_tail.h"

#include <string>
#include <thread>
#include <vector>

#include "common/testing/fake_clock.h"
#include "gtest/gtest.h"

namespace rein {
namespace {

using Kind = EventTail::Read::Kind;

std::vector<rein::v1::RunEvent> Events(int64_t first, int64_t last) {
  std::vector<rein::v1::RunEvent> events;
  for (int64_t seq = first; seq <= last; ++seq) {
    events.emplace_back();
    events.back().set_seq(seq);
  }
  return events;
}

TEST(EventTailTest, UnknownRunIsAMiss) {
  FakeClock clock;
  EventTail tail(&clock);
  EXPECT_EQ(tail.ReadAfter("run-x", 0, clock.Now() + absl::Hours(1)).kind, Kind::kMiss);
}

TEST(EventTailTest, ServesEventsAfterSeqFromMemory) {
  FakeClock clock;
  EventTail tail(&clock);
  tail.Append("run-a", Events(1, 3), /*ended=*/false);
  EventTail::Read read = tail.ReadAfter("run-a", 1, clock.Now());
  ASSERT_EQ(read.kind, Kind::kEvents);
  ASSERT_EQ(read.events.size(), 2u);
  EXPECT_EQ(read.events[0].seq(), 2);
}

TEST(EventTailTest, TailThatDoesNotReachBackIsAMiss) {
  FakeClock clock;
  EventTail tail(&clock);
  tail.Append("run-a", Events(1, EventTail::kEvents + 5), /*ended=*/false);
  EXPECT_EQ(tail.ReadAfter("run-a", 0, clock.Now()).kind, Kind::kMiss);
  EXPECT_EQ(tail.ReadAfter("run-a", 5, clock.Now()).kind, Kind::kEvents);
}

TEST(EventTailTest, EndedRunWithNothingNewSaysEnded) {
  FakeClock clock;
  EventTail tail(&clock);
  tail.Append("run-a", Events(1, 2), /*ended=*/true);
  EXPECT_EQ(tail.ReadAfter("run-a", 2, clock.Now() + absl::Hours(1)).kind, Kind::kEnded);
}

TEST(EventTailTest, WaiterTimesOutWhenTheFakeDeadlinePasses) {
  FakeClock clock;
  EventTail tail(&clock);
  tail.Append("run-a", Events(1, 1), /*ended=*/false);
  const absl::Time until = clock.Now() + absl::Seconds(5);
  EventTail::Read read;
  std::thread watcher([&] { read = tail.ReadAfter("run-a", 1, until); });
  clock.BlockUntilWaiterBy(until);
  clock.Advance(absl::Seconds(5));
  watcher.join();
  EXPECT_EQ(read.kind, Kind::kTimedOut);
}

TEST(EventTailTest, WaiterWakesOnTheNextCommit) {
  FakeClock clock;
  EventTail tail(&clock);
  tail.Append("run-a", Events(1, 1), /*ended=*/false);
  EventTail::Read read;
  std::thread watcher([&] { read = tail.ReadAfter("run-a", 1, clock.Now() + absl::Hours(1)); });
  clock.BlockUntilWaiterBy(absl::InfiniteFuture());
  tail.Append("run-a", Events(2, 2), /*ended=*/false);
  watcher.join();
  ASSERT_EQ(read.kind, Kind::kEvents);
  ASSERT_EQ(read.events.size(), 1u);
  EXPECT_EQ(read.events[0].seq(), 2);
}

TEST(EventTailTest, AwaitNewerTimesOutOnTheFakeClock) {
  FakeClock clock;
  EventTail tail(&clock);
  bool got = true;
  const absl::Time until = clock.Now() + absl::Seconds(1);
  std::thread watcher([&] { got = tail.AwaitNewer("run-b", 0, until); });
  clock.BlockUntilWaiterBy(until);
  clock.Advance(absl::Seconds(1));
  watcher.join();
  EXPECT_FALSE(got);
}

TEST(EventTailTest, EndedRunsAreForgottenLater) {
  FakeClock clock;
  EventTail tail(&clock);
  tail.Append("run-old", Events(1, 1), /*ended=*/true);
  for (size_t i = 0; i < EventTail::kEndedKept; ++i) {
    tail.Append("run-" + std::to_string(i), Events(1, 1), /*ended=*/true);
  }
  EXPECT_EQ(tail.ReadAfter("run-old", 0, clock.Now()).kind, Kind::kMiss);
  EXPECT_EQ(tail.ReadAfter("run-0", 0, clock.Now()).kind, Kind::kEvents);
}

TEST(EventTailTest, SubscriptionFiresOnceOnTheNextCommit) {
  FakeClock clock;
  EventTail tail(&clock);
  tail.Append("run-a", Events(1, 2), false);
  int fired = 0;
  uint64_t id = tail.Subscribe("run-a", 2, [&] { ++fired; });
  ASSERT_NE(id, 0u);
  EXPECT_EQ(tail.subscriptions(), 1u);
  tail.Append("run-b", Events(1, 1), false);  // another run: no wake-up
  EXPECT_EQ(fired, 0);
  tail.Append("run-a", Events(3, 3), false);
  EXPECT_EQ(fired, 1);
  tail.Append("run-a", Events(4, 4), false);  // one-shot
  EXPECT_EQ(fired, 1);
  EXPECT_EQ(tail.subscriptions(), 0u);
  tail.Unsubscribe("run-a", id);  // after it fired: nothing
}

TEST(EventTailTest, SubscribingBehindTheTailSaysReadAgain) {
  FakeClock clock;
  EventTail tail(&clock);
  tail.Append("run-a", Events(1, 3), false);
  bool fired = false;
  EXPECT_EQ(tail.Subscribe("run-a", 2, [&] { fired = true; }), 0u);
  EXPECT_FALSE(fired);
  EXPECT_EQ(tail.subscriptions(), 0u);
}

TEST(EventTailTest, SubscriptionOnAnUnknownRunWakesOnANotice) {
  FakeClock clock;
  EventTail tail(&clock);
  bool fired = false;
  ASSERT_NE(tail.Subscribe("run-r", 4, [&] { fired = true; }), 0u);
  // The placeholder holds nothing: readers still go to the store.
  EXPECT_EQ(tail.ReadAfter("run-r", 0, clock.Now()).kind, Kind::kMiss);
  tail.NoteRemote("run-r", 4, false);  // not past what the watcher has
  EXPECT_FALSE(fired);
  tail.NoteRemote("run-r", 5, false);
  EXPECT_TRUE(fired);
}

TEST(EventTailTest, ForgettingARunWakesItsSubscribers) {
  FakeClock clock;
  EventTail tail(&clock);
  tail.Append("run-a", Events(1, 1), false);
  bool fired = false;
  ASSERT_NE(tail.Subscribe("run-a", 1, [&] { fired = true; }), 0u);
  tail.Forget("run-a");
  EXPECT_TRUE(fired);
  EXPECT_EQ(tail.subscriptions(), 0u);
}

TEST(EventTailTest, UnsubscribeCancelsAndDropsAnEmptyPlaceholder) {
  FakeClock clock;
  EventTail tail(&clock);
  bool fired = false;
  uint64_t id = tail.Subscribe("run-p", 0, [&] { fired = true; });
  ASSERT_NE(id, 0u);
  tail.Unsubscribe("run-p", id);
  EXPECT_EQ(tail.subscriptions(), 0u);
  // The placeholder went with it: a later commit is recorded normally, with no wake-up.
  tail.Append("run-p", Events(1, 2), false);
  EXPECT_FALSE(fired);
  EXPECT_EQ(tail.ReadAfter("run-p", 0, clock.Now()).kind, Kind::kEvents);
}

}  // namespace
}  // namespace rein
