// Tests of reinctl's connection flags and token loading.
#include "cli/connection.h"

#include <stdlib.h>

#include <fstream>

#include "gtest/gtest.h"

namespace rein::cli {
namespace {

TEST(ExtractConnectionFlagsTest, TakesTheFlagsAnywhereAndLeavesTheRest) {
  std::vector<std::string> args = {"--router=h:1", "--token_file", "/t", "list", "--stage=PAUSED"};
  absl::StatusOr<ConnectionFlags> flags = ExtractConnectionFlags(&args);
  ASSERT_TRUE(flags.ok()) << flags.status();
  EXPECT_EQ(flags->token_file, "/t");
  EXPECT_FALSE(flags->tls.enabled());
  EXPECT_EQ(args, (std::vector<std::string>{"--router=h:1", "list", "--stage=PAUSED"}));
}

TEST(ExtractConnectionFlagsTest, RefusesMissingValuesAndUnusableFiles) {
  std::vector<std::string> args = {"list", "--token_file"};
  EXPECT_EQ(ExtractConnectionFlags(&args).status().message(), "--token_file needs a value");
  args = {"list", "--tls_ca=/no/such/ca.pem"};
  absl::Status status = ExtractConnectionFlags(&args).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("--tls_ca: cannot read /no/such/ca.pem"), std::string::npos);
  args = {"list", "--tls_cert=/c.pem"};
  EXPECT_EQ(ExtractConnectionFlags(&args).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(LoadTokenTest, FileFirstThenEnvironment) {
  std::string path = std::string(getenv("TEST_TMPDIR") ? getenv("TEST_TMPDIR") : "/tmp") + "/tok";
  std::ofstream(path) << "  s3cret \nsecond line\n";
  ConnectionFlags flags;
  flags.token_file = path;
  EXPECT_EQ(*LoadToken(flags, "from-env"), "s3cret");
  flags.token_file.clear();
  EXPECT_EQ(*LoadToken(flags, "from-env"), "from-env");
  EXPECT_EQ(*LoadToken(flags, nullptr), "");
  flags.token_file = path + ".absent";
  EXPECT_EQ(LoadToken(flags, nullptr).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace rein::cli
