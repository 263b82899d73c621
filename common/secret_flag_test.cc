// Tests of flag values read from files.
#include "common/secret_flag.h"

#include <stdlib.h>

#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace rein {
namespace {

std::string TempPath(const std::string& name) {
  return absl::StrCat(getenv("TEST_TMPDIR") ? getenv("TEST_TMPDIR") : "/tmp", "/", name);
}

TEST(ReadSecretFlagTest, PlainValueIsItself) {
  EXPECT_EQ(*ReadSecretFlag("--store", "sqlite:var/rein.db"), "sqlite:var/rein.db");
  EXPECT_EQ(*ReadSecretFlag("--store", ""), "");
}

TEST(ReadSecretFlagTest, AtPathReadsTheFileWithoutItsNewline) {
  const std::string path = TempPath("uri");
  std::ofstream(path) << "postgresql://rein:s3cret@db:5432/rein\n";
  EXPECT_EQ(*ReadSecretFlag("--store", "@" + path), "postgresql://rein:s3cret@db:5432/rein");
}

TEST(ReadSecretFlagTest, BadFilesAreRefusedNamingFlagAndPathNotContents) {
  absl::Status missing = ReadSecretFlag("--store", "@" + TempPath("absent")).status();
  EXPECT_EQ(missing.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(missing.message(), absl::StrCat("--store: cannot read \"", TempPath("absent"), "\""));
  EXPECT_EQ(ReadSecretFlag("--store", "@").status().code(), absl::StatusCode::kInvalidArgument);
  const std::string empty = TempPath("empty");
  std::ofstream(empty) << " \n";
  EXPECT_EQ(ReadSecretFlag("--store", "@" + empty).status().message(),
            absl::StrCat("--store: ", empty, " is empty"));
  const std::string big = TempPath("big");
  std::ofstream(big) << std::string(kMaxSecretFileBytes + 1, 'x');
  absl::Status too_big = ReadSecretFlag("--store", "@" + big).status();
  EXPECT_EQ(too_big.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(too_big.message().find("xxx"), std::string::npos);
}

}  // namespace
}  // namespace rein
