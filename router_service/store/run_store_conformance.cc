// RunStore conformance suite: the tests every RunStore implementation must pass unchanged.
//
// They test the contract written in run_store.h (what a commit checks, how seq is assigned,
// what survives a reopen), once for every implementation; ListRuns and its pages are
// run_store_list_conformance.cc's, races and batches run_store_concurrency_conformance.cc's. The
// fixture is shared with the FleetStore and CommitFeed suites.
#include "router_service/store/run_store_conformance.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rein/v1/types.pb.h"
#include "router_service/store/testing/conformance_values.h"

namespace rein {

std::string RunStoreFactoryName(const ::testing::TestParamInfo<RunStoreFactory>& info) {
  return info.param.name;
}

void PrintTo(const RunStoreFactory& factory, std::ostream* os) { *os << factory.name; }

void StoreConformanceTest::SetUp() {
  const RunStoreFactory& factory = GetParam();
  absl::StatusOr<std::string> location = factory.new_location();
  ASSERT_TRUE(location.ok()) << location.status();
  location_ = *location;
  absl::StatusOr<std::unique_ptr<RouterStore>> store = factory.open(location_);
  ASSERT_TRUE(store.ok()) << store.status();
  store_ = std::move(*store);
}

void StoreConformanceTest::TearDown() {
  store_.reset();
  if (!location_.empty() && GetParam().remove) GetParam().remove(location_);
}

std::unique_ptr<RouterStore> StoreConformanceTest::OpenAnother() {
  absl::StatusOr<std::unique_ptr<RouterStore>> store = GetParam().open(location_);
  EXPECT_TRUE(store.ok()) << store.status();
  return store.ok() ? std::move(*store) : nullptr;
}

absl::Status StoreConformanceTest::CorruptRun(const std::string& run_id) {
  return GetParam().corrupt_run(location_, run_id);
}

absl::Status StoreConformanceTest::CorruptEvent(const std::string& run_id, int64_t seq) {
  return GetParam().corrupt_event(location_, run_id, seq);
}

void StoreConformanceTest::Reopen() {
  store_.reset();
  absl::StatusOr<std::unique_ptr<RouterStore>> store = GetParam().open(location_);
  ASSERT_TRUE(store.ok()) << store.status();
  store_ = std::move(*store);
}

namespace conformance {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

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
  // Paged by version: the same snapshots, in pages of 3, then 1, then none.
  absl::StatusOr<std::vector<Snapshot>> first = store().ListSnapshotsAfter("run-1", 0, 3);
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_THAT(*first, SizeIs(3));
  EXPECT_EQ((*first)[2].version, (*snapshots)[2].version);
  absl::StatusOr<std::vector<Snapshot>> rest =
      store().ListSnapshotsAfter("run-1", first->back().version, 3);
  ASSERT_TRUE(rest.ok()) << rest.status();
  ASSERT_THAT(*rest, SizeIs(1));
  EXPECT_EQ((*rest)[0].version, (*snapshots)[3].version);
  absl::StatusOr<std::vector<Snapshot>> after_last =
      store().ListSnapshotsAfter("run-1", rest->back().version, 3);
  ASSERT_TRUE(after_last.ok()) << after_last.status();
  EXPECT_THAT(*after_last, IsEmpty());
  EXPECT_EQ(CodeOf(store().ListSnapshotsAfter("no-such-run", 0, 3)), absl::StatusCode::kNotFound);
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
}  // namespace conformance
}  // namespace rein
