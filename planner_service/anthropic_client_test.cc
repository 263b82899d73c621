// Tests of the Messages API client against a loopback fake: headers, retries, waits,
// deadlines, status mapping and keeping the key secret.
#include "planner_service/anthropic_client.h"

#include <memory>
#include <string>

#include "absl/time/clock.h"
#include "common/testing/fake_clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "planner_service/testing/fake_messages_server.h"

namespace rein {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kKey[] = "sk-ant-test-SECRET-0123456789";
const char kBody[] =
    R"({"model":"claude-test","max_tokens":16,"messages":[{"role":"user","content":"hi"}]})";

class AnthropicClientTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(server_.Start().ok()); }

  std::unique_ptr<AnthropicClient> MakeClient(Clock* clock) {
    AnthropicClientOptions options;
    options.base_url = server_.base_url() + "/";
    options.api_key = kKey;
    options.jitter = [] { return 1.0; };
    auto client = AnthropicClient::Create(std::move(options), clock);
    EXPECT_TRUE(client.ok()) << client.status();
    return *std::move(client);
  }

  FakeMessagesServer server_{kKey};
  FakeClock fake_clock_;
};

TEST_F(AnthropicClientTest, SuccessSendsTheApiHeadersAndReturnsTheMessage) {
  server_.Enqueue(TextReply("hello"));
  auto client = MakeClient(&fake_clock_);
  absl::StatusOr<MessagesReply> reply = client->CreateMessage(kBody, absl::InfiniteFuture());
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(reply->message["type"], "message");
  EXPECT_EQ(reply->message["content"][0]["text"], "hello");
  EXPECT_EQ(reply->attempts, 1);
  EXPECT_THAT(reply->request_id, HasSubstr("req_fake"));
  std::vector<FakeRequest> requests = server_.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].problem, "");
  EXPECT_EQ(requests[0].path, "/v1/messages");
  EXPECT_EQ(requests[0].headers["x-api-key"], kKey);
  EXPECT_EQ(requests[0].headers["anthropic-version"], "2023-06-01");
  EXPECT_EQ(requests[0].headers["content-type"], "application/json");
  EXPECT_EQ(requests[0].headers.count("expect"), 0u);
  EXPECT_EQ(requests[0].body, kBody);
}

TEST_F(AnthropicClientTest, SecondCallReusesTheConnection) {
  server_.Enqueue(TextReply("one"));
  server_.Enqueue(TextReply("two"));
  auto client = MakeClient(&fake_clock_);
  ASSERT_TRUE(client->CreateMessage(kBody, absl::InfiniteFuture()).ok());
  ASSERT_TRUE(client->CreateMessage(kBody, absl::InfiniteFuture()).ok());
  std::vector<FakeRequest> requests = server_.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].connection, requests[1].connection);
}

TEST_F(AnthropicClientTest, RateLimitWithRetryAfterOneSecondWaitsAtLeastThatLong) {
  FakeReply limited = ErrorReply(429, "rate_limit_error", "slow down");
  limited.headers.push_back({"retry-after", "1"});
  server_.Enqueue(limited);
  server_.Enqueue(TextReply("ok"));
  auto client = MakeClient(RealClock());
  absl::StatusOr<MessagesReply> reply =
      client->CreateMessage(kBody, absl::Now() + absl::Seconds(20));
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(reply->attempts, 2);
  std::vector<FakeRequest> requests = server_.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_GE(requests[1].received - requests[0].received, absl::Seconds(1));
}

TEST_F(AnthropicClientTest, OverloadedThenSuccessRetriesAfterHalfASecond) {
  server_.Enqueue(ErrorReply(529, "overloaded_error", "Overloaded"));
  server_.Enqueue(TextReply("ok"));
  auto client = MakeClient(&fake_clock_);
  const absl::Time start = fake_clock_.Now();
  absl::StatusOr<MessagesReply> reply = client->CreateMessage(kBody, absl::InfiniteFuture());
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(server_.requests().size(), 2u);
  EXPECT_THAT(fake_clock_.sleeps(), ::testing::ElementsAre(start + absl::Milliseconds(500)));
}

