// Webhooks in a fleet of real routers on one PostgreSQL (docs/WEBHOOKS.md): a router SIGKILLed
// while it holds undelivered notices has them delivered by another, once each; and a receiver
// that is down for a minute gets every notice when it is back.
#include <signal.h>
#include <sys/stat.h>

#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "router_service/notify/testing/webhook_receiver.h"
#include "tests/cluster.h"
#include "tests/fleet.h"

namespace rein::testing {
namespace {

constexpr char kKey[] = "fleet-webhook-key";

class WebhooksFleetTest : public ::testing::Test {
 protected:
  // Three routers posting every notice to receiver_ (which is down until the test starts it).
  void Boot() {
    const std::string base = getenv("TEST_TMPDIR") ? getenv("TEST_TMPDIR") : "/tmp";
    const std::string dir = absl::StrCat(
        base, "/webhooks-fleet-", ::testing::UnitTest::GetInstance()->current_test_info()->name());
    mkdir(dir.c_str(), 0755);
    ASSERT_TRUE(receiver_.Start().ok());
    port_ = receiver_.port();
    receiver_.Stop();
    std::ofstream(dir + "/hook.key") << kKey << "\n";
    Fleet::Options options;
    options.dir = dir;
    options.routers = 3;
    options.lease_ttl = "2s";
    options.script_json = ThreeStepScript(0);
    options.router_flags = {
        absl::StrCat("--webhook_url=", receiver_.url(), ",secret_file=", dir, "/hook.key"),
        "--webhook_timeout=1s", "--webhook_max_backoff=3s"};
    fleet_ = std::make_unique<Fleet>(options);
    ASSERT_TRUE(fleet_->Start()) << fleet_->Logs();
  }

  static rein::v1::RunSpec Spec(bool pause) {
    rein::v1::RunSpec spec;
    spec.set_goal("inspect the repo");
    spec.set_workspace("repo");
    spec.mutable_limits()->mutable_deadline()->set_seconds(120);
    if (pause) spec.add_pause_points(rein::v1::AFTER_PLAN);
    return spec;
  }

  // The outbox as router `i` answers ListNotifications (no tokens: every namespace).
  std::vector<rein::v1::Notice> Outbox(int i) {
    rein::v1::ListNotificationsRequest request;
    request.set_page_size(1000);
    rein::v1::ListNotificationsResponse reply;
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
    grpc::Status status = fleet_->stub(i)->ListNotifications(&context, request, &reply);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return {reply.notices().begin(), reply.notices().end()};
  }

  // Waits until every id in `expected` has arrived (or `timeout`); the count of each id
  // received, every one checked for a valid signature.
  std::map<std::string, int> AwaitAll(const std::set<std::string>& expected,
                                      absl::Duration timeout) {
    const absl::Time end = absl::Now() + timeout;
    std::map<std::string, int> got;
    while (true) {
      got.clear();
      for (const ReceivedWebhook& w : receiver_.received()) {
        EXPECT_TRUE(w.signature_valid) << w.headers.at("webhook-id");
        ++got[w.headers.at("webhook-id")];
      }
      bool all = true;
      for (const std::string& id : expected) all = all && got.count(id) > 0;
      if (all || absl::Now() > end) return got;
      absl::SleepFor(absl::Milliseconds(100));
    }
  }

