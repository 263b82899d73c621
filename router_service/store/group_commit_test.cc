// Tests of GroupCommitter against a RunStore whose CommitBatch the test holds and releases: the
// leader writes its followers' requests, batches stay within max_batch, and a failed batch
// fails each of its requests with the store's status without harming the next.
#include "router_service/store/group_commit.h"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/testing/fake_clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rein/v1/router.pb.h"
#include "router_service/store/run_store.h"

namespace rein {
namespace {

using ::testing::Each;
using ::testing::ElementsAre;
using ::testing::Le;

using CommitResult = absl::StatusOr<std::vector<rein::v1::RunEvent>>;

// A RunStore that only takes batches: it records each (the run ids, the thread), answers each
// request with one event naming its run, or `failure` for every request of a batch when set,
// and holds a batch while the test keeps the gate closed.
class BatchStore final : public RunStore {
 public:
  struct Batch {
    std::vector<std::string> run_ids;
    std::vector<absl::Duration> timeouts;
    std::thread::id thread;
  };

  std::vector<CommitResult> CommitBatch(std::vector<CommitRequest>& requests) override {
    absl::MutexLock lock(&mu_);
    Batch& batch = batches_.emplace_back();
    batch.thread = std::this_thread::get_id();
    for (const CommitRequest& r : requests) {
      batch.run_ids.push_back(r.run_id);
      batch.timeouts.push_back(r.timeout);
    }
    mu_.Await(absl::Condition(&open_));
    std::vector<CommitResult> results;
    for (const CommitRequest& r : requests) {
      if (!failure_.ok()) {
        results.push_back(failure_);
        continue;
      }
      rein::v1::RunEvent event;
      event.set_run_id(r.run_id);
      results.push_back(std::vector<rein::v1::RunEvent>{event});
    }
    return results;
  }

  void CloseGate() {
    absl::MutexLock lock(&mu_);
    open_ = false;
  }
  void OpenGate() {
    absl::MutexLock lock(&mu_);
    open_ = true;
  }
  void FailBatchesWith(absl::Status status) {
    absl::MutexLock lock(&mu_);
    failure_ = std::move(status);
  }
  // Waits until `n` batches have reached the store.
  void AwaitBatches(size_t n) {
    absl::MutexLock lock(&mu_);
    auto reached = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return batches_.size() >= n; };
    mu_.Await(absl::Condition(&reached));
  }
  std::vector<Batch> batches() {
    absl::MutexLock lock(&mu_);
    return batches_;
  }

  // Not used by GroupCommitter.
  absl::StatusOr<CreateResult> CreateRun(const rein::v1::Run&,
                                         std::vector<rein::v1::RunEvent>) override {
    return Unused();
  }
  absl::StatusOr<rein::v1::Run> GetRun(const std::string&) override { return Unused(); }
  absl::StatusOr<rein::v1::Run> FindRunByRequestId(const std::string&,
                                                   const std::string&) override {
    return Unused();
  }
  CommitResult Commit(const std::string&, int64_t, const rein::v1::RunState&,
                      std::vector<rein::v1::RunEvent>, const std::optional<Snapshot>&,
                      absl::Time) override {
    return Unused();
  }
  CommitResult ReadEvents(const std::string&, int64_t, int) override { return Unused(); }
  absl::StatusOr<RunPage> ListRuns(const RunFilter&, int, const std::string&) override {
    return Unused();
  }
  absl::StatusOr<std::vector<Snapshot>> ListSnapshotsAfter(const std::string&, int64_t,
                                                           int) override {
    return Unused();
  }
  absl::StatusOr<std::vector<std::string>> ListUnfinishedRunIds() override { return Unused(); }
  absl::StatusOr<NamespaceUsage> GetNamespaceUsage(const std::string&, absl::Time) override {
    return Unused();
  }
  CommitResult CommitOwned(const std::string&, int64_t, int64_t, const rein::v1::RunState&,
                           std::vector<rein::v1::RunEvent>, const std::optional<Snapshot>&,
                           absl::Time) override {
    return Unused();
  }

 private:
  static absl::Status Unused() { return absl::UnimplementedError("not used by GroupCommitter"); }

