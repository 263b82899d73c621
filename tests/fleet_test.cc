// Several routers on one PostgreSQL database, as real processes: runs spread and finish, a
// killed or stalled router's runs are taken over and finish once, a stalled router is fenced
// and rejoins, any router serves watch and review, and one router id cannot be used twice.
#include "tests/fleet.h"

#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/cluster.h"

namespace rein::testing {
namespace {

using RunMsg = rein::v1::Run;
using rein::v1::RunEvent;

class FleetTest : public ::testing::Test {
 protected:
  void Boot(int routers, int delay_ms, const std::string& lease_ttl = "2s") {
    const std::string base = getenv("TEST_TMPDIR") ? getenv("TEST_TMPDIR") : "/tmp";
    const std::string dir = absl::StrCat(
        base, "/fleet-", ::testing::UnitTest::GetInstance()->current_test_info()->name());
    mkdir(dir.c_str(), 0755);
    Fleet::Options options;
    options.dir = dir;
    options.routers = routers;
    options.lease_ttl = lease_ttl;
    options.script_json = ThreeStepScript(delay_ms);
    fleet_ = std::make_unique<Fleet>(options);
    ASSERT_TRUE(fleet_->Start()) << fleet_->Logs();
  }

  static rein::v1::RunSpec Spec() {
    rein::v1::RunSpec spec;
    spec.set_goal("inspect the repo");
    spec.set_workspace("repo");
    spec.mutable_limits()->mutable_deadline()->set_seconds(120);
    return spec;
  }

  // Watches the whole log on `router` and checks it: seq 1, 2, 3 ... without a gap, exactly
  // one terminal event, last. Returns the log.
  std::vector<RunEvent> CheckedLog(int router, const std::string& run_id) {
    std::vector<RunEvent> events;
    grpc::Status status = fleet_->WatchAll(router, run_id, absl::Seconds(90), &events);
    EXPECT_TRUE(status.ok()) << run_id << ": " << status.error_message();
    EXPECT_EQ(LogProblem(events), "") << run_id;
    return events;
  }