TEST_F(AnthropicClientTest, ServerErrorThreeTimesMakesThreeRequestsThenFails) {
  for (int i = 0; i < 4; ++i) server_.Enqueue(ErrorReply(500, "api_error", "boom"));
  auto client = MakeClient(&fake_clock_);
  const absl::Time start = fake_clock_.Now();
  absl::StatusOr<MessagesReply> reply = client->CreateMessage(kBody, absl::InfiniteFuture());
  EXPECT_EQ(reply.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(reply.status().message(),
            "Messages API HTTP 500 api_error: boom (request-id req_fakeerror) (after 3 attempts)");
  EXPECT_EQ(server_.requests().size(), 3u);
  EXPECT_THAT(fake_clock_.sleeps(), ::testing::ElementsAre(start + absl::Milliseconds(500),
                                                           start + absl::Milliseconds(1500)));
}

TEST_F(AnthropicClientTest, BackoffUsesJitterAndCapsAtEightSeconds) {
  EXPECT_EQ(RetryDelay(0, {}, absl::UnixEpoch(), 0.75), absl::Milliseconds(375));
  EXPECT_EQ(RetryDelay(1, {}, absl::UnixEpoch(), 1.0), absl::Seconds(1));
  EXPECT_EQ(RetryDelay(4, {}, absl::UnixEpoch(), 1.0), absl::Seconds(8));
  EXPECT_EQ(RetryDelay(9, {}, absl::UnixEpoch(), 1.0), absl::Seconds(8));
}

TEST_F(AnthropicClientTest, ServerWaitHeadersAreHonouredInOrder) {
  const absl::Time now = absl::FromUnixSeconds(1445412480);  // Wed, 21 Oct 2015 07:28:00 GMT
  EXPECT_EQ(RetryDelay(0, {{"retry-after-ms", "1500"}, {"retry-after", "9"}}, now, 1.0),
            absl::Milliseconds(1500));
  EXPECT_EQ(RetryDelay(0, {{"retry-after", "2.5"}}, now, 1.0), absl::Milliseconds(2500));
  EXPECT_EQ(RetryDelay(0, {{"retry-after", "Wed, 21 Oct 2015 07:28:07 GMT"}}, now, 1.0),
            absl::Seconds(7));
  // Outside (0, 60] seconds or unparsable: the backoff.
  EXPECT_EQ(RetryDelay(0, {{"retry-after", "120"}}, now, 1.0), absl::Milliseconds(500));
  EXPECT_EQ(RetryDelay(0, {{"retry-after", "0"}}, now, 1.0), absl::Milliseconds(500));
  EXPECT_EQ(RetryDelay(0, {{"retry-after", "soon"}}, now, 1.0), absl::Milliseconds(500));
}

TEST_F(AnthropicClientTest, BadRequestIsNotRetriedAndCarriesTheApiMessage) {
  server_.Enqueue(ErrorReply(400, "invalid_request_error", "max_tokens: too large"));
  auto client = MakeClient(&fake_clock_);
  absl::StatusOr<MessagesReply> reply = client->CreateMessage(kBody, absl::InfiniteFuture());
  EXPECT_EQ(reply.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(reply.status().message(),
            "Messages API HTTP 400 invalid_request_error: max_tokens: too large "
            "(request-id req_fakeerror)");
  EXPECT_EQ(server_.requests().size(), 1u);
}

TEST_F(AnthropicClientTest, WrongKeyIsUnauthenticatedAfterOneRequest) {
  AnthropicClientOptions options;
  options.base_url = server_.base_url();
  options.api_key = "sk-wrong";
  auto client = AnthropicClient::Create(std::move(options), &fake_clock_);
  ASSERT_TRUE(client.ok());
  absl::StatusOr<MessagesReply> reply = (*client)->CreateMessage(kBody, absl::InfiniteFuture());
  EXPECT_EQ(reply.status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_THAT(std::string(reply.status().message()), HasSubstr("authentication_error"));
  EXPECT_EQ(server_.requests().size(), 1u);
}

TEST_F(AnthropicClientTest, FatalStatusesMapToTheRoutersFatalCodes) {
  struct Case {
    int status;
    const char* type;
    absl::StatusCode code;
  };
  for (const Case& c : {Case{403, "permission_error", absl::StatusCode::kPermissionDenied},
                        Case{404, "not_found_error", absl::StatusCode::kNotFound},
                        Case{413, "request_too_large", absl::StatusCode::kOutOfRange}}) {
    server_.Enqueue(ErrorReply(c.status, c.type, "no"));
    auto client = MakeClient(&fake_clock_);
    const size_t before = server_.requests().size();
    absl::StatusOr<MessagesReply> reply = client->CreateMessage(kBody, absl::InfiniteFuture());
    EXPECT_EQ(reply.status().code(), c.code) << c.status;
    EXPECT_THAT(std::string(reply.status().message()), HasSubstr(c.type));
    EXPECT_EQ(server_.requests().size(), before + 1) << c.status;
  }
}

TEST_F(AnthropicClientTest, RateLimitEveryTimeIsResourceExhausted) {
  for (int i = 0; i < 3; ++i) server_.Enqueue(ErrorReply(429, "rate_limit_error", "limit"));
  auto client = MakeClient(&fake_clock_);
  absl::StatusOr<MessagesReply> reply = client->CreateMessage(kBody, absl::InfiniteFuture());
  EXPECT_EQ(reply.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(server_.requests().size(), 3u);
}

TEST_F(AnthropicClientTest, ConnectionClosedWithoutReplyIsRetriedThenUnavailable) {
  FakeReply closed;
  closed.close_without_reply = true;
  for (int i = 0; i < 3; ++i) server_.Enqueue(closed);
  auto client = MakeClient(&fake_clock_);
  absl::StatusOr<MessagesReply> reply = client->CreateMessage(kBody, absl::InfiniteFuture());
  EXPECT_EQ(reply.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(reply.status().message()), HasSubstr("Messages API connection error"));
  EXPECT_EQ(server_.requests().size(), 3u);
}

TEST_F(AnthropicClientTest, ConnectionClosedOnceThenSuccess) {
  FakeReply closed;
  closed.close_without_reply = true;
  server_.Enqueue(closed);
  server_.Enqueue(TextReply("ok"));
  auto client = MakeClient(&fake_clock_);
  absl::StatusOr<MessagesReply> reply = client->CreateMessage(kBody, absl::InfiniteFuture());
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(reply->attempts, 2);
}

TEST_F(AnthropicClientTest, KeptAliveConnectionClosedIsNeverResentBehindTheRetryCount) {
  // curl resends a request by itself when a reused connection dies without a reply; the
  // server must still see at most 1 + max_retries requests per call.
  server_.Enqueue(TextReply("first"));
  FakeReply closed;
  closed.close_without_reply = true;
  for (int i = 0; i < 4; ++i) server_.Enqueue(closed);
  server_.Enqueue(TextReply("too late"));
  auto client = MakeClient(&fake_clock_);
  ASSERT_TRUE(client->CreateMessage(kBody, absl::InfiniteFuture()).ok());
  absl::StatusOr<MessagesReply> reply = client->CreateMessage(kBody, absl::InfiniteFuture());
  EXPECT_EQ(reply.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(reply.status().message()), HasSubstr("Messages API connection error: "));
  EXPECT_THAT(std::string(reply.status().message()), HasSubstr("(after 3 attempts)"));
  std::vector<FakeRequest> requests = server_.requests();
  ASSERT_EQ(requests.size(), 4u);
  EXPECT_EQ(requests[1].connection, requests[0].connection);
  EXPECT_EQ(requests[1].body, kBody);
  EXPECT_EQ(requests[3].body, kBody);
}

TEST_F(AnthropicClientTest, ReplySlowerThanTheDeadlineEndsAtTheDeadline) {
  FakeReply slow = TextReply("late");
  slow.delay = absl::Seconds(5);
  server_.Enqueue(slow);
  auto client = MakeClient(RealClock());
  const absl::Time start = absl::Now();
  absl::StatusOr<MessagesReply> reply =
      client->CreateMessage(kBody, start + absl::Milliseconds(600));
  const absl::Duration took = absl::Now() - start;
  EXPECT_EQ(reply.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_GE(took, absl::Milliseconds(550));
  EXPECT_LT(took, absl::Milliseconds(1800));
  EXPECT_EQ(server_.requests().size(), 1u);
}

TEST_F(AnthropicClientTest, PastDeadlineMakesNoRequest) {
  auto client = MakeClient(&fake_clock_);
  absl::StatusOr<MessagesReply> reply =
      client->CreateMessage(kBody, fake_clock_.Now() - absl::Seconds(1));
  EXPECT_EQ(reply.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(server_.requests().size(), 0u);
}

TEST_F(AnthropicClientTest, WaitPastTheDeadlineGivesUpWithTheLastError) {
  FakeReply limited = ErrorReply(429, "rate_limit_error", "slow down");
  limited.headers.push_back({"retry-after", "30"});
  server_.Enqueue(limited);
  auto client = MakeClient(&fake_clock_);
  absl::StatusOr<MessagesReply> reply =
      client->CreateMessage(kBody, fake_clock_.Now() + absl::Seconds(10));
  EXPECT_EQ(reply.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(server_.requests().size(), 1u);
  EXPECT_TRUE(fake_clock_.sleeps().empty());
}

TEST_F(AnthropicClientTest, ShouldRetryFalseStopsARetryableStatus) {
  FakeReply overloaded = ErrorReply(529, "overloaded_error", "Overloaded");
  overloaded.headers.push_back({"x-should-retry", "false"});
  server_.Enqueue(overloaded);
  auto client = MakeClient(&fake_clock_);
  absl::StatusOr<MessagesReply> reply = client->CreateMessage(kBody, absl::InfiniteFuture());
  EXPECT_EQ(reply.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(server_.requests().size(), 1u);
}

TEST_F(AnthropicClientTest, ShouldRetryTrueRetriesAnOtherwiseFatalStatus) {
  FakeReply conflict = ErrorReply(400, "invalid_request_error", "try again");
  conflict.headers.push_back({"x-should-retry", "true"});
  server_.Enqueue(conflict);
  server_.Enqueue(TextReply("ok"));
  auto client = MakeClient(&fake_clock_);
  absl::StatusOr<MessagesReply> reply = client->CreateMessage(kBody, absl::InfiniteFuture());
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(server_.requests().size(), 2u);
}

TEST_F(AnthropicClientTest, ReplyThatIsNotJsonIsUnavailable) {
  FakeReply garbage;
  garbage.body = "<html>gateway</html>";
  server_.Enqueue(garbage);
  auto client = MakeClient(&fake_clock_);
  absl::StatusOr<MessagesReply> reply = client->CreateMessage(kBody, absl::InfiniteFuture());
  EXPECT_EQ(reply.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(reply.status().message()), HasSubstr("not a JSON object"));
}

TEST_F(AnthropicClientTest, KeyEchoedByTheServerIsScrubbedFromErrors) {
  server_.Enqueue(
      ErrorReply(401, "authentication_error", std::string("invalid x-api-key: ") + kKey));
  auto client = MakeClient(&fake_clock_);
  absl::StatusOr<MessagesReply> reply = client->CreateMessage(kBody, absl::InfiniteFuture());
  EXPECT_EQ(reply.status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_THAT(std::string(reply.status().message()), Not(HasSubstr(kKey)));
  EXPECT_THAT(std::string(reply.status().message()), HasSubstr("[api key]"));
}

TEST_F(AnthropicClientTest, CreateRefusesBadUrlsAndKeysWithoutShowingTheKey) {
  AnthropicClientOptions options;
  options.api_key = kKey;
  options.base_url = "ftp://example.com";
  EXPECT_EQ(AnthropicClient::Create(options, &fake_clock_).status().code(),
            absl::StatusCode::kInvalidArgument);
  options.base_url = "https://";
  EXPECT_EQ(AnthropicClient::Create(options, &fake_clock_).status().code(),
            absl::StatusCode::kInvalidArgument);
  options.base_url = "https://api.example.com";
  options.api_key = std::string(kKey) + "\r\nx-evil: 1";
  absl::Status status = AnthropicClient::Create(options, &fake_clock_).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), Not(HasSubstr(kKey)));
  options.api_key = "";
  EXPECT_EQ(AnthropicClient::Create(options, &fake_clock_).status().message(),
            "the API key is empty");
}

TEST_F(AnthropicClientTest, UrlIsBasePlusV1Messages) {
  auto client = MakeClient(&fake_clock_);
  EXPECT_EQ(client->url(), server_.base_url() + "/v1/messages");
}

TEST_F(AnthropicClientTest, HttpStatusMapping) {
  EXPECT_EQ(StatusCodeForHttp(400), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(StatusCodeForHttp(401), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(StatusCodeForHttp(403), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(StatusCodeForHttp(404), absl::StatusCode::kNotFound);
  EXPECT_EQ(StatusCodeForHttp(413), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(StatusCodeForHttp(429), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(StatusCodeForHttp(500), absl::StatusCode::kUnavailable);
  EXPECT_EQ(StatusCodeForHttp(529), absl::StatusCode::kUnavailable);
  EXPECT_EQ(StatusCodeForHttp(422), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace rein
