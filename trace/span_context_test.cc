// Tests of W3C traceparent parsing and formatting.
#include "trace/span_context.h"

#include "gtest/gtest.h"

namespace rein::trace {
namespace {

constexpr char kValid[] = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

TEST(SpanContextTest, ValidTraceparentParsesAndFormatsBack) {
  std::optional<SpanContext> c = ParseTraceparent(kValid);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->trace_id_hex(), "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(c->span_id_hex(), "00f067aa0ba902b7");
  EXPECT_TRUE(c->sampled);
  EXPECT_EQ(FormatTraceparent(*c), kValid);
}

TEST(SpanContextTest, UnsampledFlagIsKept) {
  std::optional<SpanContext> c =
      ParseTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00");
  ASSERT_TRUE(c.has_value());
  EXPECT_FALSE(c->sampled);
  EXPECT_EQ(FormatTraceparent(*c), "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00");
}

TEST(SpanContextTest, MalformedTraceparentsAreIgnored) {
  for (const char* bad : {
           "", "garbage",
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",        // no flags
           "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",     // uppercase
           "00-00000000000000000000000000000000-00f067aa0ba902b7-01",     // zero trace id
           "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",     // zero span id
           "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",     // version ff
           "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",      // short trace id
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-xx",  // 00 with extra
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1",      // short flags
           "0x-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",     // bad version
       }) {
    EXPECT_FALSE(ParseTraceparent(bad).has_value()) << bad;
  }
}

TEST(SpanContextTest, LaterVersionWithMorePartsIsReadAsVersionZero) {
  std::optional<SpanContext> c =
      ParseTraceparent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-future");
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->span_id_hex(), "00f067aa0ba902b7");
}

TEST(SpanContextTest, HexIdsMakeAContextOnlyWhenValid) {
  EXPECT_TRUE(ContextFromHex("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7").has_value());
  EXPECT_FALSE(ContextFromHex("", "00f067aa0ba902b7").has_value());
  EXPECT_FALSE(ContextFromHex("4bf92f3577b34da6a3ce929d0e0e4736", "zzf067aa0ba902b7").has_value());
}

TEST(SpanContextTest, NewIdsHaveTheRightSizeAndDiffer) {
  const std::string a = NewTraceId(), b = NewTraceId();
  EXPECT_EQ(a.size(), 16u);
  EXPECT_EQ(NewSpanId().size(), 8u);
  EXPECT_NE(a, b);
}

}  // namespace
}  // namespace rein::trace
