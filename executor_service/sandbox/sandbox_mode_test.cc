// Tests of the --sandbox values.
#include "executor_service/sandbox/sandbox_mode.h"

#include "gtest/gtest.h"

namespace rein {
namespace {

TEST(SandboxModeTest, NamesParseBack) {
  for (SandboxMode mode : {SandboxMode::kBwrap, SandboxMode::kNone}) {
    absl::StatusOr<SandboxMode> parsed = ParseSandboxMode(SandboxModeName(mode));
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, mode);
  }
  EXPECT_EQ(SandboxModeName(SandboxMode::kBwrap), "bwrap");
  EXPECT_EQ(SandboxModeName(SandboxMode::kNone), "none");
}

TEST(SandboxModeTest, UnknownNameIsInvalidArgumentSayingWhatIsAllowed) {
  for (const char* name : {"", "Bwrap", "bwrap ", "off", "nsjail"}) {
    absl::StatusOr<SandboxMode> parsed = ParseSandboxMode(name);
    ASSERT_FALSE(parsed.ok()) << name;
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(parsed.status().message(),
              std::string("must be bwrap or none, got \"") + name + "\"");
  }
}

}  // namespace
}  // namespace rein
