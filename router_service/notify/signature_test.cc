// Tests of the Standard Webhooks signature.
#include "router_service/notify/signature.h"

#include <string>

#include "absl/strings/escaping.h"
#include "gtest/gtest.h"

namespace rein {
namespace {

TEST(WebhookSignatureTest, MatchesTheStandardWebhooksReferenceVector) {
  // The reference libraries' test vector (standard-webhooks, webhook_test): secret
  // whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw, id msg_p5jXN8AQM9LWM0D4loKWxJek, timestamp
  // 1614265330, body {"test": 2432232314}.
  std::string key;
  ASSERT_TRUE(absl::Base64Unescape("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", &key));
  EXPECT_EQ(
      WebhookSignature(key, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, R"({"test": 2432232314})"),
      "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
}

TEST(WebhookSignatureTest, VerifyAcceptsItsOwnAndRejectsTampering) {
  const std::string sig = WebhookSignature("key", "run-1.2", 1700000000, "{}");
  EXPECT_TRUE(VerifyWebhookSignature("key", "run-1.2", "1700000000", "{}", sig));
  EXPECT_TRUE(VerifyWebhookSignature("key", "run-1.2", "1700000000", "{}",
                                     "v1,AAAA " + sig));  // one of several
  EXPECT_FALSE(VerifyWebhookSignature("key", "run-1.2", "1700000000", "{ }", sig));
  EXPECT_FALSE(VerifyWebhookSignature("key", "run-1.3", "1700000000", "{}", sig));
  EXPECT_FALSE(VerifyWebhookSignature("key", "run-1.2", "1700000001", "{}", sig));
  EXPECT_FALSE(VerifyWebhookSignature("other", "run-1.2", "1700000000", "{}", sig));
  EXPECT_FALSE(VerifyWebhookSignature("key", "run-1.2", "1700000000", "{}", ""));
  EXPECT_FALSE(VerifyWebhookSignature("key", "run-1.2", "1700000000", "{}", "v2," + sig.substr(3)));
}

}  // namespace
}  // namespace rein