  absl::Mutex mu_;
  bool open_ ABSL_GUARDED_BY(mu_) = true;
  absl::Status failure_ ABSL_GUARDED_BY(mu_);
  std::vector<Batch> batches_ ABSL_GUARDED_BY(mu_);
};

// Commits of run-0, run-1, ... from threads of their own, each result kept by its index.
class Committers {
 public:
  explicit Committers(GroupCommitter* committer) : committer_(committer) {}
  ~Committers() { Join(); }

  void Start(int index) {
    threads_.emplace_back([this, index] {
      CommitRequest request;
      request.run_id = RunId(index);
      request.expected_version = 1;
      request.new_state = &state_;
      CommitResult result = committer_->Commit(std::move(request));
      absl::MutexLock lock(&mu_);
      results_[index] = std::move(result);
      threads_by_index_[index] = std::this_thread::get_id();
    });
  }
  void Join() {
    for (std::thread& t : threads_) t.join();
    threads_.clear();
  }
  CommitResult result(int index) {
    absl::MutexLock lock(&mu_);
    return results_.at(index);
  }
  std::thread::id thread(int index) {
    absl::MutexLock lock(&mu_);
    return threads_by_index_.at(index);
  }

  static std::string RunId(int index) { return "run-" + std::to_string(index); }

