// Tests of reinctl's flag values: each kind read, and each mistake named by its flag.
#include "cli/flag_values.h"

#include "gtest/gtest.h"
#include "rein/v1/types.pb.h"

namespace rein::cli {
namespace {

TEST(FlagValuesTest, EachKindIsRead) {
  EXPECT_EQ(*ParseBool("wait", "YES"), true);
  EXPECT_EQ(*ParseBool("wait", "0"), false);
  EXPECT_EQ(*ParseInt<int>("max_iterations", "12", 1), 12);
  EXPECT_EQ(*ParsePositiveDuration("deadline", "90s"), absl::Seconds(90));
  EXPECT_DOUBLE_EQ(*ParseDollars("cost_budget", "0.50", /*allow_zero=*/false), 0.5);
  EXPECT_EQ(*ParseEnum<rein::v1::Stage>("stage", " paused ", rein::v1::Stage_descriptor()),
            rein::v1::PAUSED);
  EXPECT_EQ(SplitList({"a, b", ",c,"}), (std::vector<std::string>{"a", "b", "c"}));
  FlagValues values{{"tools", {"a", "b"}}};
  EXPECT_EQ(Last(values, "tools"), "b");
  EXPECT_EQ(Last(values, "goal"), std::nullopt);
}

TEST(FlagValuesTest, MistakesAreUsageErrorsNamingTheFlag) {
  const std::vector<absl::Status> mistakes = {
      ParseBool("wait", "maybe").status(),
      ParseInt<int>("max_iterations", "ten", 1).status(),
      ParseInt<int>("max_iterations", "0", 1).status(),
      ParsePositiveDuration("max_iterations", "-5s").status(),
      ParseDollars("max_iterations", "$1", /*allow_zero=*/true).status(),
      ParseDollars("max_iterations", "0", /*allow_zero=*/false).status(),
      ParseEnum<rein::v1::Stage>("max_iterations", "STAGE_UNSPECIFIED",
                                 rein::v1::Stage_descriptor())
          .status(),
  };
  for (const absl::Status& status : mistakes) {
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
    EXPECT_EQ(status.message().substr(0, 2), "--") << status;
  }
  EXPECT_EQ(ParseBool("wait", "maybe").status().message(), "--wait: \"maybe\" is not a boolean");
}

}  // namespace
}  // namespace rein::cli
