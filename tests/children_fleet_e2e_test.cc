// Child runs in a fleet: two routers on one real PostgreSQL database; the parent's owner is
// SIGKILLed while its group runs, the other router takes the parent and its children over, and
// every child ends once, the parent joins once, and no child is started twice.
#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/child_scripts.h"
#include "tests/cluster.h"
#include "tests/fleet.h"

namespace rein::testing {
namespace {

using RunMsg = rein::v1::Run;
using rein::v1::RunEvent;

class ChildrenFleetTest : public ::testing::Test {
 protected:
  void Boot(int delay_ms) {
    const std::string base = getenv("TEST_TMPDIR") ? getenv("TEST_TMPDIR") : "/tmp";
    const std::string dir = absl::StrCat(
        base, "/children-fleet-", ::testing::UnitTest::GetInstance()->current_test_info()->name());
    mkdir(dir.c_str(), 0755);
    Fleet::Options options;
    options.dir = dir;
    options.routers = 2;
    options.lease_ttl = "2s";
    options.script_json = FanOutScript(delay_ms);
    fleet_ = std::make_unique<Fleet>(options);
    ASSERT_TRUE(fleet_->Start()) << fleet_->Logs();
  }

  static rein::v1::RunSpec Spec() {
    rein::v1::RunSpec spec;
    spec.set_goal("audit three services, then write one report");
    spec.set_workspace("repo");
    spec.mutable_limits()->mutable_deadline()->set_seconds(120);
    spec.mutable_limits()->set_max_children(3);
    return spec;
  }

  // The whole log of `run_id` watched on `router`: seq without a gap, one terminal event, last.
  std::vector<RunEvent> CheckedLog(int router, const std::string& run_id) {
    std::vector<RunEvent> events;
    grpc::Status status = fleet_->WatchAll(router, run_id, absl::Seconds(90), &events);
    EXPECT_TRUE(status.ok()) << run_id << ": " << status.error_message();
    EXPECT_EQ(LogProblem(events), "") << run_id << "\n" << fleet_->Logs();
    return events;
  }

  // Polls router 0 until the parent has recorded all three children's run ids.
  RunMsg WaitForChildren(const std::string& parent_id) {
    for (int i = 0; i < 1000; ++i) {
      absl::StatusOr<RunMsg> run = fleet_->GetRun(0, parent_id);
      if (run.ok() && run->children_size() == 3 &&
          std::all_of(run->children().begin(), run->children().end(),
                      [](const rein::v1::ChildRun& c) { return !c.run_id().empty(); })) {
        return *run;
      }
      absl::SleepFor(absl::Milliseconds(20));
    }
    ADD_FAILURE() << "the children never started\n" << fleet_->Logs();
    return RunMsg();
  }

  std::unique_ptr<Fleet> fleet_;
};

TEST_F(ChildrenFleetTest, ParentsOwnerKilledMidGroupIsTakenOverAndJoinsOnce) {
  // Each child's decision takes 3 s, so the kill lands while every child is still working.
  Boot(/*delay_ms=*/3000);
  absl::StatusOr<RunMsg> run = fleet_->StartRun(0, Spec());
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->owner(), fleet_->router_id(0));
  RunMsg waiting = WaitForChildren(run->run_id());
  ASSERT_EQ(waiting.state().stage(), rein::v1::WAITING) << "the kill must land mid-group";
  std::set<std::string> started;
  for (const auto& c : waiting.children()) started.insert(c.run_id());
  // The children were created by the parent's owner, so the kill takes all four runs' driver.
  for (const std::string& id : started) {
    absl::StatusOr<RunMsg> child = fleet_->GetRun(1, id);
    ASSERT_TRUE(child.ok()) << child.status();
    EXPECT_EQ(child->owner(), fleet_->router_id(0)) << id;
    EXPECT_FALSE(child->state().stage() == rein::v1::FINISHED) << "a child ended before the kill";
  }
  fleet_->router(0)->Kill(SIGKILL);
  EXPECT_EQ(fleet_->router(0)->Wait(absl::Seconds(10)), 128 + SIGKILL);

  // Router 1 takes the parent and its children over; the parent joins once and finishes.
  std::vector<RunEvent> events = CheckedLog(1, run->run_id());
  EXPECT_EQ(events.back().finished().outcome().reason(), rein::v1::GOAL_ACHIEVED) << fleet_->Logs();
  int joins = 0, groups = 0, starts = 0;
  for (const auto& e : events) {
    joins += e.has_children_joined();
    groups += e.has_child_group();
    starts += e.has_children_started();
  }
  EXPECT_EQ(joins, 1);
  EXPECT_EQ(groups, 1);
  EXPECT_EQ(starts, 1) << "the children's ids were recorded again after the takeover";

  absl::StatusOr<RunMsg> parent = fleet_->GetRun(1, run->run_id());
  ASSERT_TRUE(parent.ok());
  EXPECT_EQ(parent->owner(), fleet_->router_id(1));
  EXPECT_GT(parent->lease_epoch(), 1);
  for (const auto& task : parent->state().completed_subtasks()) {
    EXPECT_EQ(task.status(), rein::v1::SubTask::COMPLETED) << task.id() << " " << task.summary();
  }
  // The store holds the parent and exactly the three children it started before the kill, each
  // ended once, taken over by router 1.
  grpc::ClientContext context;
  rein::v1::ListRunsRequest all;
  all.set_page_size(100);
  rein::v1::ListRunsResponse response;
  ASSERT_TRUE(fleet_->stub(1)->ListRuns(&context, all, &response).ok());
  EXPECT_EQ(response.runs_size(), 4);
  int children = 0;
  for (const RunMsg& r : response.runs()) {
    if (r.run_id() == run->run_id()) continue;
    ++children;
    EXPECT_TRUE(started.count(r.run_id())) << "a child started after the kill: " << r.run_id();
    EXPECT_EQ(r.spec().parent().run_id(), run->run_id());
    EXPECT_EQ(r.state().stage(), rein::v1::FINISHED) << r.state().outcome().message();
    EXPECT_EQ(r.owner(), fleet_->router_id(1)) << r.run_id();
    CheckedLog(1, r.run_id());
  }
  EXPECT_EQ(children, 3);
}

}  // namespace
}  // namespace rein::testing
