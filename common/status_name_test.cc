// Tests of StatusCodeName.
#include "common/status_name.h"

#include "gtest/gtest.h"

namespace rein {
namespace {

TEST(StatusNameTest, CodeNamesAreUpperCase) {
  EXPECT_EQ(StatusCodeName(absl::StatusCode::kResourceExhausted), "RESOURCE_EXHAUSTED");
  EXPECT_EQ(StatusCodeName(absl::StatusCode::kUnavailable), "UNAVAILABLE");
}

TEST(StatusNameTest, EveryCodeHasUnderscoresAndNoSpaces) {
  EXPECT_EQ(StatusCodeName(absl::StatusCode::kDeadlineExceeded), "DEADLINE_EXCEEDED");
  EXPECT_EQ(StatusCodeName(absl::StatusCode::kFailedPrecondition), "FAILED_PRECONDITION");
  EXPECT_EQ(StatusCodeName(absl::StatusCode::kOk), "OK");
}

}  // namespace
}  // namespace rein
