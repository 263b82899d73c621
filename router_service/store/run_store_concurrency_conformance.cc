// RunStore conformance suite, under concurrency and in batches: racing creates and commits (in
// one store and across two on one location), CommitBatch, and the GroupCommitter in front of a
// real store, once for every implementation.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rein/v1/types.pb.h"
#include "router_service/store/group_commit.h"
#include "router_service/store/run_store_conformance.h"
#include "router_service/store/testing/conformance_values.h"

namespace rein::conformance {
namespace {

using ::testing::ElementsAre;
using ::testing::SizeIs;

TEST_P(RunStoreConformanceTest, ConcurrentCreatesWithOneRequestIdStoreOneRun) {
  std::unique_ptr<RunStore> second = OpenAnother();  // as another router
  ASSERT_NE(second, nullptr);
  constexpr int kThreads = 8;
  absl::Notification start;
  std::vector<absl::StatusOr<CreateResult>> results(kThreads, absl::UnknownError("not run"));
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      RunStore& target = i % 2 == 0 ? store() : *second;
      start.WaitForNotification();
      results[i] = target.CreateRun(MakeRun(absl::StrCat("run-", i), kEpoch, "request-1"),
                                    {NoteEvent(absl::StrCat("from ", i), 1)});
    });
  }
  start.Notify();
  for (std::thread& thread : threads) thread.join();

  int created = 0;
  std::string winner;
  for (const absl::StatusOr<CreateResult>& result : results) {
    ASSERT_TRUE(result.ok()) << result.status();
    if (result->created) {
      ++created;
      winner = result->run.run_id();
    }
  }
  ASSERT_EQ(created, 1);
  for (const absl::StatusOr<CreateResult>& result : results) {
    EXPECT_EQ(result->run.run_id(), winner);
  }
  absl::StatusOr<RunPage> page = store().ListRuns(RunFilter{}, 100, "");
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_THAT(Ids(page->runs), ElementsAre(winner));
  absl::StatusOr<std::vector<rein::v1::RunEvent>> events = store().ReadEvents(winner, 0, 0);
  ASSERT_TRUE(events.ok()) << events.status();
  EXPECT_THAT(Seqs(*events), ElementsAre(1));
}

TEST_P(RunStoreConformanceTest, ConcurrentCommitsOnOneVersionHaveOneWinner) {
  const rein::v1::Run run = MakeRun("run-1");
  ASSERT_TRUE(store().CreateRun(run, {NoteEvent("created", 1)}).ok());

  constexpr int kThreads = 8;
  absl::Notification start;
  std::vector<absl::StatusCode> codes(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      rein::v1::RunState next = Next(run.state(), rein::v1::PLANNING);
      next.set_latest_observation(absl::StrCat("thread ", i));
      start.WaitForNotification();
      codes[i] = store()
                     .Commit("run-1", /*expected_version=*/1, next,
                             {NoteEvent(absl::StrCat("thread ", i), 2)},
                             Snapshot{0, 2, absl::StrCat(R"({"thread":)", i, "}")}, At(kEpoch + i))
                     .status()
                     .code();
    });
  }
  start.Notify();
  for (std::thread& thread : threads) thread.join();

  const int winners =
      static_cast<int>(std::count(codes.begin(), codes.end(), absl::StatusCode::kOk));
  const int losers = static_cast<int>(
      std::count(codes.begin(), codes.end(), absl::StatusCode::kFailedPrecondition));
  EXPECT_EQ(winners, 1);
  EXPECT_EQ(losers, kThreads - 1);
  const int winner = static_cast<int>(std::find(codes.begin(), codes.end(), absl::StatusCode::kOk) -
                                      codes.begin());

  absl::StatusOr<rein::v1::Run> got = store().GetRun("run-1");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->state().version(), 2);
  EXPECT_EQ(got->state().latest_observation(), absl::StrCat("thread ", winner));
  absl::StatusOr<std::vector<rein::v1::RunEvent>> events = store().ReadEvents("run-1", 0, 100);
  ASSERT_TRUE(events.ok()) << events.status();
  ASSERT_THAT(*events, SizeIs(2));
  EXPECT_THAT(Seqs(*events), ElementsAre(1, 2));
  EXPECT_EQ((*events)[1].error().message(), absl::StrCat("thread ", winner));
  absl::StatusOr<std::vector<Snapshot>> snapshots = store().ListSnapshots("run-1");
  ASSERT_TRUE(snapshots.ok()) << snapshots.status();
  ASSERT_THAT(*snapshots, SizeIs(1));
  EXPECT_EQ((*snapshots)[0].state, absl::StrCat(R"({"thread":)", winner, "}"));
}