 private:
  GroupCommitter* const committer_;
  const rein::v1::RunState state_;
  std::vector<std::thread> threads_;
  absl::Mutex mu_;
  std::map<int, CommitResult> results_ ABSL_GUARDED_BY(mu_);
  std::map<int, std::thread::id> threads_by_index_ ABSL_GUARDED_BY(mu_);
};

// Waits until `n` requests are queued behind the batch being written.
void AwaitWaiting(GroupCommitter& committer, int64_t n) {
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (committer.waiting() < n && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(1));
  ASSERT_EQ(committer.waiting(), n);
}

// Holds the store's gate closed while run-0 leads a batch, then queues run-1..run-`followers`
// behind it; the test opens the gate.
void QueueBehindAHeldBatch(BatchStore& store, GroupCommitter& committer, Committers& committers,
                           int followers) {
  store.CloseGate();
  committers.Start(0);  // leads the first batch, held in the store
  store.AwaitBatches(1);
  for (int i = 1; i <= followers; ++i) committers.Start(i);
  AwaitWaiting(committer, followers);
}

// Commits `run_id` at version 1 to `state`, waiting for its turn until `deadline` at most.
CommitResult CommitBy(GroupCommitter& committer, const std::string& run_id,
                      const rein::v1::RunState& state, absl::Time deadline) {
  CommitRequest request;
  request.run_id = run_id;
  request.expected_version = 1;
  request.new_state = &state;
  return committer.Commit(std::move(request), deadline);
}

// The run id of the one event a successful result holds.
std::string RunOf(const CommitResult& result) {
  if (!result.ok() || result->size() != 1) return "(" + result.status().ToString() + ")";
  return (*result)[0].run_id();
}

TEST(GroupCommitterTest, TheLeaderCommitsTheRequestsQueuedBehindItInOneBatch) {
  BatchStore store;
  GroupCommitter committer(&store, GroupCommitOptions{/*max_batch=*/64});
  Committers committers(&committer);
  QueueBehindAHeldBatch(store, committer, committers, /*followers=*/3);
  store.OpenGate();
  committers.Join();

  const std::vector<BatchStore::Batch> batches = store.batches();
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_THAT(batches[0].run_ids, ElementsAre("run-0"));
  EXPECT_EQ(batches[0].thread, committers.thread(0));
  // The three followers went in one batch, written by one of them.
  EXPECT_THAT(batches[1].run_ids, ::testing::UnorderedElementsAre("run-1", "run-2", "run-3"));
  EXPECT_TRUE(batches[1].thread == committers.thread(1) ||
              batches[1].thread == committers.thread(2) ||
              batches[1].thread == committers.thread(3));
  // Each caller got the result of its own request.
  for (int i = 0; i <= 3; ++i) EXPECT_EQ(RunOf(committers.result(i)), Committers::RunId(i));
  EXPECT_EQ(committer.batches(), 2);
  EXPECT_EQ(committer.commits(), 4);
  EXPECT_EQ(committer.waiting(), 0);
}

TEST(GroupCommitterTest, ABatchNeverCarriesMoreThanMaxBatch) {
  BatchStore store;
  GroupCommitter committer(&store, GroupCommitOptions{/*max_batch=*/2});
  Committers committers(&committer);
  QueueBehindAHeldBatch(store, committer, committers, /*followers=*/5);
  store.OpenGate();
  committers.Join();

  const std::vector<BatchStore::Batch> batches = store.batches();
  std::vector<size_t> sizes;
  size_t total = 0;
  for (const BatchStore::Batch& batch : batches) {
    sizes.push_back(batch.run_ids.size());
    total += batch.run_ids.size();
  }
  EXPECT_THAT(sizes, Each(Le(2u)));
  EXPECT_EQ(total, 6u);
  // The five queued requests take ceil(5 / 2) = 3 batches after the first.
  EXPECT_EQ(batches.size(), 4u);
  for (int i = 0; i <= 5; ++i) EXPECT_EQ(RunOf(committers.result(i)), Committers::RunId(i));
}

TEST(GroupCommitterTest, AFailedBatchFailsEachOfItsCommitsAndTheNextBatchWorks) {
  BatchStore store;
  GroupCommitter committer(&store, GroupCommitOptions{/*max_batch=*/64});
  {
    Committers committers(&committer);
    QueueBehindAHeldBatch(store, committer, committers, /*followers=*/3);
    store.FailBatchesWith(absl::UnavailableError("the disk is gone"));
    store.OpenGate();
    committers.Join();
    for (int i = 0; i <= 3; ++i) {
      const CommitResult result = committers.result(i);
      EXPECT_EQ(result.status().code(), absl::StatusCode::kUnavailable) << i;
      EXPECT_EQ(result.status().message(), "the disk is gone") << i;
    }
  }
  store.FailBatchesWith(absl::OkStatus());
  Committers next(&committer);
  next.Start(7);
  next.Join();
  EXPECT_EQ(RunOf(next.result(7)), "run-7");
  EXPECT_EQ(committer.commits(), 5);
}

TEST(GroupCommitterTest, ARequestStillQueuedAtItsDeadlineIsWithdrawnUnwritten) {
  BatchStore store;
  FakeClock clock;
  GroupCommitter committer(&store, GroupCommitOptions{/*max_batch=*/64}, &clock);
  Committers committers(&committer);
  store.CloseGate();
  committers.Start(0);  // leads a batch, held in the store
  store.AwaitBatches(1);
  const rein::v1::RunState state;
  CommitResult late;
  std::thread follower(
      [&] { late = CommitBy(committer, "run-late", state, clock.Now() + absl::Seconds(1)); });
  AwaitWaiting(committer, 1);
  clock.Advance(absl::Seconds(1));
  follower.join();  // returns while the store still holds the leader's batch
  EXPECT_EQ(late.status().code(), absl::StatusCode::kDeadlineExceeded) << late.status();
  EXPECT_EQ(committer.waiting(), 0);
  store.OpenGate();
  committers.Join();
  EXPECT_EQ(RunOf(committers.result(0)), "run-0");
  // Nothing of the withdrawn request reached the store.
  const std::vector<BatchStore::Batch> batches = store.batches();
  ASSERT_EQ(batches.size(), 1u);
  EXPECT_THAT(batches[0].run_ids, ElementsAre("run-0"));
}

TEST(GroupCommitterTest, TheStoreGetsWhatIsLeftOfEachRequestsDeadline) {
  BatchStore store;
  FakeClock clock;
  GroupCommitter committer(&store, GroupCommitOptions{/*max_batch=*/64}, &clock);
  Committers committers(&committer);
  store.CloseGate();
  committers.Start(0);  // no deadline; leads a batch, held in the store
  store.AwaitBatches(1);
  const rein::v1::RunState state;
  CommitResult bounded;
  std::thread follower([&] {
    bounded = CommitBy(committer, "run-bounded", state, clock.Now() + absl::Seconds(10));
  });
  AwaitWaiting(committer, 1);
  clock.Advance(absl::Seconds(3));  // queued for 3 of its 10 seconds
  store.OpenGate();
  follower.join();
  committers.Join();
  EXPECT_EQ(RunOf(bounded), "run-bounded");
  const std::vector<BatchStore::Batch> batches = store.batches();
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_THAT(batches[0].timeouts, ElementsAre(absl::InfiniteDuration()));
  EXPECT_THAT(batches[1].run_ids, ElementsAre("run-bounded"));
  EXPECT_THAT(batches[1].timeouts, ElementsAre(absl::Seconds(7)));
}

}  // namespace
}  // namespace rein
