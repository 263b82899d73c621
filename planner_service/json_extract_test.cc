// Tests of taking the first JSON object out of free text and of the nesting guard.
#include "planner_service/json_extract.h"

#include <string>

#include "gtest/gtest.h"

namespace rein {
namespace {

TEST(JsonExtractTest, BareObjectIsReturnedWhole) {
  EXPECT_EQ(ExtractFirstJsonObject(R"({"a": 1})"), R"({"a": 1})");
}

TEST(JsonExtractTest, ProseAndCodeFencesArePassedOver) {
  EXPECT_EQ(ExtractFirstJsonObject("Here you go:\n```json\n{\"a\": [1, {\"b\": 2}]}\n```\nBye"),
            R"({"a": [1, {"b": 2}]})");
}

TEST(JsonExtractTest, BracesInsideStringsAndEscapesDoNotCount) {
  EXPECT_EQ(ExtractFirstJsonObject(R"(x {"s": "} \" {", "t": "\\"} y)"),
            R"({"s": "} \" {", "t": "\\"})");
}

TEST(JsonExtractTest, BalancedProseBracesAreSkippedWhole) {
  EXPECT_EQ(ExtractFirstJsonObject(R"(use {path} or {bad, {"x": 1}} then {"ok": true})"),
            R"({"ok": true})");
}

TEST(JsonExtractTest, UnbalancedOpenBeforeTheObjectIsSkipped) {
  EXPECT_EQ(ExtractFirstJsonObject(R"(a { b {"ok": 1})"), R"({"ok": 1})");
}

TEST(JsonExtractTest, NoObjectIsNullopt) {
  EXPECT_EQ(ExtractFirstJsonObject("no json here"), std::nullopt);
  EXPECT_EQ(ExtractFirstJsonObject(R"([1, 2, 3])"), std::nullopt);
  EXPECT_EQ(ExtractFirstJsonObject(R"({"a": oops})"), std::nullopt);
  EXPECT_EQ(ExtractFirstJsonObject(""), std::nullopt);
}

TEST(JsonExtractTest, TooDeepObjectIsRefused) {
  std::string deep;
  for (int i = 0; i < 100; ++i) deep += "{\"a\":";
  deep += "1";
  for (int i = 0; i < 100; ++i) deep += "}";
  EXPECT_EQ(ExtractFirstJsonObject(deep), std::nullopt);
  EXPECT_EQ(JsonNestingDepth(deep), 100);
}

TEST(JsonExtractTest, NestingDepthIgnoresBracketsInStrings) {
  EXPECT_EQ(JsonNestingDepth(R"({"a": "[[[[{{{{", "b": [1, [2]]})"), 3);
  EXPECT_EQ(JsonNestingDepth("plain"), 0);
}

TEST(JsonExtractTest, TooLongTextIsRefused) {
  std::string text(kMaxExtractBytes + 1, ' ');
  text.replace(0, 7, R"({"a":1})");
  ASSERT_EQ(text.size(), kMaxExtractBytes + 1);
  EXPECT_EQ(ExtractFirstJsonObject(text), std::nullopt);
}

}  // namespace
}  // namespace rein
