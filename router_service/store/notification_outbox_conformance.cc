// NotificationOutbox conformance suite: the notices a pause or an end leaves in its commit's
// transaction, their claim, hold and update, and in a fleet their fencing, once for every
// implementation (notification_outbox.h).
#include <memory>
#include <optional>
#include <string>
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

rein::v1::RunEvent PausedEvent(int64_t version) {
  rein::v1::RunEvent event;
  event.set_version(version);
  *event.mutable_time() = Seconds(kEpoch);
  event.mutable_paused()->mutable_pause()->set_reason(rein::v1::NEED_HUMAN);
  event.mutable_paused()->mutable_pause()->set_question("which file?");
  return event;
}

rein::v1::RunEvent FinishedEvent(int64_t version) {
  rein::v1::RunEvent event;
  event.set_version(version);
  *event.mutable_time() = Seconds(kEpoch);
  event.mutable_finished()->mutable_outcome()->set_status(rein::v1::FINISHED);
  event.mutable_finished()->mutable_outcome()->set_reason(rein::v1::GOAL_ACHIEVED);
  return event;
}

std::vector<std::string> NoticeIds(const std::vector<Notification>& notices) {
  std::vector<std::string> ids;
  for (const Notification& n : notices) ids.push_back(n.notice_id);
  return ids;
}

// Creates run-1 (PLANNING, version 1, owned by `owner`) and commits a pause (events 1, 2: a
// stage change then `paused`) at kEpoch + 10.
void CreateAndPause(RouterStore& store, const std::string& owner = "") {
  rein::v1::Run run = OwnedRun("run-1", owner);
  ASSERT_TRUE(store.CreateRun(run, {}).ok());
  rein::v1::RunState paused = Next(run.state(), rein::v1::PAUSED);
  paused.mutable_pause()->set_question("which file?");
  absl::StatusOr<std::vector<rein::v1::RunEvent>> committed = store.Commit(
      "run-1", 1, paused, {StageEvent(rein::v1::PLANNING, rein::v1::PAUSED, 2), PausedEvent(2)},
      std::nullopt, At(kEpoch + 10));
  ASSERT_TRUE(committed.ok()) << committed.status();
}

TEST_P(NotificationOutboxConformanceTest, APauseAndAnEndEachLeaveOneNoticeInTheirCommit) {
  ASSERT_TRUE(store().JoinFleet("router-1", absl::Seconds(10)).ok());
  CreateAndPause(store(), "router-1");
  rein::v1::Run run = *store().GetRun("run-1");
  // A commit without a pause or an end leaves none.
  rein::v1::RunState planning = Next(run.state(), rein::v1::PLANNING);
  ASSERT_TRUE(
      store()
          .Commit("run-1", 2, planning, {NoteEvent("resumed", 3)}, std::nullopt, At(kEpoch + 20))
          .ok());
  rein::v1::RunState done = Next(planning, rein::v1::FINISHED);
  done.mutable_outcome()->set_reason(rein::v1::GOAL_ACHIEVED);
  ASSERT_TRUE(
      store().Commit("run-1", 3, done, {FinishedEvent(4)}, std::nullopt, At(kEpoch + 30)).ok());

  absl::StatusOr<std::vector<Notification>> all =
      store().ListNotifications(NotificationStatus::kPending, /*any=*/true, "", 10);
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_THAT(NoticeIds(*all), ElementsAre("run-1.4", "run-1.2"));  // newest first
  const Notification& pause = (*all)[1];
  EXPECT_EQ(pause.run_id, "run-1");
  EXPECT_EQ(pause.seq, 2);
  EXPECT_EQ(pause.event.seq(), 2);
  EXPECT_EQ(pause.event.run_id(), "run-1");
  EXPECT_EQ(pause.event.paused().pause().question(), "which file?");
  EXPECT_EQ(pause.state.stage(), rein::v1::PAUSED);
  EXPECT_EQ(pause.state.version(), 2);
  EXPECT_EQ(pause.committed, At(kEpoch + 10));
  EXPECT_EQ(pause.status, NotificationStatus::kPending);
  EXPECT_EQ(pause.attempts, 0);
  EXPECT_EQ(pause.next_attempt, At(kEpoch + 10));
  EXPECT_EQ((*all)[0].state.stage(), rein::v1::FINISHED);
  EXPECT_TRUE((*all)[0].event.has_finished());
  absl::StatusOr<NotificationCounts> counts = store().CountNotifications();
  ASSERT_TRUE(counts.ok()) << counts.status();
  EXPECT_EQ(counts->pending, 2);
  EXPECT_EQ(counts->delivered, 0);
}

