// Tests of the proto time conversions.
#include "common/proto_time.h"

#include "gtest/gtest.h"

namespace rein {
namespace {

TEST(ProtoTimeTest, TimestampRoundTripsExactly) {
  const absl::Time t = absl::FromUnixSeconds(1700000000) + absl::Nanoseconds(123456789);
  google::protobuf::Timestamp ts = ToProtoTime(t);
  EXPECT_EQ(ts.seconds(), 1700000000);
  EXPECT_EQ(ts.nanos(), 123456789);
  EXPECT_EQ(FromProtoTime(ts), t);
}

TEST(ProtoTimeTest, TimeBeforeEpochHasNonNegativeNanos) {
  const absl::Time t = absl::FromUnixSeconds(0) - absl::Nanoseconds(1);
  google::protobuf::Timestamp ts = ToProtoTime(t);
  EXPECT_EQ(ts.seconds(), -1);
  EXPECT_EQ(ts.nanos(), 999999999);
  EXPECT_EQ(FromProtoTime(ts), t);
}

TEST(ProtoTimeTest, InfiniteTimesClampToTheTimestampRange) {
  EXPECT_EQ(ToProtoTime(absl::InfiniteFuture()).seconds(), 253402300799);
  EXPECT_EQ(ToProtoTime(absl::InfiniteFuture()).nanos(), 999999999);
  EXPECT_EQ(ToProtoTime(absl::InfinitePast()).seconds(), -62135596800);
}

TEST(ProtoTimeTest, DurationRoundTripsBothSigns) {
  for (absl::Duration d : {absl::Milliseconds(1500), -absl::Milliseconds(1500),
                           absl::ZeroDuration(), absl::Nanoseconds(-1), absl::Hours(24 * 7)}) {
    google::protobuf::Duration proto = ToProtoDuration(d);
    EXPECT_TRUE(IsValidProtoDuration(proto)) << d;
    EXPECT_EQ(FromProtoDuration(proto), d);
  }
  EXPECT_EQ(ToProtoDuration(-absl::Milliseconds(1500)).seconds(), -1);
  EXPECT_EQ(ToProtoDuration(-absl::Milliseconds(1500)).nanos(), -500000000);
}

TEST(ProtoTimeTest, HugeDurationDoesNotOverflow) {
  google::protobuf::Duration d;
  d.set_seconds(315576000000);
  EXPECT_EQ(FromProtoDuration(d), absl::Seconds(315576000000));
  EXPECT_EQ(ToProtoDuration(absl::InfiniteDuration()).seconds(), 315576000000);
}

TEST(ProtoTimeTest, InvalidDurationsAreRecognized) {
  google::protobuf::Duration d;
  d.set_seconds(1);
  d.set_nanos(-1);
  EXPECT_FALSE(IsValidProtoDuration(d));
  d.set_seconds(0);
  d.set_nanos(1000000000);
  EXPECT_FALSE(IsValidProtoDuration(d));
  d.set_seconds(315576000001);
  d.set_nanos(0);
  EXPECT_FALSE(IsValidProtoDuration(d));
}

}  // namespace
}  // namespace rein
