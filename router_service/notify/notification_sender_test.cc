// Tests of NotificationSender against a real SQLite outbox and real HTTP receivers on loopback.
#include "router_service/notify/notification_sender.h"

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "common/testing/fake_clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "rein/v1/types.pb.h"
#include "router_service/notify/testing/webhook_receiver.h"
#include "router_service/notify/webhook_config.h"
#include "router_service/notify/webhook_transport.h"
#include "router_service/store/sqlite_run_store.h"

namespace rein {
namespace {

using ::testing::HasSubstr;
using testing::ReceivedWebhook;
using testing::ReceiverReply;
using ::testing::SizeIs;
using testing::WebhookReceiver;

constexpr char kKey[] = "test-key";

// The receiver's reply with `status` and, when given, its headers, body and delay.
ReceiverReply Reply(int status, std::map<std::string, std::string> headers = {},
                    std::string body = "", absl::Duration delay = absl::ZeroDuration()) {
  return ReceiverReply{status, std::move(headers), std::move(body), delay};
}

// Posts to URLs starting with `hang_url` wait until Release() (or their timeout), counting how
// many are in flight at once; the others go to `real`.
class HangingTransport final : public WebhookTransport {
 public:
  HangingTransport(WebhookTransport* real, std::string hang_url)
      : real_(real), hang_url_(std::move(hang_url)) {}

  WebhookReply Post(const WebhookRequest& request) override {
    if (!absl::StartsWith(request.url, hang_url_)) return real_->Post(request);
    absl::MutexLock lock(&mu_);
    max_in_flight_ = std::max(max_in_flight_, ++in_flight_);
    const bool released = mu_.AwaitWithTimeout(absl::Condition(&released_), request.timeout);
    --in_flight_;
    if (!released) return WebhookReply{0, "timed out", std::nullopt};
    for (const auto& [name, value] : request.headers) {
      if (name == "webhook-id") taken_.push_back(value);
    }
    return WebhookReply{204, "", std::nullopt};
  }

  void Release() {
    absl::MutexLock lock(&mu_);
    released_ = true;
  }
  int max_in_flight() {
    absl::MutexLock lock(&mu_);
    return max_in_flight_;
  }
  std::vector<std::string> taken() {
    absl::MutexLock lock(&mu_);
    return taken_;
  }

 private:
  WebhookTransport* const real_;
  const std::string hang_url_;
  absl::Mutex mu_;
  bool released_ ABSL_GUARDED_BY(mu_) = false;
  int in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  int max_in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::string> taken_ ABSL_GUARDED_BY(mu_);
};

class NotificationSenderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = absl::StrCat(::testing::TempDir(), "/outbox-",
                         ::testing::UnitTest::GetInstance()->current_test_info()->name(), ".db");
    std::remove(path_.c_str());
    absl::StatusOr<std::unique_ptr<SqliteRunStore>> store = SqliteRunStore::Open(path_);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
    ASSERT_TRUE(store_->JoinFleet("router-1", absl::Seconds(10)).ok());
    ASSERT_TRUE(receiver_.Start().ok());
    options_.initial_backoff = absl::Milliseconds(40);
    options_.max_backoff = absl::Milliseconds(200);
    options_.request_timeout = absl::Seconds(2);
  }

  void Configure(const std::string& url) {
    config_ =
        std::make_unique<WebhookConfig>(std::vector<WebhookEndpoint>{{url, kKey, {}, ""}},
                                        std::vector<WebhookEndpoint>{}, "https://console.example");
    sender_ = std::make_unique<NotificationSender>(store_.get(), store_.get(), config_.get(),
                                                   &transport_, RealClock(), options_);
  }

  // Creates run `id` (started by alice, telling `notify` too when given) and commits its pause,
  // as the engine would.
  void PauseRun(const std::string& id, const std::string& notify = "") {
    rein::v1::RunEvent event;
    *event.mutable_time() = Now();
    event.mutable_paused()->mutable_pause()->set_reason(rein::v1::NEED_HUMAN);
    event.mutable_paused()->mutable_pause()->set_question("which file?");
    CreateAndCommit(id, rein::v1::PAUSED, event, notify);
  }

  // Creates run `id` and commits its end (goal achieved).
  void FinishRun(const std::string& id) {
    rein::v1::RunEvent event;
    *event.mutable_time() = Now();
    event.mutable_finished()->mutable_outcome()->set_status(rein::v1::FINISHED);
    event.mutable_finished()->mutable_outcome()->set_reason(rein::v1::GOAL_ACHIEVED);
    CreateAndCommit(id, rein::v1::FINISHED, event);
  }

