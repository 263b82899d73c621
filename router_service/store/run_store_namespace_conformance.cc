// RunStore conformance for namespaces: request_id scoped per namespace, ListRuns filtered by
// namespace, and a namespace's usage (its quotas' input), for every implementation.
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rein/v1/types.pb.h"
#include "router_service/store/run_store_conformance.h"
#include "router_service/store/testing/conformance_values.h"

namespace rein {
namespace conformance {
namespace {

using ::testing::ElementsAre;

rein::v1::Run InNamespace(rein::v1::Run run, const std::string& ns) {
  run.mutable_spec()->set_namespace_(ns);
  return run;
}

TEST_P(RunStoreConformanceTest, SameRequestIdInTwoNamespacesCreatesTwoRuns) {
  ASSERT_TRUE(store().CreateRun(InNamespace(MakeRun("run-a", kEpoch, "req"), "team-a"), {}).ok());
  absl::StatusOr<CreateResult> b =
      store().CreateRun(InNamespace(MakeRun("run-b", kEpoch + 1, "req"), "team-b"), {});
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_TRUE(b->created);
  EXPECT_EQ(b->run.run_id(), "run-b");
  // "" is "default": a third run, and a fourth with the same key in default is the third.
  absl::StatusOr<CreateResult> d = store().CreateRun(MakeRun("run-d", kEpoch + 2, "req"), {});
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_TRUE(d->created);
  absl::StatusOr<CreateResult> again =
      store().CreateRun(InNamespace(MakeRun("run-e", kEpoch + 3, "req"), "default"), {});
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_FALSE(again->created);
  EXPECT_EQ(again->run.run_id(), "run-d");
  // And within team-a the key still deduplicates.
  absl::StatusOr<CreateResult> a2 =
      store().CreateRun(InNamespace(MakeRun("run-a2", kEpoch + 4, "req"), "team-a"), {});
  ASSERT_TRUE(a2.ok()) << a2.status();
  EXPECT_FALSE(a2->created);
  EXPECT_EQ(a2->run.run_id(), "run-a");
}

TEST_P(RunStoreConformanceTest, FindRunByRequestIdLooksInOneNamespaceOnly) {
  ASSERT_TRUE(store().CreateRun(InNamespace(MakeRun("run-a", kEpoch, "req"), "team-a"), {}).ok());
  ASSERT_TRUE(store().CreateRun(MakeRun("run-d", kEpoch + 1, "req"), {}).ok());
  absl::StatusOr<rein::v1::Run> a = store().FindRunByRequestId("team-a", "req");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->run_id(), "run-a");
  EXPECT_EQ(a->spec().namespace_(), "team-a");
  // "" and "default" name one namespace.
  absl::StatusOr<rein::v1::Run> d = store().FindRunByRequestId("", "req");
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->run_id(), "run-d");
  absl::StatusOr<rein::v1::Run> d2 = store().FindRunByRequestId("default", "req");
  ASSERT_TRUE(d2.ok()) << d2.status();
  EXPECT_EQ(d2->run_id(), "run-d");
  EXPECT_EQ(CodeOf(store().FindRunByRequestId("team-b", "req")), absl::StatusCode::kNotFound);
  EXPECT_EQ(CodeOf(store().FindRunByRequestId("team-a", "other")), absl::StatusCode::kNotFound);
}

TEST_P(RunStoreConformanceTest, ListRunsFiltersByNamespaceAndBindsTheToken) {
  ASSERT_TRUE(store().CreateRun(InNamespace(MakeRun("a-1", kEpoch), "team-a"), {}).ok());
  ASSERT_TRUE(store().CreateRun(InNamespace(MakeRun("b-1", kEpoch + 1), "team-b"), {}).ok());
  ASSERT_TRUE(store().CreateRun(InNamespace(MakeRun("a-2", kEpoch + 2), "team-a"), {}).ok());
  ASSERT_TRUE(store().CreateRun(MakeRun("d-1", kEpoch + 3), {}).ok());

  RunFilter a;
  a.namespace_name = "team-a";
  absl::StatusOr<RunPage> first = store().ListRuns(a, 1, "");
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_THAT(Ids(first->runs), ElementsAre("a-2"));
  ASSERT_FALSE(first->next_page_token.empty());
  absl::StatusOr<RunPage> second = store().ListRuns(a, 1, first->next_page_token);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_THAT(Ids(second->runs), ElementsAre("a-1"));

  RunFilter b;
  b.namespace_name = "team-b";
  EXPECT_EQ(CodeOf(store().ListRuns(b, 1, first->next_page_token)),
            absl::StatusCode::kInvalidArgument);
  RunFilter d;
  d.namespace_name = "default";
  absl::StatusOr<RunPage> defaults = store().ListRuns(d, 10, "");
  ASSERT_TRUE(defaults.ok()) << defaults.status();
  EXPECT_THAT(Ids(defaults->runs), ElementsAre("d-1"));
  absl::StatusOr<RunPage> all = store().ListRuns(RunFilter{}, 10, "");
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_THAT(Ids(all->runs), ElementsAre("d-1", "a-2", "b-1", "a-1"));
}

TEST_P(RunStoreConformanceTest, NamespaceUsageCountsUnfinishedRunsAndTodaysUsage) {
  rein::v1::Run old = InNamespace(MakeRun("a-old", kEpoch), "team-a");
  old.mutable_state()->set_tokens_used(1000);
  ASSERT_TRUE(store().CreateRun(old, {}).ok());
  rein::v1::Run running = InNamespace(MakeRun("a-run", kEpoch + 100), "team-a");
  running.mutable_state()->set_tokens_used(30);
  running.mutable_state()->set_cost_used_usd(0.25);
  ASSERT_TRUE(store().CreateRun(running, {}).ok());
  rein::v1::Run paused =
      InNamespace(MakeRun("a-paused", kEpoch + 101, "", rein::v1::PAUSED), "team-a");
  paused.mutable_state()->set_tokens_used(12);
  ASSERT_TRUE(store().CreateRun(paused, {}).ok());
  ASSERT_TRUE(store()
                  .CreateRun(InNamespace(MakeEndedRun("a-done", kEpoch + 102, rein::v1::FINISHED,
                                                      rein::v1::GOAL_ACHIEVED),
                                         "team-a"),
                             {})
                  .ok());
  ASSERT_TRUE(store().CreateRun(InNamespace(MakeRun("b-1", kEpoch + 103), "team-b"), {}).ok());

  absl::StatusOr<NamespaceUsage> a =
      store().GetNamespaceUsage("team-a", absl::FromUnixSeconds(kEpoch + 100));
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->unfinished_runs, 3);  // a-old, a-run, a-paused
  EXPECT_EQ(a->tokens, 42);          // a-run and a-paused: a-old was created before `since`
  EXPECT_DOUBLE_EQ(a->cost_usd, 0.25);
  // What a run inherited (a parent's joined children, a fork's source) is counted where it
  // was spent, not again.
  rein::v1::Run parent = InNamespace(MakeRun("a-parent", kEpoch + 104), "team-a");
  parent.mutable_state()->set_tokens_used(250);
  parent.mutable_state()->set_inherited_tokens(200);
  parent.mutable_state()->set_cost_used_usd(1.0);
  parent.mutable_state()->set_inherited_cost_usd(0.75);
  ASSERT_TRUE(store().CreateRun(parent, {}).ok());
  absl::StatusOr<NamespaceUsage> with_parent =
      store().GetNamespaceUsage("team-a", absl::FromUnixSeconds(kEpoch + 100));
  ASSERT_TRUE(with_parent.ok()) << with_parent.status();
  EXPECT_EQ(with_parent->tokens, 42 + 50);
  EXPECT_DOUBLE_EQ(with_parent->cost_usd, 0.5);
  absl::StatusOr<NamespaceUsage> none =
      store().GetNamespaceUsage("team-c", absl::FromUnixSeconds(kEpoch));
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(none->unfinished_runs, 0);
  EXPECT_EQ(none->tokens, 0);
  absl::StatusOr<NamespaceUsage> d = store().GetNamespaceUsage("", absl::FromUnixSeconds(kEpoch));
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->unfinished_runs, 0);
}

}  // namespace
}  // namespace conformance
}  // namespace rein
