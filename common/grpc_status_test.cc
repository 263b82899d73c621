// Tests of the absl::Status <-> grpc::Status conversion.
#include "common/grpc_status.h"

#include <string>

#include "common/status_reason.h"
#include "gtest/gtest.h"

namespace rein {
namespace {

TEST(GrpcStatusTest, CodeIsKeptBothWays) {
  for (int code = 1; code <= 16; ++code) {
    absl::Status status(static_cast<absl::StatusCode>(code), "why");
    grpc::Status wire = ToGrpcStatus(status);
    EXPECT_EQ(static_cast<int>(wire.error_code()), code);
    EXPECT_EQ(FromGrpcStatus(wire).code(), status.code());
    EXPECT_EQ(FromGrpcStatus(wire).message(), "why");
  }
  EXPECT_TRUE(ToGrpcStatus(absl::OkStatus()).ok());
}

TEST(GrpcStatusTest, LongMessagesAreCutWithAMarker) {
  grpc::Status wire = ToGrpcStatus(absl::InternalError(std::string(10000, 'x')));
  EXPECT_LT(wire.error_message().size(), 4200u);
  EXPECT_NE(wire.error_message().find("[truncated]"), std::string::npos);
}

TEST(GrpcStatusTest, SurroundingWhiteSpaceIsDropped) {
  EXPECT_EQ(ToGrpcStatus(absl::InvalidArgumentError("args: not an object: { ")).error_message(),
            "args: not an object: {");
}

TEST(GrpcStatusTest, ReasonCrossesTheWireWithCodeAndMessage) {
  absl::Status status =
      WithReason(absl::NotFoundError("no such workspace"), reason::kWorkspaceNotFound);
  grpc::Status wire = ToGrpcStatus(status);
  EXPECT_FALSE(wire.error_details().empty());
  absl::Status back = FromGrpcStatus(wire);
  EXPECT_EQ(back.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(back.message(), "no such workspace");
  EXPECT_TRUE(HasReason(back, reason::kWorkspaceNotFound));
  EXPECT_FALSE(HasReason(back, reason::kSnapshotMissing));
}

TEST(GrpcStatusTest, NoReasonMeansNoDetailsAndGarbageDetailsAreIgnored) {
  EXPECT_TRUE(ToGrpcStatus(absl::NotFoundError("x")).error_details().empty());
  grpc::Status garbage(grpc::StatusCode::NOT_FOUND, "x", "\xff\xff not a proto");
  absl::Status back = FromGrpcStatus(garbage);
  EXPECT_EQ(back.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(ReasonOf(back), "");
}

}  // namespace
}  // namespace rein