  void CreateAndCommit(const std::string& id, rein::v1::Stage stage,
                       const rein::v1::RunEvent& event, const std::string& notify = "") {
    rein::v1::Run run;
    run.set_run_id(id);
    run.mutable_spec()->set_goal("fix the tests");
    if (!notify.empty()) run.mutable_spec()->add_notify(notify);
    run.mutable_state()->set_stage(rein::v1::PLANNING);
    run.mutable_state()->set_version(1);
    *run.mutable_created_at() = Now();
    *run.mutable_updated_at() = Now();
    rein::v1::RunEvent started;
    started.set_principal("alice");
    started.mutable_stage_changed()->set_to(rein::v1::PLANNING);
    ASSERT_TRUE(store_->CreateRun(run, {started}).ok());
    rein::v1::RunState next = run.state();
    next.set_version(2);
    next.set_stage(stage);
    ASSERT_TRUE(store_->Commit(id, 1, next, {event}, std::nullopt, absl::Now()).ok());
  }

  static google::protobuf::Timestamp Now() {
    google::protobuf::Timestamp ts;
    ts.set_seconds(absl::ToUnixSeconds(absl::Now()));
    return ts;
  }

  Notification Notice(const std::string& id) {
    absl::StatusOr<std::vector<Notification>> all =
        store_->ListNotifications(NotificationStatus::kPending, /*any=*/true, "", 100);
    EXPECT_TRUE(all.ok()) << all.status();
    for (Notification& n : *all) {
      if (n.notice_id == id) return n;
    }
    ADD_FAILURE() << "no notice " << id;
    return {};
  }

  // Four threads, two POSTs per host, quick polls, and POSTs that hang for as long as a test
  // holds them.
  void UseHangingOptions() {
    options_.concurrency = 4;
    options_.per_endpoint = 2;
    options_.poll_interval = absl::Milliseconds(20);
    options_.endpoint_busy_delay = absl::Milliseconds(100);
    options_.request_timeout = absl::Seconds(60);  // it hangs for as long as the test holds it
  }

  // SendOne until the notice leaves kPending or `timeout` passes.
  void SendUntilSettled(const std::string& id, absl::Duration timeout) {
    const absl::Time end = absl::Now() + timeout;
    while (absl::Now() < end && Notice(id).status == NotificationStatus::kPending) {
      ASSERT_TRUE(sender_->SendOne().ok());
      absl::SleepFor(absl::Milliseconds(10));
    }
  }

  std::string path_;
  std::unique_ptr<SqliteRunStore> store_;
  WebhookReceiver receiver_{kKey};
  CurlWebhookTransport transport_;
  NotificationSenderOptions options_;
  std::unique_ptr<WebhookConfig> config_;
  std::unique_ptr<NotificationSender> sender_;
};

TEST_F(NotificationSenderTest, APauseIsPostedSignedAsACloudEventAndMarkedDelivered) {
  Configure(receiver_.url());
  PauseRun("run-1");
  absl::StatusOr<bool> sent = sender_->SendOne();
  ASSERT_TRUE(sent.ok()) << sent.status();
  EXPECT_TRUE(*sent);
  std::vector<ReceivedWebhook> got = receiver_.received();
  ASSERT_THAT(got, SizeIs(1));
  EXPECT_TRUE(got[0].signature_valid);
  EXPECT_EQ(got[0].headers["webhook-id"], "run-1.2");
  EXPECT_EQ(got[0].headers["content-type"], "application/cloudevents+json");
  const int64_t timestamp = std::stoll(got[0].headers["webhook-timestamp"]);
  EXPECT_LE(std::abs(timestamp - absl::ToUnixSeconds(absl::Now())), 5);
  const nlohmann::json body = nlohmann::json::parse(got[0].body);
  EXPECT_EQ(body["type"], "dev.rein.run.paused");
  EXPECT_EQ(body["subject"], "run-1");
  EXPECT_EQ(body["data"]["pause"]["question"], "which file?");
  EXPECT_EQ(body["data"]["owner"], "alice");
  EXPECT_EQ(body["data"]["console_url"], "https://console.example/#/run/run-1");
  EXPECT_EQ(Notice("run-1.2").status, NotificationStatus::kDelivered);
  // Nothing more to send.
  sent = sender_->SendOne();
  ASSERT_TRUE(sent.ok());
  EXPECT_FALSE(*sent);
  EXPECT_THAT(receiver_.received(), SizeIs(1));
}

