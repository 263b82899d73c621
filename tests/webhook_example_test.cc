// The example receiver (examples/webhook_to_chat/receiver.py) against the router's own signer
// and transport, with a stand-in for the chat's incoming webhook.
#include <signal.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "router_service/notify/signature.h"
#include "router_service/notify/testing/webhook_receiver.h"
#include "router_service/notify/webhook_transport.h"
#include "tests/cluster.h"

namespace rein::testing {
namespace {

class WebhookExampleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(chat_.Start().ok());
    const std::string dir = getenv("TEST_TMPDIR") ? getenv("TEST_TMPDIR") : "/tmp";
    const std::string key_file = dir + "/example.key";
    std::ofstream(key_file) << "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\n";
    port_ = FreePort();
    receiver_ = std::make_unique<Process>(
        "receiver",
        std::vector<std::string>{"/usr/bin/python3", "examples/webhook_to_chat/receiver.py",
                                 "--port", std::to_string(port_), "--secret_file", key_file,
                                 "--chat_url", chat_.url("/chat")},
        dir + "/receiver.log");
    ASSERT_TRUE(receiver_->Start());
    // Up when it answers (an unsigned POST gets 401).
    for (int i = 0; i < 100; ++i) {
      if (Post("x", "{}", false).status == 401) return;
      absl::SleepFor(absl::Milliseconds(100));
    }
    FAIL() << "the example receiver did not start: " << ReadFile(receiver_->log_path());
  }
  void TearDown() override {
    if (receiver_ != nullptr) {
      receiver_->Kill(SIGTERM);
      receiver_->Wait(absl::Seconds(10));  // then SIGKILLed by ~Process
    }
  }

  WebhookReply Post(const std::string& id, const std::string& body, bool sign) {
    WebhookRequest request;
    request.url = absl::StrCat("http://127.0.0.1:", port_, "/rein");
    request.body = body;
    request.timeout = absl::Seconds(5);
    const int64_t ts = absl::ToUnixSeconds(absl::Now());
    request.headers = {{"Content-Type", "application/cloudevents+json"},
                       {"webhook-id", id},
                       {"webhook-timestamp", absl::StrCat(ts)}};
    std::string key;
    absl::Base64Unescape("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", &key);
    request.headers.emplace_back("webhook-signature",
                                 sign ? WebhookSignature(key, id, ts, body) : "v1,AAAA");
    return transport_.Post(request);
  }

  WebhookReceiver chat_{""};
  CurlWebhookTransport transport_;
  int port_ = 0;
  std::unique_ptr<Process> receiver_;
};

constexpr char kPaused[] = R"({"specversion":"1.0","id":"run-1.4","type":"dev.rein.run.paused",
  "subject":"run-1","data":{"goal":"fix the tests","pause":{"reason":"NEED_HUMAN",
  "question":"which file?"},"console_url":"https://console.example/runs/run-1"}})";

TEST_F(WebhookExampleTest, ASignedNoticeBecomesOneChatMessageWithTheConsoleLink) {
  EXPECT_EQ(Post("run-1.4", kPaused, true).status, 204);
  ASSERT_EQ(chat_.received().size(), 1u);
  const nlohmann::json message = nlohmann::json::parse(chat_.received()[0].body);
  const std::string text = message["text"];
  EXPECT_NE(text.find("Run run-1 is waiting for you"), std::string::npos) << text;
  EXPECT_NE(text.find("which file?"), std::string::npos) << text;
  EXPECT_NE(text.find("https://console.example/runs/run-1"), std::string::npos) << text;
  // A retry of the same notice (same webhook-id) is answered but not posted again.
  EXPECT_EQ(Post("run-1.4", kPaused, true).status, 204);
  EXPECT_EQ(chat_.received().size(), 1u);
}

TEST_F(WebhookExampleTest, AForgedNoticeIsRefused) {
  EXPECT_EQ(Post("run-1.4", kPaused, false).status, 401);
  EXPECT_TRUE(chat_.received().empty());
}

}  // namespace
}  // namespace rein::testing