  std::unique_ptr<Fleet> fleet_;
};

TEST_F(FleetTest, RunsSpreadOverThreeRoutersAllFinishAndAnyRouterServesThem) {
  Boot(/*routers=*/3, /*delay_ms=*/0);
  std::vector<RunMsg> runs;
  for (int i = 0; i < 12; ++i) {
    absl::StatusOr<RunMsg> run = fleet_->StartRun(i % 3, Spec(), absl::StrCat("req-", i));
    ASSERT_TRUE(run.ok()) << run.status();
    EXPECT_EQ(run->owner(), fleet_->router_id(i % 3));
    EXPECT_EQ(run->lease_epoch(), 1);
    runs.push_back(*run);
  }
  // request_id is idempotent across routers: the same request on another router returns the
  // first run.
  absl::StatusOr<RunMsg> again = fleet_->StartRun(1, Spec(), "req-0");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->run_id(), runs[0].run_id());
  for (size_t i = 0; i < runs.size(); ++i) {
    // Watched on a router that does not drive the run.
    std::vector<RunEvent> events = CheckedLog((i + 1) % 3, runs[i].run_id());
    EXPECT_EQ(events.back().finished().outcome().reason(), rein::v1::GOAL_ACHIEVED);
    absl::StatusOr<RunMsg> got = fleet_->GetRun((i + 2) % 3, runs[i].run_id());
    ASSERT_TRUE(got.ok());
    EXPECT_EQ(got->state().stage(), rein::v1::FINISHED);
    EXPECT_EQ(got->owner(), fleet_->router_id(i % 3));
  }
}

TEST_F(FleetTest, SameRouterIdTwiceIsRefused) {
  Boot(/*routers=*/1, /*delay_ms=*/0);
  // A second process with router-0's id, on another port: refused at start, naming the id.
  Process twin(
      "twin",
      {RunfilePath("router_service/rein-router"), absl::StrCat("--listen=127.0.0.1:", FreePort()),
       absl::StrCat("--store=", fleet_->store_url()), "--router_id=router-0",
       "--planner_target=127.0.0.1:1", "--executor_target=127.0.0.1:1"},
      ::testing::TempDir() + "/twin.log");
  ASSERT_TRUE(twin.Start());
  EXPECT_EQ(twin.Wait(absl::Seconds(20)), 2);
  EXPECT_NE(ReadFile(::testing::TempDir() + "/twin.log").find("router_id router-0"),
            std::string::npos)
      << ReadFile(::testing::TempDir() + "/twin.log");
}

TEST_F(FleetTest, KilledRoutersRunsAreTakenOverSpreadAndFinishOnce) {
  Boot(/*routers=*/3, /*delay_ms=*/300);
  std::vector<RunMsg> runs;
  for (int i = 0; i < 24; ++i) {
    absl::StatusOr<RunMsg> run = fleet_->StartRun(i % 3, Spec());
    ASSERT_TRUE(run.ok()) << run.status();
    runs.push_back(*run);
  }
  absl::SleepFor(absl::Milliseconds(600));
  fleet_->router(0)->Kill(SIGKILL);
  EXPECT_EQ(fleet_->router(0)->Wait(absl::Seconds(10)), 128 + SIGKILL);
  std::map<std::string, int> taken_by;
  for (size_t i = 0; i < runs.size(); ++i) {
    std::vector<RunEvent> events = CheckedLog(1 + i % 2, runs[i].run_id());
    EXPECT_EQ(events.back().finished().outcome().reason(), rein::v1::GOAL_ACHIEVED)
        << fleet_->Logs();
    absl::StatusOr<RunMsg> got = fleet_->GetRun(1, runs[i].run_id());
    ASSERT_TRUE(got.ok());
    if (runs[i].owner() == fleet_->router_id(0) && got->lease_epoch() > 1) {
      EXPECT_NE(got->owner(), fleet_->router_id(0));
      ++taken_by[got->owner()];
    }
  }
  // router-0's unfinished runs went to both survivors, not all to one.
  EXPECT_EQ(taken_by.size(), 2u) << fleet_->Logs();
}

TEST_F(FleetTest, StalledRouterIsFencedCommitsNothingOverTheNewOwnerAndRejoins) {
  Boot(/*routers=*/3, /*delay_ms=*/300);
  std::vector<RunMsg> runs;
  for (int i = 0; i < 12; ++i) {
    absl::StatusOr<RunMsg> run = fleet_->StartRun(0, Spec());
    ASSERT_TRUE(run.ok()) << run.status();
    runs.push_back(*run);
  }
  absl::SleepFor(absl::Milliseconds(400));
  // router-0 stalls (a long pause, a partition) for three lease times, calls in flight.
  fleet_->router(0)->Kill(SIGSTOP);
  absl::SleepFor(absl::Seconds(6));
  fleet_->router(0)->Kill(SIGCONT);
  int taken = 0;
  for (const RunMsg& run : runs) {
    CheckedLog(1, run.run_id());
    absl::StatusOr<RunMsg> got = fleet_->GetRun(2, run.run_id());
    ASSERT_TRUE(got.ok());
    taken += got->owner() != fleet_->router_id(0);
  }
  EXPECT_GT(taken, 0) << fleet_->Logs();
  // router-0 serves reads throughout, and once it renews it is a live router again: a new
  // run started on it is driven by it and finishes.
  absl::StatusOr<RunMsg> fresh;
  const absl::Time until = absl::Now() + absl::Seconds(20);
  do {
    fresh = fleet_->StartRun(0, Spec());
    if (!fresh.ok()) absl::SleepFor(absl::Milliseconds(200));
  } while (!fresh.ok() && absl::Now() < until);
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  EXPECT_EQ(fresh->owner(), fleet_->router_id(0));
  CheckedLog(0, fresh->run_id());
}

TEST_F(FleetTest, WatchOnOneRouterReviewOnAnotherWhileAThirdDrives) {
  Boot(/*routers=*/3, /*delay_ms=*/0);
  rein::v1::RunSpec spec = Spec();
  spec.add_pause_points(rein::v1::AFTER_PLAN);
  absl::StatusOr<RunMsg> run = fleet_->StartRun(2, spec);  // router-2 drives
  ASSERT_TRUE(run.ok()) << run.status();
  std::vector<RunEvent> watched;
  absl::Mutex mu;
  absl::Time resumed_seen = absl::InfiniteFuture();
  std::thread watcher([&] {  // router-0 watches
    rein::v1::WatchRunRequest request;
    request.set_run_id(run->run_id());
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(60)));
    auto reader = fleet_->stub(0)->WatchRun(&context, request);
    RunEvent event;
    while (reader->Read(&event)) {
      absl::MutexLock lock(&mu);
      if (event.has_resumed() && resumed_seen == absl::InfiniteFuture()) resumed_seen = absl::Now();
      watched.push_back(event);
    }
  });
  absl::StatusOr<RunMsg> paused =
      fleet_->WaitForStage(0, run->run_id(), rein::v1::PAUSED, absl::Seconds(30));
  ASSERT_TRUE(paused.ok());
  ASSERT_EQ(paused->state().stage(), rein::v1::PAUSED);
  // router-1 reviews.
  rein::v1::ResumeRunRequest resume;
  resume.set_run_id(run->run_id());
  resume.set_expected_version(paused->state().version());
  resume.mutable_review()->mutable_approve();
  RunMsg resumed;
  grpc::ClientContext context;
  const absl::Time reviewed = absl::Now();
  grpc::Status status = fleet_->stub(1)->ResumeRun(&context, resume, &resumed);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_NE(resumed.state().stage(), rein::v1::PAUSED);
  // A second review of the same version loses on any router.
  RunMsg ignored;
  grpc::ClientContext context2;
  EXPECT_EQ(fleet_->stub(2)->ResumeRun(&context2, resume, &ignored).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
  absl::StatusOr<RunMsg> done =
      fleet_->WaitForStage(1, run->run_id(), rein::v1::FINISHED, absl::Seconds(30));
  ASSERT_TRUE(done.ok());
  EXPECT_EQ(done->state().stage(), rein::v1::FINISHED) << fleet_->Logs();
  watcher.join();
  absl::MutexLock lock(&mu);
  ASSERT_FALSE(watched.empty());
  EXPECT_TRUE(watched.back().has_finished());
  for (size_t i = 0; i < watched.size(); ++i) EXPECT_EQ(watched[i].seq(), (int64_t)(i + 1));
  // Promptly: the owner was woken by the review's notice, not by a lease round or a timeout.
  EXPECT_LT(resumed_seen - reviewed, absl::Seconds(3));
}