  WebhookReceiver receiver_{kKey};
  int port_ = 0;
  std::unique_ptr<Fleet> fleet_;
};

TEST_F(WebhooksFleetTest, AKilledRoutersPendingNoticesAreDeliveredByAnotherOnce) {
  Boot();
  // Four runs pause on router 0 while the receiver is down: their notices are router 0's,
  // pending, retried.
  std::set<std::string> expected;
  for (int i = 0; i < 4; ++i) {
    absl::StatusOr<rein::v1::Run> run = fleet_->StartRun(0, Spec(/*pause=*/true));
    ASSERT_TRUE(run.ok()) << run.status();
    absl::StatusOr<rein::v1::Run> paused =
        fleet_->WaitForStage(0, run->run_id(), rein::v1::PAUSED, absl::Seconds(30));
    ASSERT_TRUE(paused.ok()) << paused.status();
    ASSERT_EQ(paused->state().stage(), rein::v1::PAUSED) << fleet_->Logs();
  }
  absl::SleepFor(absl::Milliseconds(500));  // an attempt or two fail meanwhile
  for (const rein::v1::Notice& n : Outbox(1)) {
    EXPECT_EQ(n.status(), rein::v1::NOTICE_PENDING) << n.notice_id();
    EXPECT_EQ(n.type(), "dev.rein.run.paused");
    expected.insert(n.notice_id());
  }
  ASSERT_EQ(expected.size(), 4u);

  fleet_->router(0)->Kill(SIGKILL);
  ASSERT_GE(fleet_->router(0)->Wait(absl::Seconds(10)), 0);
  ASSERT_TRUE(receiver_.Start(port_).ok());
  // Router 0's lease lapses (2s); a live router takes its notices over and sends them.
  const std::map<std::string, int> got = AwaitAll(expected, absl::Seconds(60));
  absl::SleepFor(absl::Seconds(2));  // a second delivery, were there one, would show now
  for (const ReceivedWebhook& w : receiver_.received()) {
    EXPECT_EQ(expected.count(w.headers.at("webhook-id")), 1u) << w.headers.at("webhook-id");
  }
  for (const std::string& id : expected) {
    // Nothing reached the receiver before the crash (it was down), so nothing is sent twice.
    EXPECT_EQ(got.count(id) ? got.at(id) : 0, 1) << id << "\n" << fleet_->Logs();
  }
  for (const rein::v1::Notice& n : Outbox(2)) {
    EXPECT_EQ(n.status(), rein::v1::NOTICE_DELIVERED) << n.notice_id();
  }
}

// The receiver is down for a full minute while runs on all three routers pause and end; the
// routers keep retrying (with --webhook_max_backoff=3s, so the wait after it is back is
// short), and when it is back it gets every notice, once each.
TEST_F(WebhooksFleetTest, AReceiverDownForAMinuteGetsEverythingWhenItIsBack) {
  Boot();
  const absl::Time down_since = absl::Now();
  std::vector<std::pair<int, std::string>> runs;
  for (int i = 0; i < 9; ++i) {
    absl::StatusOr<rein::v1::Run> run = fleet_->StartRun(i % 3, Spec(/*pause=*/i % 3 == 0));
    ASSERT_TRUE(run.ok()) << run.status();
    runs.emplace_back(i % 3, run->run_id());
  }
  for (const auto& [router, id] : runs) {
    absl::StatusOr<rein::v1::Run> run =
        fleet_->WaitForStage(router, id, rein::v1::PAUSED, absl::Seconds(60));
    ASSERT_TRUE(run.ok()) << run.status();
  }
  std::set<std::string> expected;
  const absl::Time settled = absl::Now() + absl::Seconds(10);
  while (expected.size() < runs.size() && absl::Now() < settled) {  // every pause or end
    expected.clear();
    for (const rein::v1::Notice& n : Outbox(1)) expected.insert(n.notice_id());
    absl::SleepFor(absl::Milliseconds(100));
  }
  ASSERT_EQ(expected.size(), runs.size()) << fleet_->Logs();
  absl::SleepFor(down_since + absl::Minutes(1) - absl::Now());
  int retried = 0;
  for (const rein::v1::Notice& n : Outbox(2)) {
    EXPECT_EQ(n.status(), rein::v1::NOTICE_PENDING) << n.notice_id();
    EXPECT_NE(n.last_error().find("127.0.0.1"), std::string::npos) << n.last_error();
    retried += n.attempts() >= 3 ? 1 : 0;
  }
  EXPECT_EQ(retried, static_cast<int>(runs.size())) << "every notice kept being retried";

  ASSERT_TRUE(receiver_.Start(port_).ok());
  const std::map<std::string, int> got = AwaitAll(expected, absl::Seconds(30));
  absl::SleepFor(absl::Seconds(1));
  for (const std::string& id : expected) {
    EXPECT_EQ(got.count(id) ? got.at(id) : 0, 1) << id << "\n" << fleet_->Logs();
  }
  EXPECT_EQ(receiver_.received().size(), expected.size());
}

}  // namespace
}  // namespace rein::testing
