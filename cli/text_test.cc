// Tests of reinctl's text pieces.
#include "cli/text.h"

#include "gtest/gtest.h"

namespace rein::cli {
namespace {

TEST(OneLine, ControlCharactersAndLongTextAreTamed) {
  EXPECT_EQ(OneLine("a\tb\x1b[2Jc", 100), "a b [2Jc");
  EXPECT_EQ(OneLine("abcdef", 3), "abc...");
  // "é" is two bytes; cutting at 2 would split it.
  EXPECT_EQ(OneLine("aé", 2), "a...");
  EXPECT_EQ(OneLine("  padded \n second", 100), "padded...");
}

}  // namespace
}  // namespace rein::cli
