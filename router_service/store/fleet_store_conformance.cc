// FleetStore conformance suite: the leases of the routers on one store (fleet_store.h) and the
// fencing of RunStore::CommitOwned by them, once for every implementation. The tests of routers
// sharing a store run only where Shared() says other routers may use it; a store with one user
// is held to what fleet_store.h says of it instead.
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "common/status_reason.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rein/v1/types.pb.h"
#include "router_service/store/run_store_conformance.h"
#include "router_service/store/testing/conformance_values.h"

namespace rein::conformance {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

TEST_P(FleetStoreConformanceTest, JoinFleetChecksTheRouterIdAndTtl) {
  EXPECT_EQ(store().JoinFleet("", absl::Seconds(10)).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store().JoinFleet("a b", absl::Seconds(10)).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store().JoinFleet("router-1", absl::ZeroDuration()).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(store().JoinFleet("host-1.example:4242", absl::Seconds(10)).ok());
  EXPECT_TRUE(store().RenewLease().ok());
}

TEST_P(FleetStoreConformanceTest, TheOwnerCommitsItsRunsAndClaimsThemBackAfterARestart) {
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

TEST_P(FleetStoreConformanceTest, AOneUserStoreClaimsNothingButItsOwnRuns) {
  if (store().Shared()) GTEST_SKIP() << "a shared store claims the runs of lapsed routers";
  ASSERT_TRUE(store().JoinFleet("router-1", absl::Seconds(10)).ok());
  ASSERT_TRUE(store().CreateRun(OwnedRun("run-1", "router-1"), {}).ok());
  ASSERT_TRUE(store().LeaveFleet().ok());
  absl::StatusOr<std::vector<rein::v1::Run>> claimed = store().ClaimRuns(/*include_mine=*/false);
  ASSERT_TRUE(claimed.ok()) << claimed.status();
  EXPECT_THAT(*claimed, IsEmpty());
  // Its one router's lease never lapses: a commit at the run's epoch goes through.
  EXPECT_TRUE(store()
                  .CommitOwned("run-1", 1, 1,
                               Next(OwnedRun("run-1", "").state(), rein::v1::DECIDING), {},
                               std::nullopt, At(kEpoch + 1))
                  .ok());
}

TEST_P(FleetStoreConformanceTest, ARouterIdALiveRouterHoldsIsRefusedUntilItLeaves) {
  if (!store().Shared()) GTEST_SKIP() << "one router per store";
  std::unique_ptr<RouterStore> second = OpenAnother();
  ASSERT_NE(second, nullptr);
  ASSERT_TRUE(store().JoinFleet("router-a", absl::Seconds(30)).ok());
  absl::Status refused = second->JoinFleet("router-a", absl::Seconds(30));
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(refused.message(), HasSubstr("router_id router-a"));
  // Once the first has left (its lease ends at once), the id may be taken again, and the first
  // can no longer renew under it.
  ASSERT_TRUE(store().LeaveFleet().ok());
  ASSERT_TRUE(second->JoinFleet("router-a", absl::Seconds(30)).ok());
  EXPECT_EQ(store().RenewLease().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(second->RenewLease().ok());
}

TEST_P(FleetStoreConformanceTest, TheRunsOfARouterThatLeftAreClaimedAndItsCommitsFenced) {
  if (!store().Shared()) GTEST_SKIP() << "one router per store";
  std::unique_ptr<RouterStore> b = OpenAnother();
  ASSERT_NE(b, nullptr);
  RouterStore& a = store();
  ASSERT_TRUE(a.JoinFleet("router-a", absl::Seconds(30)).ok());
  ASSERT_TRUE(b->JoinFleet("router-b", absl::Seconds(30)).ok());
  const rein::v1::Run run = OwnedRun("run-1", "router-a");
  ASSERT_TRUE(a.CreateRun(run, {NoteEvent("created", 1)}).ok());
  // a's lease is alive: nothing to claim.
  absl::StatusOr<std::vector<rein::v1::Run>> claimed = b->ClaimRuns(/*include_mine=*/false);
  ASSERT_TRUE(claimed.ok()) << claimed.status();
  EXPECT_THAT(*claimed, IsEmpty());
  ASSERT_TRUE(a.LeaveFleet().ok());
  claimed = b->ClaimRuns(/*include_mine=*/false);
  ASSERT_TRUE(claimed.ok()) << claimed.status();
  ASSERT_THAT(*claimed, SizeIs(1));
  EXPECT_EQ((*claimed)[0].owner(), "router-b");
  EXPECT_EQ((*claimed)[0].lease_epoch(), 2);
  // a commits with its old epoch: fenced with the lease-lost reason, nothing written.
  const rein::v1::RunState next = Next(run.state(), rein::v1::DECIDING);
  absl::StatusOr<std::vector<rein::v1::RunEvent>> stale =
      a.CommitOwned("run-1", 1, 1, next, {NoteEvent("stale", 2)}, std::nullopt, At(kEpoch + 1));
  EXPECT_EQ(stale.status().code(), absl::StatusCode::kAborted);
  EXPECT_TRUE(HasReason(stale.status(), reason::kLeaseLost)) << stale.status();
  EXPECT_TRUE(IsLeaseLost(stale.status()));
  EXPECT_THAT(stale.status().message(), HasSubstr("router-b at epoch 2"));
  absl::StatusOr<std::vector<rein::v1::RunEvent>> events = b->ReadEvents("run-1", 0, 0);
  ASSERT_TRUE(events.ok()) << events.status();
  EXPECT_THAT(*events, SizeIs(1));
  // The fencing is the same inside a batch.
  std::vector<CommitRequest> batch(1);
  batch[0].run_id = "run-1";
  batch[0].lease_epoch = 1;
  batch[0].expected_version = 1;
  batch[0].new_state = &next;
  batch[0].now = At(kEpoch + 1);
  std::vector<absl::StatusOr<std::vector<rein::v1::RunEvent>>> results = a.CommitBatch(batch);
  ASSERT_THAT(results, SizeIs(1));
  EXPECT_TRUE(HasReason(results[0].status(), reason::kLeaseLost)) << results[0].status();
  // The new owner commits at its epoch, and seq goes on without a gap.
  absl::StatusOr<std::vector<rein::v1::RunEvent>> owned =
      b->CommitOwned("run-1", 2, 1, next, {NoteEvent("b", 2)}, std::nullopt, At(kEpoch + 2));
  ASSERT_TRUE(owned.ok()) << owned.status();
  EXPECT_EQ((*owned)[0].seq(), 2);
  absl::StatusOr<std::map<std::string, int64_t>> versions = b->OwnedRunVersions();
  ASSERT_TRUE(versions.ok()) << versions.status();
  EXPECT_THAT(*versions, ElementsAre(std::make_pair(std::string("run-1"), int64_t{2})));
  // A review through any router (Commit: the version check only) still goes through.
  EXPECT_TRUE(
      a.Commit("run-1", 2, Next(next, rein::v1::PAUSED), {}, std::nullopt, At(kEpoch + 3)).ok());
}

}  // namespace
}  // namespace rein::conformance
