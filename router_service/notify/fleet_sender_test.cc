// Two routers' NotificationSenders on one PostgreSQL outbox: each notice is sent by its one
// live owner, and a router whose lease ended has its notices taken over by the other.
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "gtest/gtest.h"
#include "rein/v1/types.pb.h"
#include "router_service/notify/notification_sender.h"
#include "router_service/notify/testing/webhook_receiver.h"
#include "router_service/notify/webhook_config.h"
#include "router_service/notify/webhook_transport.h"
#include "router_service/store/postgres_run_store.h"
#include "router_service/store/testing/postgres_server.h"

namespace rein {
namespace {

using testing::ReceivedWebhook;
using testing::WebhookReceiver;

constexpr char kKey[] = "fleet-key";

class FleetSenderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<PostgresServer>> server = PostgresServer::Start();
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    absl::StatusOr<std::string> url = server_->CreateDatabase();
    ASSERT_TRUE(url.ok()) << url.status();
    url_ = *url;
    ASSERT_TRUE(receiver_.Start().ok());
    config_ = std::make_unique<WebhookConfig>(
        std::vector<WebhookEndpoint>{{receiver_.url(), kKey, {}, ""}},
        std::vector<WebhookEndpoint>{}, "");
  }

  std::unique_ptr<PostgresRunStore> Router(const std::string& id, absl::Duration ttl) {
    absl::StatusOr<std::unique_ptr<PostgresRunStore>> store = PostgresRunStore::Open(url_);
    EXPECT_TRUE(store.ok()) << store.status();
    if (!store.ok()) return nullptr;
    EXPECT_TRUE((*store)->JoinFleet(id, ttl).ok());
    return *std::move(store);
  }

  std::unique_ptr<NotificationSender> Sender(PostgresRunStore* store) {
    NotificationSenderOptions options;
    options.concurrency = 3;
    options.poll_interval = absl::Milliseconds(20);
    options.request_timeout = absl::Seconds(2);
    return std::make_unique<NotificationSender>(store, store, config_.get(), &transport_,
                                                RealClock(), options);
  }

  // Run `id`, owned by `owner`, committed paused through `store`.
  static void PauseRun(PostgresRunStore* store, const std::string& owner, const std::string& id) {
    rein::v1::Run run;
    run.set_run_id(id);
    run.set_owner(owner);
    run.mutable_spec()->set_goal("g");
    run.mutable_state()->set_stage(rein::v1::PLANNING);
    run.mutable_state()->set_version(1);
    run.mutable_created_at()->set_seconds(absl::ToUnixSeconds(absl::Now()));
    *run.mutable_updated_at() = run.created_at();
    ASSERT_TRUE(store->CreateRun(run, {}).ok());
    rein::v1::RunState paused = run.state();
    paused.set_version(2);
    paused.set_stage(rein::v1::PAUSED);
    rein::v1::RunEvent event;
    event.mutable_paused()->mutable_pause()->set_reason(rein::v1::NEED_HUMAN);
    absl::StatusOr<std::vector<rein::v1::RunEvent>> committed =
        store->CommitOwned(id, 1, 1, paused, {event}, std::nullopt, absl::Now());
    ASSERT_TRUE(committed.ok()) << committed.status();
  }

  std::map<std::string, int> Counts() {
    std::map<std::string, int> counts;
    for (const ReceivedWebhook& w : receiver_.received()) {
      EXPECT_TRUE(w.signature_valid);
      ++counts[w.headers.at("webhook-id")];
    }
    return counts;
  }

  std::unique_ptr<PostgresServer> server_;
  std::string url_;
  WebhookReceiver receiver_{kKey};
  CurlWebhookTransport transport_;
  std::unique_ptr<WebhookConfig> config_;
};

TEST_F(FleetSenderTest, EachNoticeIsSentOnceByItsOwnerWhileBothLive) {
  std::unique_ptr<PostgresRunStore> a = Router("router-a", absl::Seconds(30));
  std::unique_ptr<PostgresRunStore> b = Router("router-b", absl::Seconds(30));
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  for (int i = 0; i < 10; ++i) PauseRun(a.get(), "router-a", absl::StrCat("a-", i));
  for (int i = 0; i < 10; ++i) PauseRun(b.get(), "router-b", absl::StrCat("b-", i));
  std::unique_ptr<NotificationSender> sa = Sender(a.get());
  std::unique_ptr<NotificationSender> sb = Sender(b.get());
  sa->Start();
  sb->Start();
  ASSERT_TRUE(receiver_.AwaitCount(20, absl::Seconds(30)));
  absl::SleepFor(absl::Milliseconds(500));  // room for a duplicate, were there one
  sa->Stop();
  sb->Stop();
  const std::map<std::string, int> counts = Counts();
  EXPECT_EQ(counts.size(), 20u);
  for (const auto& [id, n] : counts) EXPECT_EQ(n, 1) << id;
  absl::StatusOr<NotificationCounts> outbox = a->CountNotifications();
  ASSERT_TRUE(outbox.ok());
  EXPECT_EQ(outbox->delivered, 20);
  EXPECT_EQ(outbox->pending, 0);
}

TEST_F(FleetSenderTest, ADeadRoutersNoticesAreDeliveredByTheOther) {
  std::unique_ptr<PostgresRunStore> a = Router("router-a", absl::Milliseconds(500));
  std::unique_ptr<PostgresRunStore> b = Router("router-b", absl::Seconds(30));
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  for (int i = 0; i < 10; ++i) PauseRun(a.get(), "router-a", absl::StrCat("a-", i));
  // router-a dies before sending anything: it never renews, its lease runs out.
  std::unique_ptr<NotificationSender> sb = Sender(b.get());
  sb->Start();
  absl::SleepFor(absl::Milliseconds(200));
  EXPECT_TRUE(receiver_.received().empty());  // router-a's lease still holds them
  ASSERT_TRUE(receiver_.AwaitCount(10, absl::Seconds(30)));
  absl::SleepFor(absl::Milliseconds(300));
  sb->Stop();
  const std::map<std::string, int> counts = Counts();
  EXPECT_EQ(counts.size(), 10u);
  for (const auto& [id, n] : counts) EXPECT_EQ(n, 1) << id;
  absl::StatusOr<std::vector<Notification>> notices =
      b->ListNotifications(NotificationStatus::kDelivered, /*any=*/false, "", 100);
  ASSERT_TRUE(notices.ok());
  ASSERT_EQ(notices->size(), 10u);
  for (const Notification& n : *notices) {
    EXPECT_EQ(n.owner, "router-b");
    EXPECT_EQ(n.lease_epoch, 2);  // taken over once
  }
}

}  // namespace
}  // namespace rein