TEST_P(NotificationOutboxConformanceTest, ListingANamespaceShowsOnlyItsRunsNotices) {
  ASSERT_TRUE(store().JoinFleet("router-1", absl::Seconds(10)).ok());
  rein::v1::Run mine = OwnedRun("run-1", "router-1");  // namespace "" is stored as `default`
  rein::v1::Run theirs = OwnedRun("run-2", "router-1");
  theirs.mutable_spec()->set_namespace_("team-b");
  ASSERT_TRUE(store().CreateRun(mine, {}).ok());
  ASSERT_TRUE(store().CreateRun(theirs, {}).ok());
  for (const rein::v1::Run* run : {&mine, &theirs}) {
    ASSERT_TRUE(store()
                    .Commit(run->run_id(), 1, Next(run->state(), rein::v1::PAUSED),
                            {PausedEvent(2)}, std::nullopt, At(kEpoch + 10))
                    .ok());
  }
  absl::StatusOr<std::vector<Notification>> b =
      store().ListNotifications(NotificationStatus::kPending, /*any=*/false, "team-b", 10);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_THAT(NoticeIds(*b), ElementsAre("run-2.1"));
  absl::StatusOr<std::vector<Notification>> others =
      store().ListNotifications(NotificationStatus::kPending, /*any=*/true, "default", 10);
  ASSERT_TRUE(others.ok()) << others.status();
  EXPECT_THAT(NoticeIds(*others), ElementsAre("run-1.1"));
  absl::StatusOr<std::vector<Notification>> none =
      store().ListNotifications(NotificationStatus::kPending, /*any=*/true, "team-c", 10);
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_THAT(*none, IsEmpty());
  absl::StatusOr<std::vector<Notification>> failed =
      store().ListNotifications(NotificationStatus::kFailed, /*any=*/false, "team-b", 10);
  ASSERT_TRUE(failed.ok()) << failed.status();
  EXPECT_THAT(*failed, IsEmpty());
  absl::StatusOr<std::vector<Notification>> all =
      store().ListNotifications(NotificationStatus::kPending, /*any=*/true, "", 10);
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_THAT(*all, SizeIs(2));
}