TEST_F(FleetTest, PostgresKilledAndRestartedLosesNothingAcknowledged) {
  Boot(/*routers=*/2, /*delay_ms=*/300);
  std::vector<RunMsg> runs;
  for (int i = 0; i < 10; ++i) {
    absl::StatusOr<RunMsg> run = fleet_->StartRun(i % 2, Spec());
    ASSERT_TRUE(run.ok()) << run.status();
    runs.push_back(*run);
  }
  absl::SleepFor(absl::Milliseconds(500));
  // While the database is away, what needs it is UNAVAILABLE and the routers keep serving.
  std::thread during([&] {
    absl::SleepFor(absl::Milliseconds(1500));
    absl::StatusOr<RunMsg> refused = fleet_->StartRun(0, Spec());
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnavailable) << refused.status();
  });
  // On this thread: PostgreSQL is this thread's child (it dies with the thread that made it).
  absl::Status restarted = fleet_->postgres()->KillAndRestart(absl::Seconds(3));
  during.join();
  ASSERT_TRUE(restarted.ok()) << restarted;
  // The routers reconnect on their own; every acknowledged run finishes, once.
  for (size_t i = 0; i < runs.size(); ++i) {
    std::vector<RunEvent> events = CheckedLog(i % 2, runs[i].run_id());
    EXPECT_EQ(events.back().finished().outcome().reason(), rein::v1::GOAL_ACHIEVED)
        << fleet_->Logs();
  }
  absl::StatusOr<RunMsg> after = fleet_->StartRun(1, Spec());
  ASSERT_TRUE(after.ok()) << after.status();
  CheckedLog(0, after->run_id());
}

}  // namespace
}  // namespace rein::testing
