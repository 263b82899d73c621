// RunStore conformance suite: the tests every RunStore implementation must pass unchanged.
//
// They test the contract written in run_store.h (what a commit checks, how seq is assigned,
// what a page token means, what survives a reopen), once for every implementation.
#include "router_service/store/run_store_conformance.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "rein/v1/types.pb.h"
#include "router_service/store/group_commit.h"

namespace rein {

std::string RunStoreFactoryName(const ::testing::TestParamInfo<RunStoreFactory>& info) {
  return info.param.name;
}

void PrintTo(const RunStoreFactory& factory, std::ostream* os) { *os << factory.name; }

void RunStoreConformanceTest::SetUp() {
  const RunStoreFactory& factory = GetParam();
  absl::StatusOr<std::string> location = factory.new_location();
  ASSERT_TRUE(location.ok()) << location.status();
  location_ = *location;
  absl::StatusOr<std::unique_ptr<RunStore>> store = factory.open(location_);
  ASSERT_TRUE(store.ok()) << store.status();
  store_ = std::move(*store);
}

void RunStoreConformanceTest::TearDown() {
  store_.reset();
  if (!location_.empty() && GetParam().remove) GetParam().remove(location_);
}

std::unique_ptr<RunStore> RunStoreConformanceTest::OpenAnother() {
  absl::StatusOr<std::unique_ptr<RunStore>> store = GetParam().open(location_);
  EXPECT_TRUE(store.ok()) << store.status();
  return store.ok() ? std::move(*store) : nullptr;
}

absl::Status RunStoreConformanceTest::CorruptRun(const std::string& run_id) {
  return GetParam().corrupt_run(location_, run_id);
}

absl::Status RunStoreConformanceTest::CorruptEvent(const std::string& run_id, int64_t seq) {
  return GetParam().corrupt_event(location_, run_id, seq);
}

void RunStoreConformanceTest::Reopen() {
  store_.reset();
  absl::StatusOr<std::unique_ptr<RunStore>> store = GetParam().open(location_);
  ASSERT_TRUE(store.ok()) << store.status();
  store_ = std::move(*store);
}

namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::SizeIs;

constexpr int64_t kEpoch = 1700000000;  // created_at of the runs, in seconds

MATCHER_P(EqualsProto, expected, "equals " + expected.ShortDebugString()) {
  if (google::protobuf::util::MessageDifferencer::Equals(arg, expected)) return true;
  *result_listener << "which is " << arg.ShortDebugString();
  return false;
}

template <typename T>
absl::StatusCode CodeOf(const absl::StatusOr<T>& result) {
  return result.status().code();
}

google::protobuf::Timestamp Seconds(int64_t seconds, int32_t nanos = 0) {
  google::protobuf::Timestamp ts;
  ts.set_seconds(seconds);
  ts.set_nanos(nanos);
  return ts;
}

rein::v1::Run MakeRun(const std::string& run_id, int64_t created_seconds = kEpoch,
                      const std::string& request_id = "",
                      rein::v1::Stage stage = rein::v1::INITIALIZING) {
  rein::v1::Run run;
  run.set_run_id(run_id);
  run.set_request_id(request_id);
  run.mutable_spec()->set_goal(absl::StrCat("goal of ", run_id));
  run.mutable_spec()->set_workspace("default");
  run.mutable_spec()->add_tools("read_file");
  run.mutable_spec()->mutable_limits()->set_max_iterations(7);
  run.mutable_state()->set_stage(stage);
  run.mutable_state()->set_version(1);
  *run.mutable_created_at() = Seconds(created_seconds, 125000000);
  *run.mutable_updated_at() = Seconds(created_seconds, 125000000);
  return run;
}

rein::v1::Run MakeEndedRun(const std::string& run_id, int64_t created_seconds,
                           rein::v1::Stage stage, rein::v1::TerminationReason reason) {
  rein::v1::Run run = MakeRun(run_id, created_seconds, /*request_id=*/"", stage);
  run.mutable_state()->mutable_outcome()->set_status(stage);
  run.mutable_state()->mutable_outcome()->set_reason(reason);
  return run;
}

rein::v1::RunEvent StageEvent(rein::v1::Stage from, rein::v1::Stage to, int64_t version = 1) {
  rein::v1::RunEvent event;
  event.set_version(version);
  *event.mutable_time() = Seconds(kEpoch);
  event.mutable_stage_changed()->set_from(from);
  event.mutable_stage_changed()->set_to(to);
  return event;
}

rein::v1::RunEvent NoteEvent(const std::string& text, int64_t version) {
  rein::v1::RunEvent event;
  event.set_version(version);
  event.mutable_error()->set_stage(rein::v1::PLANNING);
  event.mutable_error()->set_code("UNAVAILABLE");
  event.mutable_error()->set_message(text);
  return event;
}

// The state after one transition from `state`: version + 1, `stage`.
rein::v1::RunState Next(const rein::v1::RunState& state, rein::v1::Stage stage) {
  rein::v1::RunState next = state;
  next.set_version(state.version() + 1);
  next.set_stage(stage);
  return next;
}

std::vector<int64_t> Seqs(const std::vector<rein::v1::RunEvent>& events) {
  std::vector<int64_t> seqs;
  for (const rein::v1::RunEvent& event : events) seqs.push_back(event.seq());
  return seqs;
}

std::vector<std::string> Ids(const std::vector<rein::v1::Run>& runs) {
  std::vector<std::string> ids;
  for (const rein::v1::Run& run : runs) ids.push_back(run.run_id());
  return ids;
}

// Every run ListRuns(filter) returns, following its page tokens; a failed call, a page over
// `page_size` or more than ten pages is a test failure.
std::vector<rein::v1::Run> ListEveryPage(RunStore& store, const RunFilter& filter, int page_size) {
  std::vector<rein::v1::Run> runs;
  std::string token;
  int pages = 0;
  do {
    absl::StatusOr<RunPage> page = store.ListRuns(filter, page_size, token);
    if (!page.ok()) {
      ADD_FAILURE() << page.status();
      break;
    }
    EXPECT_LE(page->runs.size(), static_cast<size_t>(page_size));
    for (rein::v1::Run& run : page->runs) runs.push_back(std::move(run));
    token = page->next_page_token;
    if (++pages >= 10) {
      ADD_FAILURE() << "paging does not end";
      break;
    }
  } while (!token.empty());
  return runs;
}

absl::Time At(int64_t seconds) { return absl::FromUnixSeconds(seconds); }

TEST_P(RunStoreConformanceTest, CreateThenGetReturnsStoredRun) {
  rein::v1::Run run = MakeRun("run-1", kEpoch, "request-1");
  (*run.mutable_spec()->mutable_labels())["team"] = "search";

  absl::StatusOr<CreateResult> created = store().CreateRun(run, {});
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_TRUE(created->created);
  EXPECT_THAT(created->run, EqualsProto(run));

  absl::StatusOr<rein::v1::Run> got = store().GetRun("run-1");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_THAT(*got, EqualsProto(run));
}

TEST_P(RunStoreConformanceTest, CreateNumbersEventsFromOne) {
  ASSERT_TRUE(store()
                  .CreateRun(MakeRun("run-1"),
                             {StageEvent(rein::v1::STAGE_UNSPECIFIED, rein::v1::INITIALIZING),
                              NoteEvent("a", 1), NoteEvent("b", 1)})
                  .ok());

  absl::StatusOr<std::vector<rein::v1::RunEvent>> events =
      store().ReadEvents("run-1", /*after_seq=*/0, /*limit=*/100);
  ASSERT_TRUE(events.ok()) << events.status();
  ASSERT_THAT(*events, SizeIs(3));
  EXPECT_THAT(Seqs(*events), ElementsAre(1, 2, 3));
  for (const rein::v1::RunEvent& event : *events) EXPECT_EQ(event.run_id(), "run-1");
  EXPECT_EQ((*events)[0].stage_changed().to(), rein::v1::INITIALIZING);
  EXPECT_EQ((*events)[2].error().message(), "b");
}

TEST_P(RunStoreConformanceTest, CreateWithEmptyRunIdIsInvalidArgument) {
  absl::StatusOr<CreateResult> created = store().CreateRun(MakeRun(""), {});
  EXPECT_EQ(CodeOf(created), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(created.status().message(), HasSubstr("run_id"));
}

TEST_P(RunStoreConformanceTest, GetUnknownRunIsNotFound) {
  EXPECT_EQ(CodeOf(store().GetRun("no-such-run")), absl::StatusCode::kNotFound);
}

TEST_P(RunStoreConformanceTest, CreateWithSameRequestIdReturnsFirstRun) {
  const rein::v1::Run first = MakeRun("run-1", kEpoch, "request-1");
  ASSERT_TRUE(store().CreateRun(first, {NoteEvent("first", 1)}).ok());

  absl::StatusOr<CreateResult> second = store().CreateRun(
      MakeRun("run-2", kEpoch + 5, "request-1"), {NoteEvent("second", 1), NoteEvent("x", 1)});
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_FALSE(second->created);
  EXPECT_THAT(second->run, EqualsProto(first));

  EXPECT_EQ(CodeOf(store().GetRun("run-2")), absl::StatusCode::kNotFound);
  absl::StatusOr<std::vector<rein::v1::RunEvent>> events = store().ReadEvents("run-1", 0, 100);
  ASSERT_TRUE(events.ok()) << events.status();
  ASSERT_THAT(*events, SizeIs(1));
  EXPECT_EQ((*events)[0].error().message(), "first");
}

TEST_P(RunStoreConformanceTest, CreateWithoutRequestIdTwiceCreatesTwoRuns) {
  ASSERT_TRUE(store().CreateRun(MakeRun("run-1"), {}).ok());
  absl::StatusOr<CreateResult> second = store().CreateRun(MakeRun("run-2"), {});
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_TRUE(second->created);
  EXPECT_EQ(second->run.run_id(), "run-2");
}

TEST_P(RunStoreConformanceTest, CreateWithDuplicateRunIdIsAlreadyExists) {
  const rein::v1::Run first = MakeRun("run-1", kEpoch, "request-1");
  ASSERT_TRUE(store().CreateRun(first, {}).ok());

  rein::v1::Run again = MakeRun("run-1", kEpoch + 9, "request-2");
  again.mutable_spec()->set_goal("another goal");
  EXPECT_EQ(CodeOf(store().CreateRun(again, {NoteEvent("x", 1)})),
            absl::StatusCode::kAlreadyExists);

  absl::StatusOr<rein::v1::Run> got = store().GetRun("run-1");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_THAT(*got, EqualsProto(first));
  absl::StatusOr<std::vector<rein::v1::RunEvent>> events = store().ReadEvents("run-1", 0, 100);
  ASSERT_TRUE(events.ok()) << events.status();
  EXPECT_THAT(*events, IsEmpty());
}

TEST_P(RunStoreConformanceTest, CreateWithInvalidCreatedAtIsInvalidArgument) {
  rein::v1::Run run = MakeRun("run-1");
  run.mutable_created_at()->set_nanos(-5);
  absl::StatusOr<CreateResult> created = store().CreateRun(run, {});
  EXPECT_EQ(CodeOf(created), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(created.status().message(), HasSubstr("run.created_at"));
  EXPECT_EQ(CodeOf(store().GetRun("run-1")), absl::StatusCode::kNotFound);
}

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

TEST_P(RunStoreConformanceTest, CommitWithCurrentVersionReplacesState) {
  const rein::v1::Run run = MakeRun("run-1");
  ASSERT_TRUE(store()
                  .CreateRun(run, {StageEvent(rein::v1::STAGE_UNSPECIFIED, rein::v1::INITIALIZING)})
                  .ok());

  rein::v1::RunState next = Next(run.state(), rein::v1::PLANNING);
  next.set_iteration(1);
  next.set_tokens_used(1234);
  next.set_latest_observation("listed 3 tools");
  absl::StatusOr<std::vector<rein::v1::RunEvent>> stored =
      store().Commit("run-1", /*expected_version=*/1, next,
                     {StageEvent(rein::v1::INITIALIZING, rein::v1::PLANNING, 2), NoteEvent("n", 2)},
                     /*snapshot=*/std::nullopt, At(kEpoch + 100) + absl::Milliseconds(250));
  ASSERT_TRUE(stored.ok()) << stored.status();
  ASSERT_THAT(*stored, SizeIs(2));
  EXPECT_THAT(Seqs(*stored), ElementsAre(2, 3));
  EXPECT_EQ((*stored)[0].run_id(), "run-1");
  EXPECT_EQ((*stored)[1].run_id(), "run-1");
  EXPECT_EQ((*stored)[0].stage_changed().to(), rein::v1::PLANNING);

  absl::StatusOr<rein::v1::Run> got = store().GetRun("run-1");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_THAT(got->state(), EqualsProto(next));
  EXPECT_THAT(got->updated_at(), EqualsProto(Seconds(kEpoch + 100, 250000000)));
  EXPECT_THAT(got->created_at(), EqualsProto(run.created_at()));
  EXPECT_THAT(got->spec(), EqualsProto(run.spec()));

  absl::StatusOr<std::vector<rein::v1::RunEvent>> events = store().ReadEvents("run-1", 0, 100);
  ASSERT_TRUE(events.ok()) << events.status();
  ASSERT_THAT(*events, SizeIs(3));
  EXPECT_THAT((*events)[1], EqualsProto((*stored)[0]));
  EXPECT_THAT((*events)[2], EqualsProto((*stored)[1]));
}

TEST_P(RunStoreConformanceTest, CommitWithStaleVersionIsFailedPreconditionAndWritesNothing) {
  const rein::v1::Run run = MakeRun("run-1");
  ASSERT_TRUE(store().CreateRun(run, {NoteEvent("created", 1)}).ok());
  const rein::v1::RunState planning = Next(run.state(), rein::v1::PLANNING);
  ASSERT_TRUE(store()
                  .Commit("run-1", 1, planning, {NoteEvent("won", 2)},
                          Snapshot{/*iteration=*/0, /*version=*/2, R"({"stage":"PLANNING"})"},
                          At(kEpoch + 1))
                  .ok());

  rein::v1::RunState stale = Next(run.state(), rein::v1::CANCELLED);
  absl::StatusOr<std::vector<rein::v1::RunEvent>> result = store().Commit(
      "run-1", /*expected_version=*/1, stale, {NoteEvent("lost", 2)},
      Snapshot{/*iteration=*/0, /*version=*/3, R"({"stage":"CANCELLED"})"}, At(kEpoch + 2));
  EXPECT_EQ(CodeOf(result), absl::StatusCode::kFailedPrecondition);

  absl::StatusOr<rein::v1::Run> got = store().GetRun("run-1");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_THAT(got->state(), EqualsProto(planning));
  EXPECT_THAT(got->updated_at(), EqualsProto(Seconds(kEpoch + 1)));
  absl::StatusOr<std::vector<rein::v1::RunEvent>> events = store().ReadEvents("run-1", 0, 100);
  ASSERT_TRUE(events.ok()) << events.status();
  ASSERT_THAT(*events, SizeIs(2));
  EXPECT_EQ((*events)[1].error().message(), "won");
  absl::StatusOr<std::vector<Snapshot>> snapshots = store().ListSnapshots("run-1");
  ASSERT_TRUE(snapshots.ok()) << snapshots.status();
  ASSERT_THAT(*snapshots, SizeIs(1));
  EXPECT_EQ((*snapshots)[0].version, 2);
}

TEST_P(RunStoreConformanceTest, CommitWithVersionNotOneAheadIsInvalidArgument) {
  const rein::v1::Run run = MakeRun("run-1");
  ASSERT_TRUE(store().CreateRun(run, {}).ok());
  rein::v1::RunState next = Next(run.state(), rein::v1::PLANNING);
  next.set_version(5);

  absl::StatusOr<std::vector<rein::v1::RunEvent>> result =
      store().Commit("run-1", 1, next, {NoteEvent("x", 5)}, std::nullopt, At(kEpoch + 1));
  EXPECT_EQ(CodeOf(result), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(result.status().message(), HasSubstr("new_state.version"));

  absl::StatusOr<rein::v1::Run> got = store().GetRun("run-1");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->state().version(), 1);
  EXPECT_EQ(got->state().stage(), rein::v1::INITIALIZING);
}

TEST_P(RunStoreConformanceTest, CommitAtTimeOutsideTimestampRangeIsInvalidArgument) {
  const rein::v1::Run run = MakeRun("run-1");
  ASSERT_TRUE(store().CreateRun(run, {}).ok());
  absl::StatusOr<std::vector<rein::v1::RunEvent>> result = store().Commit(
      "run-1", 1, Next(run.state(), rein::v1::PLANNING), {}, std::nullopt, absl::InfiniteFuture());
  EXPECT_EQ(CodeOf(result), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(result.status().message(), HasSubstr("now"));
}

TEST_P(RunStoreConformanceTest, CommitOnUnknownRunIsNotFound) {
  rein::v1::RunState next;
  next.set_version(2);
  next.set_stage(rein::v1::PLANNING);
  EXPECT_EQ(
      CodeOf(store().Commit("no-such-run", 1, next, {NoteEvent("x", 2)}, std::nullopt, At(kEpoch))),
      absl::StatusCode::kNotFound);
  EXPECT_EQ(CodeOf(store().GetRun("no-such-run")), absl::StatusCode::kNotFound);
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

TEST_P(RunStoreConformanceTest, CommitsNumberEventsWithoutGaps) {
  const rein::v1::Run run = MakeRun("run-1");
  ASSERT_TRUE(store().CreateRun(run, {}).ok());

  rein::v1::RunState state = run.state();
  int64_t expected_next_seq = 1;
  for (int i = 0; i < 30; ++i) {
    rein::v1::RunState next = Next(state, rein::v1::DECIDING);
    std::vector<rein::v1::RunEvent> events;
    for (int e = 0; e < i % 4; ++e) events.push_back(NoteEvent(absl::StrCat(i, ".", e), i));
    absl::StatusOr<std::vector<rein::v1::RunEvent>> stored =
        store().Commit("run-1", state.version(), next, events, std::nullopt, At(kEpoch + i));
    ASSERT_TRUE(stored.ok()) << stored.status();
    ASSERT_THAT(*stored, SizeIs(events.size()));
    for (const rein::v1::RunEvent& event : *stored) EXPECT_EQ(event.seq(), expected_next_seq++);
    state = next;
  }

  absl::StatusOr<std::vector<rein::v1::RunEvent>> events = store().ReadEvents("run-1", 0, 0);
  ASSERT_TRUE(events.ok()) << events.status();
  std::vector<int64_t> expected(static_cast<size_t>(expected_next_seq - 1));
  for (size_t i = 0; i < expected.size(); ++i) expected[i] = static_cast<int64_t>(i) + 1;
  EXPECT_THAT(Seqs(*events), ElementsAreArray(expected));
  EXPECT_EQ(expected.size(), 43u);  // 0+1+2+3 per 4 commits: 7 * 6 + 0 + 1
}

TEST_P(RunStoreConformanceTest, ReadEventsHonorsAfterSeqAndLimit) {
  std::vector<rein::v1::RunEvent> created;
  for (int i = 1; i <= 10; ++i) created.push_back(NoteEvent(absl::StrCat("e", i), 1));
  ASSERT_TRUE(store().CreateRun(MakeRun("run-1"), created).ok());

  absl::StatusOr<std::vector<rein::v1::RunEvent>> middle = store().ReadEvents("run-1", 3, 4);
  ASSERT_TRUE(middle.ok()) << middle.status();
  EXPECT_THAT(Seqs(*middle), ElementsAre(4, 5, 6, 7));
  EXPECT_EQ((*middle)[0].error().message(), "e4");

  absl::StatusOr<std::vector<rein::v1::RunEvent>> tail = store().ReadEvents("run-1", 8, 10);
  ASSERT_TRUE(tail.ok()) << tail.status();
  EXPECT_THAT(Seqs(*tail), ElementsAre(9, 10));

  absl::StatusOr<std::vector<rein::v1::RunEvent>> past = store().ReadEvents("run-1", 10, 5);
  ASSERT_TRUE(past.ok()) << past.status();
  EXPECT_THAT(*past, IsEmpty());

  absl::StatusOr<std::vector<rein::v1::RunEvent>> unlimited = store().ReadEvents("run-1", 2, 0);
  ASSERT_TRUE(unlimited.ok()) << unlimited.status();
  EXPECT_THAT(Seqs(*unlimited), ElementsAre(3, 4, 5, 6, 7, 8, 9, 10));
}

TEST_P(RunStoreConformanceTest, ReadEventsOfUnknownRunIsNotFound) {
  EXPECT_EQ(CodeOf(store().ReadEvents("no-such-run", 0, 10)), absl::StatusCode::kNotFound);
}

TEST_P(RunStoreConformanceTest, SnapshotsAreListedOldestFirst) {
  const rein::v1::Run run = MakeRun("run-1");
  ASSERT_TRUE(store().CreateRun(run, {}).ok());
  absl::StatusOr<std::vector<Snapshot>> none = store().ListSnapshots("run-1");
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_THAT(*none, IsEmpty());

  rein::v1::RunState state = run.state();
  for (int i = 1; i <= 5; ++i) {
    rein::v1::RunState next = Next(state, rein::v1::EVALUATING);
    next.set_iteration(i);
    std::optional<Snapshot> snapshot;
    if (i != 3) {  // a commit without a snapshot in between
      snapshot = Snapshot{i, next.version(), absl::StrCat(R"({"iteration":)", i, "}")};
    }
    ASSERT_TRUE(store().Commit("run-1", state.version(), next, {}, snapshot, At(kEpoch + i)).ok());
    state = next;
  }

  absl::StatusOr<std::vector<Snapshot>> snapshots = store().ListSnapshots("run-1");
  ASSERT_TRUE(snapshots.ok()) << snapshots.status();
  ASSERT_THAT(*snapshots, SizeIs(4));
  const int iterations[] = {1, 2, 4, 5};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ((*snapshots)[i].iteration, iterations[i]);
    EXPECT_EQ((*snapshots)[i].version, iterations[i] + 1);
    EXPECT_EQ((*snapshots)[i].state, absl::StrCat(R"({"iteration":)", iterations[i], "}"));
  }
}

TEST_P(RunStoreConformanceTest, DuplicateSnapshotVersionIsAlreadyExistsAndWritesNothing) {
  const rein::v1::Run run = MakeRun("run-1");
  ASSERT_TRUE(store().CreateRun(run, {}).ok());
  const rein::v1::RunState second = Next(run.state(), rein::v1::PLANNING);
  ASSERT_TRUE(
      store()
          .Commit("run-1", 1, second, {NoteEvent("a", 2)}, Snapshot{1, 7, "{}"}, At(kEpoch + 1))
          .ok());

  const rein::v1::RunState third = Next(second, rein::v1::DECIDING);
  EXPECT_EQ(CodeOf(store().Commit("run-1", 2, third, {NoteEvent("b", 3)}, Snapshot{2, 7, "{}"},
                                  At(kEpoch + 2))),
            absl::StatusCode::kAlreadyExists);

  absl::StatusOr<rein::v1::Run> got = store().GetRun("run-1");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->state().version(), 2);
  absl::StatusOr<std::vector<rein::v1::RunEvent>> events = store().ReadEvents("run-1", 0, 0);
  ASSERT_TRUE(events.ok()) << events.status();
  EXPECT_THAT(Seqs(*events), ElementsAre(1));
  // The failed transaction left the store usable.
  EXPECT_TRUE(
      store()
          .Commit("run-1", 2, third, {NoteEvent("c", 3)}, Snapshot{2, 3, "{}"}, At(kEpoch + 3))
          .ok());
}

TEST_P(RunStoreConformanceTest, ListSnapshotsOfUnknownRunIsNotFound) {
  EXPECT_EQ(CodeOf(store().ListSnapshots("no-such-run")), absl::StatusCode::kNotFound);
}

TEST_P(RunStoreConformanceTest, ListRunsReturnsNewestFirst) {
  ASSERT_TRUE(store().CreateRun(MakeRun("b", kEpoch + 1), {}).ok());
  ASSERT_TRUE(store().CreateRun(MakeRun("a", kEpoch + 3), {}).ok());
  ASSERT_TRUE(store().CreateRun(MakeRun("c", kEpoch + 2), {}).ok());
  ASSERT_TRUE(store().CreateRun(MakeRun("d", kEpoch + 2), {}).ok());  // same time: by run_id

  absl::StatusOr<RunPage> page = store().ListRuns(RunFilter{}, 10, "");
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_THAT(Ids(page->runs), ElementsAre("a", "d", "c", "b"));
  EXPECT_EQ(page->next_page_token, "");
  EXPECT_THAT(page->runs[0], EqualsProto(MakeRun("a", kEpoch + 3)));
}

TEST_P(RunStoreConformanceTest, ListRunsOfEmptyStoreIsEmpty) {
  absl::StatusOr<RunPage> page = store().ListRuns(RunFilter{}, 10, "");
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_THAT(page->runs, IsEmpty());
  EXPECT_EQ(page->next_page_token, "");
}

TEST_P(RunStoreConformanceTest, ListRunsFiltersByStage) {
  ASSERT_TRUE(store().CreateRun(MakeRun("init", kEpoch + 1), {}).ok());
  ASSERT_TRUE(store().CreateRun(MakeRun("plan-1", kEpoch + 2, "", rein::v1::PLANNING), {}).ok());
  ASSERT_TRUE(store().CreateRun(MakeRun("paused", kEpoch + 3, "", rein::v1::PAUSED), {}).ok());
  ASSERT_TRUE(store().CreateRun(MakeRun("plan-2", kEpoch + 4, "", rein::v1::PLANNING), {}).ok());

  RunFilter planning;
  planning.stage = rein::v1::PLANNING;
  absl::StatusOr<RunPage> page = store().ListRuns(planning, 10, "");
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_THAT(Ids(page->runs), ElementsAre("plan-2", "plan-1"));

  RunFilter finished;
  finished.stage = rein::v1::FINISHED;
  absl::StatusOr<RunPage> none = store().ListRuns(finished, 10, "");
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_THAT(none->runs, IsEmpty());
}

TEST_P(RunStoreConformanceTest, ListRunsFiltersByOutcomeReason) {
  ASSERT_TRUE(
      store()
          .CreateRun(
              MakeEndedRun("max-iter", kEpoch + 1, rein::v1::FAILED, rein::v1::MAX_ITERATIONS), {})
          .ok());
  ASSERT_TRUE(
      store()
          .CreateRun(MakeEndedRun("stagnated", kEpoch + 2, rein::v1::FAILED, rein::v1::STAGNATION),
                     {})
          .ok());
  ASSERT_TRUE(
      store()
          .CreateRun(MakeEndedRun("done", kEpoch + 3, rein::v1::FINISHED, rein::v1::GOAL_ACHIEVED),
                     {})
          .ok());
  ASSERT_TRUE(store().CreateRun(MakeRun("running", kEpoch + 4), {}).ok());

  RunFilter max_iterations;
  max_iterations.outcome = rein::v1::MAX_ITERATIONS;
  absl::StatusOr<RunPage> page = store().ListRuns(max_iterations, 10, "");
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_THAT(Ids(page->runs), ElementsAre("max-iter"));

  RunFilter failed;
  failed.stage = rein::v1::FAILED;
  absl::StatusOr<RunPage> failed_page = store().ListRuns(failed, 10, "");
  ASSERT_TRUE(failed_page.ok()) << failed_page.status();
  EXPECT_THAT(Ids(failed_page->runs), ElementsAre("stagnated", "max-iter"));

  RunFilter failed_stagnation;
  failed_stagnation.stage = rein::v1::FAILED;
  failed_stagnation.outcome = rein::v1::STAGNATION;
  absl::StatusOr<RunPage> both = store().ListRuns(failed_stagnation, 10, "");
  ASSERT_TRUE(both.ok()) << both.status();
  EXPECT_THAT(Ids(both->runs), ElementsAre("stagnated"));
}

TEST_P(RunStoreConformanceTest, ListRunsSeesCommittedStageAndOutcome) {
  const rein::v1::Run run = MakeRun("run-1");
  ASSERT_TRUE(store().CreateRun(run, {}).ok());
  rein::v1::RunState done = Next(run.state(), rein::v1::FINISHED);
  done.mutable_outcome()->set_status(rein::v1::FINISHED);
  done.mutable_outcome()->set_reason(rein::v1::GOAL_ACHIEVED);
  ASSERT_TRUE(store().Commit("run-1", 1, done, {}, std::nullopt, At(kEpoch + 1)).ok());

  RunFilter finished;
  finished.stage = rein::v1::FINISHED;
  absl::StatusOr<RunPage> page = store().ListRuns(finished, 10, "");
  ASSERT_TRUE(page.ok()) << page.status();
  ASSERT_THAT(Ids(page->runs), ElementsAre("run-1"));
  EXPECT_THAT(page->runs[0].state(), EqualsProto(done));

  RunFilter goal_achieved;
  goal_achieved.outcome = rein::v1::GOAL_ACHIEVED;
  absl::StatusOr<RunPage> by_reason = store().ListRuns(goal_achieved, 10, "");
  ASSERT_TRUE(by_reason.ok()) << by_reason.status();
  EXPECT_THAT(Ids(by_reason->runs), ElementsAre("run-1"));

  RunFilter initializing;
  initializing.stage = rein::v1::INITIALIZING;
  absl::StatusOr<RunPage> none = store().ListRuns(initializing, 10, "");
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_THAT(none->runs, IsEmpty());
}

// The stage and the outcome's reason are each written on their own: a commit may change one,
// the other, both or neither, and the filters follow every step.
TEST_P(RunStoreConformanceTest, ListRunsFollowsStageAndReasonChangedOneAtATime) {
  const rein::v1::Run run = MakeRun("run-1");
  ASSERT_TRUE(store().CreateRun(run, {}).ok());
  auto ids_with = [this](rein::v1::Stage stage, rein::v1::TerminationReason reason) {
    RunFilter filter;
    filter.stage = stage;
    filter.outcome = reason;
    absl::StatusOr<RunPage> page = store().ListRuns(filter, 10, "");
    EXPECT_TRUE(page.ok()) << page.status();
    return page.ok() ? Ids(page->runs) : std::vector<std::string>{"error"};
  };
  const std::vector<std::string> run_1 = {"run-1"};
  const std::vector<std::string> none;

  rein::v1::RunState state = Next(run.state(), rein::v1::PLANNING);  // the stage only
  ASSERT_TRUE(store().Commit("run-1", 1, state, {}, std::nullopt, At(kEpoch + 1)).ok());
  EXPECT_EQ(ids_with(rein::v1::PLANNING, rein::v1::TERMINATION_REASON_UNSPECIFIED), run_1);
  EXPECT_EQ(ids_with(rein::v1::INITIALIZING, rein::v1::TERMINATION_REASON_UNSPECIFIED), none);

  state = Next(state, rein::v1::PLANNING);  // neither
  ASSERT_TRUE(store().Commit("run-1", 2, state, {}, std::nullopt, At(kEpoch + 2)).ok());
  EXPECT_EQ(ids_with(rein::v1::PLANNING, rein::v1::TERMINATION_REASON_UNSPECIFIED), run_1);

  state = Next(state, rein::v1::PLANNING);  // the reason only
  state.mutable_outcome()->set_reason(rein::v1::STAGNATION);
  ASSERT_TRUE(store().Commit("run-1", 3, state, {}, std::nullopt, At(kEpoch + 3)).ok());
  EXPECT_EQ(ids_with(rein::v1::PLANNING, rein::v1::STAGNATION), run_1);
  EXPECT_EQ(ids_with(rein::v1::STAGE_UNSPECIFIED, rein::v1::STAGNATION), run_1);

  state = Next(state, rein::v1::FAILED);  // both
  state.mutable_outcome()->set_status(rein::v1::FAILED);
  state.mutable_outcome()->set_reason(rein::v1::MAX_ITERATIONS);
  ASSERT_TRUE(store().Commit("run-1", 4, state, {}, std::nullopt, At(kEpoch + 4)).ok());
  EXPECT_EQ(ids_with(rein::v1::FAILED, rein::v1::MAX_ITERATIONS), run_1);
  EXPECT_EQ(ids_with(rein::v1::PLANNING, rein::v1::TERMINATION_REASON_UNSPECIFIED), none);
  EXPECT_EQ(ids_with(rein::v1::STAGE_UNSPECIFIED, rein::v1::STAGNATION), none);
  absl::StatusOr<rein::v1::Run> stored = store().GetRun("run-1");
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_THAT(stored->state(), EqualsProto(state));
  absl::StatusOr<std::vector<std::string>> unfinished = store().ListUnfinishedRunIds();
  ASSERT_TRUE(unfinished.ok()) << unfinished.status();
  EXPECT_THAT(*unfinished, IsEmpty());
}

TEST_P(RunStoreConformanceTest, ListRunsPagingVisitsEveryRunOnce) {
  std::vector<std::pair<int64_t, std::string>> expected;  // (created, id)
  for (int i = 0; i < 23; ++i) {
    const std::string run_id = absl::StrCat("run-", 100 + i);
    const int64_t created = kEpoch + i / 3;  // three runs share each second
    ASSERT_TRUE(store().CreateRun(MakeRun(run_id, created), {}).ok());
    expected.emplace_back(created, run_id);
  }
  std::sort(expected.rbegin(), expected.rend());
  std::vector<std::string> expected_ids;
  for (const auto& [created, id] : expected) expected_ids.push_back(id);

  std::vector<std::string> seen;
  std::string token;
  int pages = 0;
  do {
    absl::StatusOr<RunPage> page = store().ListRuns(RunFilter{}, 5, token);
    ASSERT_TRUE(page.ok()) << page.status();
    EXPECT_LE(page->runs.size(), 5u);
    for (const std::string& id : Ids(page->runs)) seen.push_back(id);
    token = page->next_page_token;
    ASSERT_LT(++pages, 10) << "paging does not end";
  } while (!token.empty());
  EXPECT_EQ(pages, 5);
  EXPECT_THAT(seen, ElementsAreArray(expected_ids));
}

TEST_P(RunStoreConformanceTest, ListRunsPagingWithFilterVisitsMatchingRunsOnce) {
  std::vector<std::string> expected_ids;
  for (int i = 0; i < 12; ++i) {
    const std::string run_id = absl::StrCat("run-", 10 + i);
    const rein::v1::Stage stage = i % 2 == 0 ? rein::v1::PAUSED : rein::v1::DECIDING;
    ASSERT_TRUE(store().CreateRun(MakeRun(run_id, kEpoch + i, "", stage), {}).ok());
    if (stage == rein::v1::PAUSED) expected_ids.insert(expected_ids.begin(), run_id);
  }
  RunFilter paused;
  paused.stage = rein::v1::PAUSED;
  EXPECT_THAT(Ids(ListEveryPage(store(), paused, 4)), ElementsAreArray(expected_ids));
}

// DECIDING, EXECUTING and EVALUATING are the stages a run cycles through every iteration; a
// store may keep them apart by other means than its index (SqliteRunStore does), but each
// filter finds exactly its runs, page by page, as the runs move between them by commits.
TEST_P(RunStoreConformanceTest, ListRunsTellsTheLoopsStagesApartAcrossPagesAndCommits) {
  const rein::v1::Stage loop[] = {rein::v1::DECIDING, rein::v1::EXECUTING, rein::v1::EVALUATING};
  std::map<rein::v1::Stage, std::vector<std::string>> expected;  // newest first
  std::vector<rein::v1::RunState> states;
  for (int i = 0; i < 14; ++i) {
    const std::string run_id = absl::StrCat("run-", 10 + i);
    const rein::v1::Run run = MakeRun(run_id, kEpoch + i, "", rein::v1::DECIDING);
    ASSERT_TRUE(store().CreateRun(run, {}).ok());
    // Committed forward to its stage: DECIDING stays, EXECUTING one step, EVALUATING two.
    rein::v1::RunState state = run.state();
    for (int step = 1; step <= i % 3; ++step) {
      rein::v1::RunState next = Next(state, loop[step]);
      ASSERT_TRUE(
          store().Commit(run_id, state.version(), next, {}, std::nullopt, At(kEpoch + 20)).ok());
      state = next;
    }
    expected[loop[i % 3]].insert(expected[loop[i % 3]].begin(), run_id);
    states.push_back(state);
  }
  auto list = [this](rein::v1::Stage stage) {
    RunFilter filter;
    filter.stage = stage;
    std::vector<std::string> seen;
    for (const rein::v1::Run& run : ListEveryPage(store(), filter, 2)) {
      EXPECT_EQ(run.state().stage(), stage) << run.run_id();
      seen.push_back(run.run_id());
    }
    return seen;
  };
  for (rein::v1::Stage stage : loop) {
    EXPECT_THAT(list(stage), ElementsAreArray(expected[stage])) << rein::v1::Stage_Name(stage);
  }
  // run-10 goes round once more: DECIDING -> EXECUTING -> EVALUATING -> DECIDING.
  rein::v1::RunState state = states[0];
  for (rein::v1::Stage stage : {rein::v1::EXECUTING, rein::v1::EVALUATING, rein::v1::DECIDING}) {
    rein::v1::RunState next = Next(state, stage);
    ASSERT_TRUE(
        store().Commit("run-10", state.version(), next, {}, std::nullopt, At(kEpoch + 30)).ok());
    state = next;
    EXPECT_THAT(list(stage), Contains("run-10")) << rein::v1::Stage_Name(stage);
    for (rein::v1::Stage other : loop) {
      if (other != stage) {
        EXPECT_THAT(list(other), Not(Contains("run-10")));
      }
    }
  }
  absl::StatusOr<std::vector<std::string>> unfinished = store().ListUnfinishedRunIds();
  ASSERT_TRUE(unfinished.ok()) << unfinished.status();
  EXPECT_EQ(unfinished->size(), 14u);
}

TEST_P(RunStoreConformanceTest, ListRunsDefaultsAndCapsPageSize) {
  for (int i = 0; i < 60; ++i) {
    ASSERT_TRUE(store().CreateRun(MakeRun(absl::StrCat("run-", 100 + i), kEpoch + i), {}).ok());
  }
  absl::StatusOr<RunPage> first = store().ListRuns(RunFilter{}, 0, "");
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_THAT(first->runs, SizeIs(50));
  EXPECT_EQ(first->runs.front().run_id(), "run-159");
  ASSERT_NE(first->next_page_token, "");
  absl::StatusOr<RunPage> second = store().ListRuns(RunFilter{}, -3, first->next_page_token);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_THAT(second->runs, SizeIs(10));
  EXPECT_EQ(second->runs.back().run_id(), "run-100");
  EXPECT_EQ(second->next_page_token, "");

  absl::StatusOr<RunPage> huge = store().ListRuns(RunFilter{}, 1 << 30, "");
  ASSERT_TRUE(huge.ok()) << huge.status();
  EXPECT_THAT(huge->runs, SizeIs(60));
}

TEST_P(RunStoreConformanceTest, BigRunsEndAPageBeforeItPassesThreeMebibytes) {
  for (int i = 0; i < 10; ++i) {
    rein::v1::Run run = MakeRun(absl::StrCat("run-big-", i), kEpoch + i);
    run.mutable_spec()->set_goal(std::string(700 * 1024, 'g'));
    ASSERT_TRUE(store().CreateRun(run, {}).ok());
  }
  absl::StatusOr<RunPage> first = store().ListRuns(RunFilter{}, 50, "");
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_LT(first->runs.size(), 10u);
  EXPECT_FALSE(first->next_page_token.empty());
  size_t total = first->runs.size();
  std::string token = first->next_page_token;
  while (!token.empty()) {
    absl::StatusOr<RunPage> page = store().ListRuns(RunFilter{}, 50, token);
    ASSERT_TRUE(page.ok()) << page.status();
    total += page->runs.size();
    token = page->next_page_token;
  }
  EXPECT_EQ(total, 10u);
}

TEST_P(RunStoreConformanceTest, ListRunsWithGarbagePageTokenIsInvalidArgument) {
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(store().CreateRun(MakeRun(absl::StrCat("run-", i), kEpoch + i), {}).ok());
  }
  absl::StatusOr<RunPage> first = store().ListRuns(RunFilter{}, 1, "");
  ASSERT_TRUE(first.ok()) << first.status();
  const std::string good = first->next_page_token;
  ASSERT_NE(good, "");

  std::string flipped = good;
  flipped[flipped.size() / 2] = flipped[flipped.size() / 2] == 'A' ? 'B' : 'A';
  for (const std::string& token :
       {std::string("garbage"), std::string("%%%"), std::string("\xff\x00\x01", 3),
        good.substr(0, good.size() / 2), flipped, good + "AAAA"}) {
    absl::StatusOr<RunPage> page = store().ListRuns(RunFilter{}, 1, token);
    EXPECT_EQ(CodeOf(page), absl::StatusCode::kInvalidArgument) << "token " << token;
    EXPECT_THAT(page.status().message(), HasSubstr("page_token")) << "token " << token;
  }
}

TEST_P(RunStoreConformanceTest, ListUnfinishedRunIdsExcludesTerminalRuns) {
  const rein::v1::Stage stages[] = {
      rein::v1::INITIALIZING, rein::v1::PLANNING,   rein::v1::DECIDING,
      rein::v1::EXECUTING,    rein::v1::EVALUATING, rein::v1::PAUSED,
      rein::v1::FINISHED,     rein::v1::FAILED,     rein::v1::CANCELLED};
  for (rein::v1::Stage stage : stages) {
    ASSERT_TRUE(store()
                    .CreateRun(MakeRun(rein::v1::Stage_Name(stage), kEpoch + stage, "", stage), {})
                    .ok());
  }
  // A run that ends by a commit leaves the list too.
  const rein::v1::Run ending = MakeRun("ending", kEpoch + 20, "", rein::v1::EVALUATING);
  ASSERT_TRUE(store().CreateRun(ending, {}).ok());
  ASSERT_TRUE(store()
                  .Commit("ending", 1, Next(ending.state(), rein::v1::CANCELLED), {}, std::nullopt,
                          At(kEpoch + 21))
                  .ok());

  absl::StatusOr<std::vector<std::string>> ids = store().ListUnfinishedRunIds();
  ASSERT_TRUE(ids.ok()) << ids.status();
  // Oldest first: the runs were created one second apart in stage order.
  EXPECT_THAT(*ids, ElementsAre("INITIALIZING", "PLANNING", "DECIDING", "EXECUTING", "EVALUATING",
                                "PAUSED"));
}

TEST_P(RunStoreConformanceTest, JoinFleetChecksTheRouterIdAndTtl) {
  EXPECT_EQ(store().JoinFleet("", absl::Seconds(10)).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store().JoinFleet("a b", absl::Seconds(10)).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store().JoinFleet("router-1", absl::ZeroDuration()).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(store().JoinFleet("host-1.example:4242", absl::Seconds(10)).ok());
  EXPECT_TRUE(store().RenewLease().ok());
}

TEST_P(RunStoreConformanceTest, TheOwnerCommitsItsRunsAndClaimsThemBackAfterARestart) {
  ASSERT_TRUE(store().JoinFleet("router-1", absl::Seconds(10)).ok());
  rein::v1::Run run = MakeRun("run-1", kEpoch, "", rein::v1::PLANNING);
  run.set_owner("router-1");
  ASSERT_TRUE(store().CreateRun(run, {}).ok());
  ASSERT_TRUE(store().CreateRun(MakeRun("done", kEpoch + 1, "", rein::v1::FINISHED), {}).ok());
  absl::StatusOr<rein::v1::Run> got = store().GetRun("run-1");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->owner(), "router-1");
  EXPECT_EQ(got->lease_epoch(), 1);
  absl::StatusOr<std::vector<rein::v1::RunEvent>> committed =
      store().CommitOwned("run-1", 1, 1, Next(run.state(), rein::v1::DECIDING), {NoteEvent("x", 2)},
                          std::nullopt, At(kEpoch + 2));
  ASSERT_TRUE(committed.ok()) << committed.status();
  absl::StatusOr<std::map<std::string, int64_t>> owned = store().OwnedRunVersions();
  ASSERT_TRUE(owned.ok()) << owned.status();
  EXPECT_THAT(*owned, ElementsAre(std::make_pair(std::string("run-1"), int64_t{2})));
  // A restart of the same router takes back its unfinished runs (and only those).
  absl::StatusOr<std::vector<rein::v1::Run>> claimed = store().ClaimRuns(/*include_mine=*/true);
  ASSERT_TRUE(claimed.ok()) << claimed.status();
  ASSERT_THAT(*claimed, SizeIs(1));
  EXPECT_EQ((*claimed)[0].run_id(), "run-1");
  EXPECT_EQ((*claimed)[0].owner(), "router-1");
  EXPECT_GE((*claimed)[0].lease_epoch(), 1);
  EXPECT_EQ((*claimed)[0].state().version(), 2);
  EXPECT_TRUE(store()
                  .CommitOwned("run-1", (*claimed)[0].lease_epoch(), 2,
                               Next((*claimed)[0].state(), rein::v1::EXECUTING), {}, std::nullopt,
                               At(kEpoch + 3))
                  .ok());
}

TEST_P(RunStoreConformanceTest, CorruptRunIsDataLossNamingRun) {
  if (!GetParam().corrupt_run) GTEST_SKIP() << "the factory cannot corrupt a run";
  ASSERT_TRUE(store().CreateRun(MakeRun("run-bad", kEpoch, "request-bad"), {}).ok());
  ASSERT_TRUE(store().CreateRun(MakeRun("run-good", kEpoch + 1), {}).ok());
  ASSERT_TRUE(CorruptRun("run-bad").ok());
  Reopen();

  absl::StatusOr<rein::v1::Run> got = store().GetRun("run-bad");
  EXPECT_EQ(CodeOf(got), absl::StatusCode::kDataLoss);
  EXPECT_THAT(got.status().message(), HasSubstr("run-bad"));
  absl::StatusOr<RunPage> page = store().ListRuns(RunFilter{}, 10, "");
  EXPECT_EQ(CodeOf(page), absl::StatusCode::kDataLoss);
  EXPECT_THAT(page.status().message(), HasSubstr("run-bad"));
  // The request_id leads to the corrupt run, which cannot be returned.
  EXPECT_EQ(CodeOf(store().CreateRun(MakeRun("run-new", kEpoch, "request-bad"), {})),
            absl::StatusCode::kDataLoss);

  absl::StatusOr<rein::v1::Run> good = store().GetRun("run-good");
  ASSERT_TRUE(good.ok()) << good.status();
  EXPECT_EQ(good->spec().goal(), "goal of run-good");
}

TEST_P(RunStoreConformanceTest, CorruptEventIsDataLossNamingRunAndSeq) {
  if (!GetParam().corrupt_event) GTEST_SKIP() << "the factory cannot corrupt an event";
  ASSERT_TRUE(store().CreateRun(MakeRun("run-1"), {NoteEvent("a", 1), NoteEvent("b", 1)}).ok());
  ASSERT_TRUE(CorruptEvent("run-1", 2).ok());
  Reopen();

  absl::StatusOr<std::vector<rein::v1::RunEvent>> events = store().ReadEvents("run-1", 0, 0);
  EXPECT_EQ(CodeOf(events), absl::StatusCode::kDataLoss);
  EXPECT_THAT(events.status().message(), HasSubstr("event 2 of run run-1"));
  // The events before it still read.
  absl::StatusOr<std::vector<rein::v1::RunEvent>> first = store().ReadEvents("run-1", 0, 1);
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_THAT(*first, SizeIs(1));
  EXPECT_EQ((*first)[0].error().message(), "a");
}

TEST_P(RunStoreConformanceTest, ReopenKeepsRunsEventsAndSnapshots) {
  const rein::v1::Run run = MakeRun("run-1", kEpoch, "request-1");
  ASSERT_TRUE(store().CreateRun(run, {NoteEvent("created", 1)}).ok());
  rein::v1::RunState next = Next(run.state(), rein::v1::PLANNING);
  next.set_iteration(1);
  ASSERT_TRUE(store()
                  .Commit("run-1", 1, next, {NoteEvent("planned", 2)},
                          Snapshot{1, 2, R"({"iteration":1})"}, At(kEpoch + 1))
                  .ok());

  Reopen();

  absl::StatusOr<rein::v1::Run> got = store().GetRun("run-1");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_THAT(got->state(), EqualsProto(next));
  EXPECT_THAT(got->spec(), EqualsProto(run.spec()));
  EXPECT_EQ(got->request_id(), "request-1");
  absl::StatusOr<std::vector<rein::v1::RunEvent>> events = store().ReadEvents("run-1", 0, 0);
  ASSERT_TRUE(events.ok()) << events.status();
  EXPECT_THAT(Seqs(*events), ElementsAre(1, 2));
  EXPECT_EQ((*events)[1].error().message(), "planned");
  absl::StatusOr<std::vector<Snapshot>> snapshots = store().ListSnapshots("run-1");
  ASSERT_TRUE(snapshots.ok()) << snapshots.status();
  ASSERT_THAT(*snapshots, SizeIs(1));
  EXPECT_EQ((*snapshots)[0].state, R"({"iteration":1})");
  absl::StatusOr<std::vector<std::string>> unfinished = store().ListUnfinishedRunIds();
  ASSERT_TRUE(unfinished.ok()) << unfinished.status();
  EXPECT_THAT(*unfinished, ElementsAre("run-1"));

  // The request_id still deduplicates, and seq goes on where it stopped.
  absl::StatusOr<CreateResult> again = store().CreateRun(MakeRun("run-2", kEpoch, "request-1"), {});
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_FALSE(again->created);
  EXPECT_EQ(again->run.run_id(), "run-1");
  absl::StatusOr<std::vector<rein::v1::RunEvent>> more =
      store().Commit("run-1", 2, Next(next, rein::v1::DECIDING), {NoteEvent("decided", 3)},
                     std::nullopt, At(kEpoch + 2));
  ASSERT_TRUE(more.ok()) << more.status();
  EXPECT_THAT(Seqs(*more), ElementsAre(3));
}

}  // namespace
}  // namespace rein