TEST_P(RunStoreConformanceTest, TwoStoresOnOneLocationHaveOneCommitWinner) {
  std::unique_ptr<RunStore> second = OpenAnother();
  ASSERT_NE(second, nullptr);
  const rein::v1::Run run = MakeRun("run-1");
  ASSERT_TRUE(store().CreateRun(run, {NoteEvent("created", 1)}).ok());
  constexpr int kThreads = 8;
  absl::Notification start;
  std::vector<absl::StatusCode> codes(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      RunStore& target = i % 2 == 0 ? store() : *second;
      start.WaitForNotification();
      codes[i] =
          target
              .Commit("run-1", /*expected_version=*/1, Next(run.state(), rein::v1::PLANNING),
                      {NoteEvent(absl::StrCat("thread ", i), 2)}, std::nullopt, At(kEpoch + i))
              .status()
              .code();
    });
  }
  start.Notify();
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(std::count(codes.begin(), codes.end(), absl::StatusCode::kOk), 1);
  EXPECT_EQ(std::count(codes.begin(), codes.end(), absl::StatusCode::kFailedPrecondition),
            kThreads - 1);
  absl::StatusOr<std::vector<rein::v1::RunEvent>> events = second->ReadEvents("run-1", 0, 0);
  ASSERT_TRUE(events.ok()) << events.status();
  EXPECT_EQ(events->size(), 2u);
}

TEST_P(RunStoreConformanceTest, ConcurrentCommitsOnDifferentRunsAllSucceed) {
  constexpr int kThreads = 8;
  constexpr int kCommitsPerThread = 10;
  for (int i = 0; i < kThreads; ++i) {
    ASSERT_TRUE(store().CreateRun(MakeRun(absl::StrCat("run-", i), kEpoch + i), {}).ok());
  }
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      rein::v1::RunState state = MakeRun("x").state();
      for (int c = 0; c < kCommitsPerThread; ++c) {
        rein::v1::RunState next = Next(state, rein::v1::DECIDING);
        if (!store()
                 .Commit(absl::StrCat("run-", i), state.version(), next,
                         {NoteEvent("a", next.version()), NoteEvent("b", next.version())},
                         std::nullopt, At(kEpoch + 100 + c))
                 .ok()) {
          ++failures;
        }
        state = next;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);

  for (int i = 0; i < kThreads; ++i) {
    const std::string run_id = absl::StrCat("run-", i);
    absl::StatusOr<rein::v1::Run> got = store().GetRun(run_id);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->state().version(), 1 + kCommitsPerThread);
    absl::StatusOr<std::vector<rein::v1::RunEvent>> events = store().ReadEvents(run_id, 0, 0);
    ASSERT_TRUE(events.ok()) << events.status();
    EXPECT_THAT(*events, SizeIs(2 * kCommitsPerThread));
  }
}

