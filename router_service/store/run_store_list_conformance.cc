// RunStore conformance suite, its lists: ListRuns (order, filters, pages and their tokens) and
// ListUnfinishedRunIds, as run_store.h writes them ("Pages"), once for every implementation.
#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rein/v1/types.pb.h"
#include "router_service/store/run_store_conformance.h"
#include "router_service/store/testing/conformance_values.h"

namespace rein::conformance {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::SizeIs;

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

}  // namespace
}  // namespace rein::conformance
