// Tests of bounded tool output and UTF-8 sanitizing.
#include "executor_service/process/output_buffer.h"

#include <string>

#include "gtest/gtest.h"

namespace rein {
namespace {

TEST(OutputBufferTest, SmallOutputIsKeptWhole) {
  OutputBuffer out(100);
  out.Append("hello\n");
  out.AddNote("[note]");
  bool truncated = true;
  EXPECT_EQ(std::move(out).Finish(&truncated), "hello\n[note]\n");
  EXPECT_FALSE(truncated);
}

TEST(OutputBufferTest, OverflowIsCutWithMarkerCountingOmittedBytes) {
  OutputBuffer out(10);
  out.Append("0123456789abc");
  out.Append("def");
  EXPECT_TRUE(out.full());
  out.AddNote("[more]");
  bool truncated = false;
  EXPECT_EQ(std::move(out).Finish(&truncated),
            "0123456789\n[output truncated: 6 bytes omitted]\n[more]\n");
  EXPECT_TRUE(truncated);
}

TEST(OutputBufferTest, CutInsideACharacterDropsItsLeadingBytes) {
  OutputBuffer out(4);
  out.Append("ab\xE2\x82\xAC");  // "ab€": the cut falls inside the euro sign
  bool truncated = false;
  EXPECT_EQ(std::move(out).Finish(&truncated), "ab\n[output truncated: 3 bytes omitted]\n");
  EXPECT_TRUE(truncated);
}

TEST(SanitizeUtf8Test, InvalidBytesBecomeReplacementCharacters) {
  EXPECT_EQ(SanitizeUtf8("ok €"), "ok €");
  EXPECT_EQ(SanitizeUtf8("a\xff"
                         "b"),
            "a\xEF\xBF\xBD"
            "b");
  EXPECT_EQ(SanitizeUtf8("\xC0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD");                  // overlong NUL
  EXPECT_EQ(SanitizeUtf8("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // surrogate
  EXPECT_EQ(SanitizeUtf8("\xE2\x82"), "\xEF\xBF\xBD\xEF\xBF\xBD");                  // cut short
}

TEST(OutputBufferTest, SanitizedBodyStaysWithinTheCap) {
  OutputBuffer out(6);
  out.Append("\xff\xff\xff\xff");  // 4 bytes in, 12 bytes once replaced
  bool truncated = false;
  const std::string text = std::move(out).Finish(&truncated);
  EXPECT_TRUE(truncated);
  EXPECT_EQ(text, "\xEF\xBF\xBD\xEF\xBF\xBD\n[output truncated: 6 bytes omitted]\n");
}

}  // namespace
}  // namespace rein