TEST_P(RunStoreConformanceTest, CommitBatchKeepsTheGoodRequestsAndReportsTheBadOnes) {
  ASSERT_TRUE(store().CreateRun(MakeRun("run-1", kEpoch), {NoteEvent("created", 1)}).ok());
  ASSERT_TRUE(store().CreateRun(MakeRun("run-2", kEpoch + 1), {}).ok());
  const rein::v1::RunState base = MakeRun("x").state();
  const rein::v1::RunState first = Next(base, rein::v1::PLANNING);    // run-1: 1 -> 2
  const rein::v1::RunState second = Next(first, rein::v1::DECIDING);  // run-1: 2 -> 3
  const rein::v1::RunState wrong = Next(first, rein::v1::FINISHED);   // run-2 is not at 2
  const rein::v1::RunState later = Next(base, rein::v1::FAILED);      // run-2: 1 -> 2
  std::vector<CommitRequest> batch(5);
  batch[0] = {"run-1",      std::nullopt,   1, &first, {NoteEvent("a", 2), NoteEvent("b", 2)},
              std::nullopt, At(kEpoch + 10)};
  batch[1] = {"run-unknown", std::nullopt,   1, &first, {NoteEvent("c", 2)},
              std::nullopt,  At(kEpoch + 10)};
  batch[2] = {"run-1",      std::nullopt,   2, &second, {NoteEvent("d", 3)},
              std::nullopt, At(kEpoch + 11)};
  batch[3] = {"run-2", std::nullopt, 2, &wrong, {NoteEvent("e", 3)}, std::nullopt, At(kEpoch + 11)};
  batch[4] = {"run-2", std::nullopt, 1, &later, {NoteEvent("f", 2)}, std::nullopt, At(kEpoch + 12)};
  std::vector<absl::StatusOr<std::vector<rein::v1::RunEvent>>> results = store().CommitBatch(batch);
  ASSERT_THAT(results, SizeIs(5));
  ASSERT_TRUE(results[0].ok()) << results[0].status();
  EXPECT_THAT(Seqs(*results[0]), ElementsAre(2, 3));
  EXPECT_EQ(results[1].status().code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE(results[2].ok()) << results[2].status();  // sees the first request of the batch
  EXPECT_THAT(Seqs(*results[2]), ElementsAre(4));
  EXPECT_EQ(results[3].status().code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(results[4].ok()) << results[4].status();
  EXPECT_THAT(Seqs(*results[4]), ElementsAre(1));

  Reopen();  // what the batch acknowledged is durable
  absl::StatusOr<rein::v1::Run> one = store().GetRun("run-1");
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_THAT(one->state(), EqualsProto(second));
  absl::StatusOr<rein::v1::Run> two = store().GetRun("run-2");
  ASSERT_TRUE(two.ok()) << two.status();
  EXPECT_THAT(two->state(), EqualsProto(later));
  absl::StatusOr<std::vector<rein::v1::RunEvent>> events = store().ReadEvents("run-2", 0, 0);
  ASSERT_TRUE(events.ok()) << events.status();
  ASSERT_THAT(*events, SizeIs(1));  // the failed request wrote no event
  EXPECT_EQ((*events)[0].error().message(), "f");
  EXPECT_TRUE(absl::IsNotFound(store().GetRun("run-unknown").status()));
}

TEST_P(RunStoreConformanceTest, GroupCommitterAcknowledgesEveryConcurrentCommitOnce) {
  constexpr int kThreads = 12;
  constexpr int kCommitsPerThread = 15;
  for (int i = 0; i < kThreads; ++i) {
    ASSERT_TRUE(store().CreateRun(MakeRun(absl::StrCat("run-", i), kEpoch + i), {}).ok());
  }
  GroupCommitter committer(&store(), GroupCommitOptions{/*max_batch=*/5,
                                                        /*max_delay=*/absl::Milliseconds(1)});
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      rein::v1::RunState state = MakeRun("x").state();
      int64_t next_seq = 1;
      for (int c = 0; c < kCommitsPerThread; ++c) {
        rein::v1::RunState next = Next(state, rein::v1::DECIDING);
        absl::StatusOr<std::vector<rein::v1::RunEvent>> stored =
            committer.Commit({absl::StrCat("run-", i),
                              std::nullopt,
                              state.version(),
                              &next,
                              {NoteEvent("a", next.version()), NoteEvent("b", next.version())},
                              std::nullopt,
                              At(kEpoch + 100 + c)});
        if (!stored.ok() || Seqs(*stored) != std::vector<int64_t>{next_seq, next_seq + 1} ||
            (*stored)[0].run_id() != absl::StrCat("run-", i)) {
          ++failures;
        }
        next_seq += 2;
        state = next;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(committer.commits(), kThreads * kCommitsPerThread);
  EXPECT_LE(committer.batches(), committer.commits());
  for (int i = 0; i < kThreads; ++i) {
    absl::StatusOr<rein::v1::Run> got = store().GetRun(absl::StrCat("run-", i));
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->state().version(), 1 + kCommitsPerThread);
  }
}

TEST_P(RunStoreConformanceTest, GroupCommitterReturnsEachRequestsOwnError) {
  ASSERT_TRUE(store().CreateRun(MakeRun("run-1"), {}).ok());
  GroupCommitter committer(&store(), GroupCommitOptions{});
  const rein::v1::RunState next = Next(MakeRun("x").state(), rein::v1::PLANNING);
  EXPECT_EQ(committer.Commit({"run-1", std::nullopt, 7, &next, {}, std::nullopt, At(kEpoch)})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(committer.Commit({"run-2", std::nullopt, 1, &next, {}, std::nullopt, At(kEpoch)})
                .status()
                .code(),
            absl::StatusCode::kNotFound);
  EXPECT_TRUE(
      committer.Commit({"run-1", std::nullopt, 1, &next, {}, std::nullopt, At(kEpoch)}).ok());
}

}  // namespace
}  // namespace rein::conformance
