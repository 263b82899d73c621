// Unit tests of the Connect protocol's wire pieces.
#include "router_service/connect/connect_protocol.h"

#include <string>

#include "gtest/gtest.h"

namespace rein::connect {
namespace {

TEST(ContentTypeTest, ServedTypesParse) {
  absl::StatusOr<ContentType> json = ParseContentType("application/json; charset=utf-8");
  ASSERT_TRUE(json.ok());
  EXPECT_EQ(json->codec, Codec::kJson);
  EXPECT_FALSE(json->streaming);
  absl::StatusOr<ContentType> stream = ParseContentType("Application/Connect+Proto");
  ASSERT_TRUE(stream.ok());
  EXPECT_EQ(stream->codec, Codec::kProto);
  EXPECT_TRUE(stream->streaming);
  EXPECT_EQ(ContentTypeName(*stream), "application/connect+proto");
  EXPECT_EQ(ContentTypeName({Codec::kJson, false}), "application/json");
}

TEST(ContentTypeTest, OtherTypesAreInvalidArgumentNamingTheServedOnes) {
  absl::StatusOr<ContentType> form = ParseContentType("text/plain");
  ASSERT_EQ(form.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(form.status().message().find("\"text/plain\" is not served"), std::string::npos);
  EXPECT_NE(form.status().message().find("application/json"), std::string::npos);
  EXPECT_EQ(ParseContentType("").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(CodeTest, NamesAndStatusesFollowConnect) {
  EXPECT_EQ(CodeName(absl::StatusCode::kInvalidArgument), "invalid_argument");
  EXPECT_EQ(CodeName(absl::StatusCode::kCancelled), "canceled");
  EXPECT_EQ(CodeName(absl::StatusCode::kFailedPrecondition), "failed_precondition");
  EXPECT_EQ(HttpStatusOf(absl::StatusCode::kNotFound), 404);
  EXPECT_EQ(HttpStatusOf(absl::StatusCode::kUnauthenticated), 401);
  EXPECT_EQ(HttpStatusOf(absl::StatusCode::kPermissionDenied), 403);
  EXPECT_EQ(HttpStatusOf(absl::StatusCode::kFailedPrecondition), 400);
  EXPECT_EQ(HttpStatusOf(absl::StatusCode::kResourceExhausted), 429);
  EXPECT_EQ(HttpStatusOf(absl::StatusCode::kUnavailable), 503);
  EXPECT_EQ(HttpStatusOf(absl::StatusCode::kInternal), 500);
}

TEST(ErrorJsonTest, CarriesCodeAndEscapedMessage) {
  EXPECT_EQ(ErrorJson(absl::NotFoundError("run \"x\" not found")),
            R"({"code":"not_found","message":"run \"x\" not found"})");
  EXPECT_EQ(ErrorJson(absl::InternalError("")), R"({"code":"internal"})");
  EXPECT_EQ(EndStreamJson(absl::OkStatus()), "{}");
  EXPECT_EQ(EndStreamJson(absl::UnauthenticatedError("no token")),
            R"({"error":{"code":"unauthenticated","message":"no token"}})");
}

TEST(EnvelopeTest, RoundTripsOneMessage) {
  const std::string wire = Envelope(0, "{\"runId\":\"r\"}");
  ASSERT_EQ(wire.size(), 5u + 13u);
  EXPECT_EQ(wire[0], 0);
  EXPECT_EQ(static_cast<uint8_t>(wire[4]), 13);
  absl::StatusOr<std::string> payload = SingleEnvelopePayload(wire);
  ASSERT_TRUE(payload.ok()) << payload.status();
  EXPECT_EQ(*payload, "{\"runId\":\"r\"}");
  EXPECT_EQ(static_cast<uint8_t>(Envelope(kEnvelopeEndStream, "{}")[0]), 2);
  // Sizes past one byte are big-endian.
  const std::string big = Envelope(0, std::string(0x10203, 'a'));
  EXPECT_EQ(big.substr(1, 4), std::string("\x00\x01\x02\x03", 4));
}

TEST(EnvelopeTest, MalformedRequestsAreRefusedWithTheReason) {
  EXPECT_EQ(SingleEnvelopePayload("abc").status().code(), absl::StatusCode::kInvalidArgument);
  std::string two = Envelope(0, "{}") + Envelope(0, "{}");
  absl::Status status = SingleEnvelopePayload(two).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("exactly one request message"), std::string::npos);
  EXPECT_EQ(SingleEnvelopePayload(Envelope(kEnvelopeCompressed, "x")).status().code(),
            absl::StatusCode::kUnimplemented);
  EXPECT_EQ(SingleEnvelopePayload(Envelope(kEnvelopeEndStream, "{}")).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(TimeoutTest, ParsesMillisecondsAndRefusesTheRest) {
  absl::StatusOr<std::optional<absl::Duration>> none = ParseTimeout(nullptr);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  absl::StatusOr<std::optional<absl::Duration>> ms = ParseTimeout("1500");
  ASSERT_TRUE(ms.ok());
  EXPECT_EQ(**ms, absl::Milliseconds(1500));
  for (const char* bad : {"", "0", "-1", "1.5", "12345678901", "abc"}) {
    EXPECT_EQ(ParseTimeout(bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

}  // namespace
}  // namespace rein::connect