TEST_F(NotificationSenderTest, AFailingReceiverGetsRetriesWithBackoffUnderOneWebhookId) {
  Configure(receiver_.url());
  receiver_.Enqueue(Reply(500));
  receiver_.Enqueue(Reply(503));
  PauseRun("run-1");
  SendUntilSettled("run-1.2", absl::Seconds(10));
  const Notification n = Notice("run-1.2");
  EXPECT_EQ(n.status, NotificationStatus::kDelivered);
  EXPECT_EQ(n.attempts, 3);
  std::vector<ReceivedWebhook> got = receiver_.received();
  ASSERT_THAT(got, SizeIs(3));
  for (const ReceivedWebhook& w : got) {
    EXPECT_EQ(w.headers.at("webhook-id"), "run-1.2");
    EXPECT_TRUE(w.signature_valid);
    EXPECT_EQ(w.body, got[0].body);  // one body for every attempt
  }
  // Backoff: at least half of 40 ms, then of 80 ms (jitter draws from [half, all]).
  EXPECT_GE(got[1].received - got[0].received, absl::Milliseconds(20));
  EXPECT_GE(got[2].received - got[1].received, absl::Milliseconds(40));
}

TEST_F(NotificationSenderTest, AReceiverThatIsDownThenUpGetsTheNotice) {
  Configure(receiver_.url());
  const int port = receiver_.port();
  receiver_.Stop();
  PauseRun("run-1");
  ASSERT_TRUE(sender_->SendOne().ok());
  Notification n = Notice("run-1.2");
  EXPECT_EQ(n.status, NotificationStatus::kPending);
  EXPECT_EQ(n.attempts, 1);
  EXPECT_THAT(n.last_error, HasSubstr("127.0.0.1"));
  ASSERT_TRUE(receiver_.Start(port).ok());
  SendUntilSettled("run-1.2", absl::Seconds(10));
  EXPECT_EQ(Notice("run-1.2").status, NotificationStatus::kDelivered);
  ASSERT_THAT(receiver_.received(), SizeIs(1));
  EXPECT_TRUE(receiver_.received()[0].signature_valid);
}

TEST_F(NotificationSenderTest, RetriesGiveUpAfterTheRetryPeriod) {
  options_.retry_for = absl::Milliseconds(300);
  Configure(receiver_.url());
  for (int i = 0; i < 100; ++i) receiver_.Enqueue(Reply(500));
  PauseRun("run-1");
  SendUntilSettled("run-1.2", absl::Seconds(10));
  const Notification n = Notice("run-1.2");
  EXPECT_EQ(n.status, NotificationStatus::kFailed);
  EXPECT_THAT(n.last_error, HasSubstr("HTTP 500"));
  EXPECT_GE(n.attempts, 2);
  // Given up: never sent again.
  const size_t count = receiver_.received().size();
  ASSERT_TRUE(sender_->SendOne().ok());
  EXPECT_EQ(receiver_.received().size(), count);
  absl::StatusOr<NotificationCounts> counts = store_->CountNotifications();
  ASSERT_TRUE(counts.ok());
  EXPECT_EQ(counts->failed, 1);
}

TEST_F(NotificationSenderTest, ARedirectIsNotFollowedAndAHugeReplyIsCutShort) {
  WebhookReceiver elsewhere(kKey);
  ASSERT_TRUE(elsewhere.Start().ok());
  Configure(receiver_.url());
  receiver_.Enqueue(Reply(302, {{"Location", elsewhere.url()}}));
  receiver_.Enqueue(Reply(200, {}, std::string(10 << 20, 'x')));
  PauseRun("run-1");
  ASSERT_TRUE(sender_->SendOne().ok());
  EXPECT_EQ(Notice("run-1.2").status, NotificationStatus::kPending);
  EXPECT_THAT(Notice("run-1.2").last_error, HasSubstr("HTTP 302"));
  SendUntilSettled("run-1.2", absl::Seconds(10));
  EXPECT_EQ(Notice("run-1.2").status, NotificationStatus::kDelivered);
  EXPECT_THAT(elsewhere.received(), SizeIs(0));
}

