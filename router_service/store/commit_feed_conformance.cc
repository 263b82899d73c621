// CommitFeed conformance suite: which commits a store passes on (commit_feed.h), once for every
// implementation. Notices come on the store's own thread and may be late, so the tests wait for
// them, and wait a moment more where none must come.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "rein/v1/types.pb.h"
#include "router_service/store/run_store_conformance.h"
#include "router_service/store/testing/conformance_values.h"

namespace rein::conformance {
namespace {

// Long enough for a notice that is on its way to arrive (PostgreSQL: a NOTIFY on loopback).
constexpr absl::Duration kQuiet = absl::Milliseconds(300);

// The notices a store passes on, as they come.
class Notices {
 public:
  void Subscribe(CommitFeed& feed) {
    feed.SubscribeCommits([this](const CommitNotice& notice) {
      absl::MutexLock lock(&mu_);
      notices_.push_back(notice);
    });
  }
  // Waits until `n` notices came (false after 10 s), then kQuiet more for any that must not.
  bool WaitFor(size_t n) {
    absl::MutexLock lock(&mu_);
    auto enough = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return notices_.size() >= n; };
    if (!mu_.AwaitWithTimeout(absl::Condition(&enough), absl::Seconds(10))) return false;
    static const bool kNever = false;
    mu_.AwaitWithTimeout(absl::Condition(&kNever), kQuiet);
    return true;
  }
  // How many came, after waiting kQuiet (for those that must not).
  size_t CountAfterQuiet() {
    absl::SleepFor(kQuiet);
    absl::MutexLock lock(&mu_);
    return notices_.size();
  }
  std::vector<CommitNotice> Get() {
    absl::MutexLock lock(&mu_);
    return notices_;
  }

 private:
  absl::Mutex mu_;
  std::vector<CommitNotice> notices_ ABSL_GUARDED_BY(mu_);
};

TEST_P(CommitFeedConformanceTest, AStoreNeverPassesOnItsOwnCommits) {
  ASSERT_TRUE(store().JoinFleet("router-a", absl::Seconds(30)).ok());
  Notices notices;
  notices.Subscribe(store());
  absl::SleepFor(kQuiet);  // a store that listens is listening
  const rein::v1::Run run = OwnedRun("run-1", "router-a");
  ASSERT_TRUE(store().CreateRun(run, {NoteEvent("created", 1)}).ok());
  ASSERT_TRUE(store()
                  .CommitOwned("run-1", 1, 1, Next(run.state(), rein::v1::DECIDING), {},
                               std::nullopt, At(kEpoch + 1))
                  .ok());
  EXPECT_EQ(notices.CountAfterQuiet(), 0u);
}

TEST_P(CommitFeedConformanceTest, AnotherRoutersCommitsArePassedOnWhenTheStoreIsShared) {
  std::unique_ptr<RouterStore> other = OpenAnother();
  ASSERT_NE(other, nullptr);
  ASSERT_TRUE(store().JoinFleet("router-b", absl::Seconds(30)).ok());
  ASSERT_TRUE(other->JoinFleet("router-a", absl::Seconds(30)).ok());
  Notices notices;
  notices.Subscribe(store());
  absl::SleepFor(kQuiet);
  // A run id with a space: the notice carries it whole.
  const rein::v1::Run run = OwnedRun("run 1", "router-a");
  ASSERT_TRUE(other->CreateRun(run, {NoteEvent("created", 1)}).ok());
  const rein::v1::RunState next = Next(run.state(), rein::v1::DECIDING);
  ASSERT_TRUE(other
                  ->CommitOwned("run 1", 1, 1, next, {NoteEvent("y", 2), NoteEvent("z", 2)},
                                std::nullopt, At(kEpoch + 1))
                  .ok());
  if (!store().Shared()) {
    // A store with one user never calls it.
    EXPECT_EQ(notices.CountAfterQuiet(), 0u);
    return;
  }
  ASSERT_TRUE(notices.WaitFor(1));
  std::vector<CommitNotice> got = notices.Get();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].run_id, "run 1");
  EXPECT_EQ(got[0].last_seq, 3);
  EXPECT_EQ(got[0].router_id, "router-a");
  EXPECT_FALSE(got[0].ended);
  // The commit that ends the run says so.
  rein::v1::RunState finished = Next(next, rein::v1::FINISHED);
  finished.mutable_outcome()->set_status(rein::v1::FINISHED);
  finished.mutable_outcome()->set_reason(rein::v1::GOAL_ACHIEVED);
  ASSERT_TRUE(
      other->Commit("run 1", 2, finished, {NoteEvent("done", 3)}, std::nullopt, At(kEpoch + 2))
          .ok());
  ASSERT_TRUE(notices.WaitFor(2));
  got = notices.Get();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[1].last_seq, 4);
  EXPECT_TRUE(got[1].ended);
}

}  // namespace
}  // namespace rein::conformance