TEST_P(NotificationOutboxConformanceTest, ACommitThatFailsLeavesNoNotice) {
  ASSERT_TRUE(store().JoinFleet("router-1", absl::Seconds(10)).ok());
  rein::v1::Run run = OwnedRun("run-1", "router-1");
  ASSERT_TRUE(store().CreateRun(run, {}).ok());
  ASSERT_TRUE(store().CreateRun(OwnedRun("run-2", "router-1"), {}).ok());
  const rein::v1::RunState paused = Next(run.state(), rein::v1::PAUSED);
  // A stale version, alone and inside a batch beside one that commits.
  rein::v1::RunState far = paused;
  far.set_version(8);
  EXPECT_EQ(
      CodeOf(store().Commit("run-1", 7, far, {PausedEvent(8)}, std::nullopt, At(kEpoch + 10))),
      absl::StatusCode::kFailedPrecondition);
  const rein::v1::RunState stale = Next(Next(run.state(), rein::v1::PLANNING), rein::v1::PAUSED);
  std::vector<CommitRequest> batch(2);
  batch[0].run_id = "run-1";
  batch[0].expected_version = 2;
  batch[0].new_state = &stale;
  batch[0].events.push_back(PausedEvent(3));
  batch[0].now = At(kEpoch + 11);
  batch[1].run_id = "run-2";
  batch[1].expected_version = 1;
  batch[1].new_state = &paused;
  batch[1].events.push_back(PausedEvent(2));
  batch[1].now = At(kEpoch + 11);
  std::vector<absl::StatusOr<std::vector<rein::v1::RunEvent>>> results = store().CommitBatch(batch);
  ASSERT_THAT(results, SizeIs(2));
  EXPECT_EQ(results[0].status().code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(results[1].ok()) << results[1].status();
  absl::StatusOr<std::vector<Notification>> all =
      store().ListNotifications(NotificationStatus::kPending, /*any=*/true, "", 10);
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_THAT(NoticeIds(*all), ElementsAre("run-2.1"));
}

TEST_P(NotificationOutboxConformanceTest, AClaimHoldsANoticeUntilItsUpdateOrHoldEnds) {
  ASSERT_TRUE(store().JoinFleet("router-1", absl::Seconds(10)).ok());
  CreateAndPause(store(), "router-1");
  EXPECT_EQ(CodeOf(store().ClaimNotifications(At(kEpoch), At(kEpoch + 1), 0)),
            absl::StatusCode::kInvalidArgument);
  // Not due before its commit.
  absl::StatusOr<std::vector<Notification>> claimed =
      store().ClaimNotifications(At(kEpoch + 9), At(kEpoch + 70), 10);
  ASSERT_TRUE(claimed.ok()) << claimed.status();
  EXPECT_THAT(*claimed, IsEmpty());
  claimed = store().ClaimNotifications(At(kEpoch + 10), At(kEpoch + 70), 10);
  ASSERT_TRUE(claimed.ok()) << claimed.status();
  ASSERT_THAT(NoticeIds(*claimed), ElementsAre("run-1.2"));
  EXPECT_EQ((*claimed)[0].owner, "router-1");
  const int64_t epoch = (*claimed)[0].lease_epoch;
  EXPECT_GE(epoch, 1);
  // Held: not claimed again before hold_until.
  claimed = store().ClaimNotifications(At(kEpoch + 60), At(kEpoch + 120), 10);
  ASSERT_TRUE(claimed.ok()) << claimed.status();
  EXPECT_THAT(*claimed, IsEmpty());
  // A failed attempt: due again at next_attempt.
  NotificationUpdate update;
  update.notice_id = "run-1.2";
  update.lease_epoch = epoch;
  update.attempts = 1;
  update.next_attempt = At(kEpoch + 80);
  update.last_error = "HTTP 500";
  update.delivered_to = {"http://a.example/hook"};
  ASSERT_TRUE(store().UpdateNotification(update).ok());
  claimed = store().ClaimNotifications(At(kEpoch + 80), At(kEpoch + 140), 10);
  ASSERT_TRUE(claimed.ok()) << claimed.status();
  ASSERT_THAT(*claimed, SizeIs(1));
  EXPECT_EQ((*claimed)[0].attempts, 1);
  EXPECT_EQ((*claimed)[0].last_error, "HTTP 500");
  EXPECT_THAT((*claimed)[0].delivered_to, ElementsAre("http://a.example/hook"));
  // Delivered: never claimed again.
  update.status = NotificationStatus::kDelivered;
  update.attempts = 2;
  update.lease_epoch = (*claimed)[0].lease_epoch;
  ASSERT_TRUE(store().UpdateNotification(update).ok());
  claimed = store().ClaimNotifications(At(kEpoch + 1000), At(kEpoch + 1100), 10);
  ASSERT_TRUE(claimed.ok()) << claimed.status();
  EXPECT_THAT(*claimed, IsEmpty());
  absl::StatusOr<std::vector<Notification>> delivered =
      store().ListNotifications(NotificationStatus::kDelivered, /*any=*/false, "", 10);
  ASSERT_TRUE(delivered.ok()) << delivered.status();
  EXPECT_THAT(NoticeIds(*delivered), ElementsAre("run-1.2"));
  absl::StatusOr<NotificationCounts> counts = store().CountNotifications();
  ASSERT_TRUE(counts.ok()) << counts.status();
  EXPECT_EQ(counts->pending, 0);
  EXPECT_EQ(counts->delivered, 1);
  update.notice_id = "run-9.9";
  EXPECT_EQ(store().UpdateNotification(update).code(), absl::StatusCode::kNotFound);
}

TEST_P(NotificationOutboxConformanceTest, NoticesSurviveAReopen) {
  ASSERT_TRUE(store().JoinFleet("router-1", absl::Seconds(10)).ok());
  CreateAndPause(store(), "router-1");
  ASSERT_TRUE(store().LeaveFleet().ok());
  Reopen();
  ASSERT_TRUE(store().JoinFleet("router-1", absl::Seconds(10)).ok());
  absl::StatusOr<std::vector<Notification>> claimed =
      store().ClaimNotifications(At(kEpoch + 10), At(kEpoch + 70), 10);
  ASSERT_TRUE(claimed.ok()) << claimed.status();
  EXPECT_THAT(NoticeIds(*claimed), ElementsAre("run-1.2"));
}

TEST_P(NotificationOutboxConformanceTest, ALapsedRoutersNoticesAreTakenOverAndFenced) {
  if (!store().Shared()) GTEST_SKIP() << "one router per store";
  RouterStore& a = store();
  std::unique_ptr<RouterStore> b = OpenAnother();
  ASSERT_TRUE(a.JoinFleet("router-a", absl::Seconds(30)).ok());
  ASSERT_TRUE(b->JoinFleet("router-b", absl::Seconds(30)).ok());
  CreateAndPause(a, "router-a");
  // While router-a lives, its notice is its own.
  absl::StatusOr<std::vector<Notification>> by_b =
      b->ClaimNotifications(At(kEpoch + 10), At(kEpoch + 70), 10);
  ASSERT_TRUE(by_b.ok()) << by_b.status();
  EXPECT_THAT(*by_b, IsEmpty());
  absl::StatusOr<std::vector<Notification>> by_a =
      a.ClaimNotifications(At(kEpoch + 10), At(kEpoch + 20), 10);
  ASSERT_TRUE(by_a.ok()) << by_a.status();
  ASSERT_THAT(*by_a, SizeIs(1));
  EXPECT_EQ((*by_a)[0].owner, "router-a");
  // router-a's lease ends: router-b takes the notice over at the next epoch, once it is due.
  ASSERT_TRUE(a.LeaveFleet().ok());
  by_b = b->ClaimNotifications(At(kEpoch + 20), At(kEpoch + 80), 10);
  ASSERT_TRUE(by_b.ok()) << by_b.status();
  ASSERT_THAT(*by_b, SizeIs(1));
  EXPECT_EQ((*by_b)[0].owner, "router-b");
  EXPECT_EQ((*by_b)[0].lease_epoch, (*by_a)[0].lease_epoch + 1);
  // router-a's late update is fenced off; router-b's is written.
  NotificationUpdate late;
  late.notice_id = "run-1.2";
  late.lease_epoch = (*by_a)[0].lease_epoch;
  late.status = NotificationStatus::kDelivered;
  late.next_attempt = At(kEpoch + 20);
  const absl::Status fenced = a.UpdateNotification(late);
  EXPECT_EQ(fenced.code(), absl::StatusCode::kAborted) << fenced;
  EXPECT_TRUE(HasReason(fenced, reason::kLeaseLost)) << fenced;
  EXPECT_THAT(fenced.message(), HasSubstr("router-b"));
  late.lease_epoch = (*by_b)[0].lease_epoch;
  ASSERT_TRUE(b->UpdateNotification(late).ok());
  absl::StatusOr<NotificationCounts> counts = a.CountNotifications();
  ASSERT_TRUE(counts.ok()) << counts.status();
  EXPECT_EQ(counts->delivered, 1);
}

TEST_P(NotificationOutboxConformanceTest, ARouterWithoutAValidLeaseClaimsNothing) {
  if (!store().Shared()) GTEST_SKIP() << "one router per store";
  ASSERT_TRUE(store().JoinFleet("router-a", absl::Seconds(30)).ok());
  CreateAndPause(store(), "router-a");
  ASSERT_TRUE(store().LeaveFleet().ok());
  absl::StatusOr<std::vector<Notification>> claimed =
      store().ClaimNotifications(At(kEpoch + 10), At(kEpoch + 70), 10);
  ASSERT_TRUE(claimed.ok()) << claimed.status();
  EXPECT_THAT(*claimed, IsEmpty());
}

}  // namespace
}  // namespace rein::conformance