TEST_F(NotificationSenderTest, AHangingReceiverCostsOneTimeoutPerAttempt) {
  options_.request_timeout = absl::Milliseconds(300);
  Configure(receiver_.url());
  receiver_.Enqueue(Reply(200, {}, "", absl::Seconds(3)));
  PauseRun("run-1");
  const absl::Time start = absl::Now();
  ASSERT_TRUE(sender_->SendOne().ok());
  EXPECT_LT(absl::Now() - start, absl::Seconds(2));
  EXPECT_EQ(Notice("run-1.2").status, NotificationStatus::kPending);
}

TEST_F(NotificationSenderTest, A410DisablesTheEndpointAndSettlesTheNotice) {
  Configure(receiver_.url());
  receiver_.Enqueue(Reply(410));
  PauseRun("run-1");
  PauseRun("run-2");
  ASSERT_TRUE(sender_->SendOne().ok());
  ASSERT_TRUE(sender_->SendOne().ok());
  EXPECT_EQ(Notice("run-1.2").status, NotificationStatus::kDelivered);
  EXPECT_EQ(Notice("run-2.2").status, NotificationStatus::kDelivered);
  EXPECT_THAT(receiver_.received(), SizeIs(1));  // the second was not posted
}

TEST_F(NotificationSenderTest, TheSendersThreadsDeliverEveryNoticeOnce) {
  options_.concurrency = 4;
  options_.poll_interval = absl::Milliseconds(20);
  Configure(receiver_.url());
  for (int i = 0; i < 20; ++i) PauseRun(absl::StrCat("run-", i));
  sender_->Start();
  ASSERT_TRUE(receiver_.AwaitCount(20, absl::Seconds(20)));
  absl::SleepFor(absl::Milliseconds(200));
  sender_->Stop();
  std::set<std::string> ids;
  for (const ReceivedWebhook& w : receiver_.received()) {
    EXPECT_TRUE(w.signature_valid);
    ids.insert(w.headers.at("webhook-id"));
  }
  EXPECT_EQ(ids.size(), 20u);
  EXPECT_THAT(receiver_.received(), SizeIs(20));
}

// A hanging receiver holds at most per_endpoint of the sender's threads; the other endpoint's
// notices go out meanwhile, and the hanging one's wait in the outbox (pending, durable), not in
// memory, until it answers: then each is taken once.
TEST_F(NotificationSenderTest, AHangingEndpointHoldsAtMostItsShareAndItsBacklogStaysInTheOutbox) {
  UseHangingOptions();
  const std::string hang = "http://127.0.0.1:9/hang";
  HangingTransport transport(&transport_, hang);
  config_ = std::make_unique<WebhookConfig>(
      std::vector<WebhookEndpoint>{{hang, kKey, {kTypePaused}, ""},
                                   {receiver_.url(), kKey, {kTypeFinished}, ""}},
      std::vector<WebhookEndpoint>{}, "");
  sender_ = std::make_unique<NotificationSender>(store_.get(), store_.get(), config_.get(),
                                                 &transport, RealClock(), options_);
  constexpr int kHanging = 60;
  constexpr int kHealthy = 10;
  for (int i = 0; i < kHanging; ++i) PauseRun(absl::StrCat("paused-", i));
  for (int i = 0; i < kHealthy; ++i) FinishRun(absl::StrCat("finished-", i));
  sender_->Start();
  ASSERT_TRUE(receiver_.AwaitCount(kHealthy, absl::Seconds(30)));
  absl::SleepFor(absl::Milliseconds(300));  // busy deferrals come round a few times
  EXPECT_EQ(transport.max_in_flight(), 2);
  absl::StatusOr<NotificationCounts> counts = store_->CountNotifications();
  ASSERT_TRUE(counts.ok()) << counts.status();
  EXPECT_EQ(counts->delivered, kHealthy);
  EXPECT_EQ(counts->pending, kHanging);
  // The list outlives the loop (a range over *<temporary StatusOr> would dangle).
  absl::StatusOr<std::vector<Notification>> pending =
      store_->ListNotifications(NotificationStatus::kPending, /*any=*/false, "", 100);
  ASSERT_TRUE(pending.ok()) << pending.status();
  for (const Notification& n : *pending) {
    EXPECT_LE(n.attempts, 1) << n.notice_id << ": waiting for a busy endpoint is no attempt";
  }

  transport.Release();
  const absl::Time end = absl::Now() + absl::Seconds(60);
  while (absl::Now() < end && store_->CountNotifications()->delivered < kHanging + kHealthy) {
    absl::SleepFor(absl::Milliseconds(50));
  }
  sender_->Stop();
  EXPECT_EQ(store_->CountNotifications()->delivered, kHanging + kHealthy);
  EXPECT_LE(transport.max_in_flight(), 2);
  const std::vector<std::string> taken = transport.taken();
  EXPECT_EQ(taken.size(), static_cast<size_t>(kHanging));
  EXPECT_EQ(std::set<std::string>(taken.begin(), taken.end()).size(),
            static_cast<size_t>(kHanging));
  EXPECT_THAT(receiver_.received(), SizeIs(kHealthy));
}

// Slots are per host, not per URL: four runs naming four URLs of one hanging host hold two of
// the four threads, not all of them, and another receiver still gets its notice at once.
TEST_F(NotificationSenderTest, ManyUrlsOfOneHangingHostHoldOnlyThatHostsShare) {
  UseHangingOptions();
  const std::string hang = "http://127.0.0.1:9/hang";
  HangingTransport transport(&transport_, hang);
  config_ = std::make_unique<WebhookConfig>(
      std::vector<WebhookEndpoint>{{receiver_.url(), kKey, {kTypeFinished}, ""}},
      std::vector<WebhookEndpoint>{{hang, kKey, {}, ""}}, "");
  sender_ = std::make_unique<NotificationSender>(store_.get(), store_.get(), config_.get(),
                                                 &transport, RealClock(), options_);
  for (int i = 0; i < 4; ++i) PauseRun(absl::StrCat("paused-", i), absl::StrCat(hang, "/", i));
  sender_->Start();
  absl::SleepFor(absl::Milliseconds(500));  // the hanging POSTs take what they may
  const absl::Time finished = absl::Now();
  FinishRun("finished-0");
  EXPECT_TRUE(receiver_.AwaitCount(1, absl::Seconds(5)));
  EXPECT_LT(absl::Now() - finished, absl::Seconds(5));
  EXPECT_EQ(transport.max_in_flight(), 2);
  transport.Release();
  const absl::Time end = absl::Now() + absl::Seconds(30);
  while (absl::Now() < end && store_->CountNotifications()->delivered < 5) {
    absl::SleepFor(absl::Milliseconds(50));
  }
  sender_->Stop();
  EXPECT_EQ(store_->CountNotifications()->delivered, 5);
  EXPECT_EQ(transport.taken().size(), 4u);
}

// Posts that each take the whole timeout (on a fake clock): a notice with many endpoints is
// held for all of them, so it is never claimed again (and sent twice) while being sent.
class SlowTransport final : public WebhookTransport {
 public:
  SlowTransport(FakeClock* clock, NotificationOutbox* outbox) : clock_(clock), outbox_(outbox) {}
  WebhookReply Post(const WebhookRequest& request) override {
    clock_->Advance(request.timeout);
    ++posts;
    // Another sender looking now must find nothing due.
    absl::StatusOr<std::vector<Notification>> again =
        outbox_->ClaimNotifications(clock_->Now(), clock_->Now() + absl::Seconds(1), 1);
    if (again.ok() && !again->empty()) ++claimed_meanwhile;
    return WebhookReply{204, "", std::nullopt};
  }
  int posts = 0;
  int claimed_meanwhile = 0;

 private:
  FakeClock* const clock_;
  NotificationOutbox* const outbox_;
};

TEST_F(NotificationSenderTest, ANoticeWithManyEndpointsIsHeldUntilAllAreSent) {
  FakeClock clock(absl::Now() + absl::Seconds(1));  // the notice, committed now, is due
  SlowTransport transport(&clock, store_.get());
  std::vector<WebhookEndpoint> endpoints;
  for (int i = 0; i < 12; ++i) {
    endpoints.push_back({absl::StrCat("http://10.0.0.", i, "/hook"), kKey, {}, ""});
  }
  config_ = std::make_unique<WebhookConfig>(endpoints, std::vector<WebhookEndpoint>{}, "");
  sender_ = std::make_unique<NotificationSender>(store_.get(), store_.get(), config_.get(),
                                                 &transport, &clock, options_);
  PauseRun("many");
  absl::StatusOr<bool> sent = sender_->SendOne();
  ASSERT_TRUE(sent.ok()) << sent.status();
  EXPECT_TRUE(*sent);
  EXPECT_EQ(transport.posts, 12);
  EXPECT_EQ(transport.claimed_meanwhile, 0);
  EXPECT_EQ(Notice("many.2").status, NotificationStatus::kDelivered);
}

}  // namespace
}  // namespace rein
