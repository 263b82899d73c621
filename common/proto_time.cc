// The one conversion between google.protobuf Timestamp/Duration and absl::Time/Duration.
#include "common/proto_time.h"

#include <cstdint>

namespace rein {
namespace {

constexpr int64_t kMaxDurationSeconds = 315576000000;  // google.protobuf.Duration's range

}  // namespace

absl::Time FromProtoTime(const google::protobuf::Timestamp& t) {
  return absl::FromUnixSeconds(t.seconds()) + absl::Nanoseconds(t.nanos());
}

google::protobuf::Timestamp ToProtoTime(absl::Time t) {
  google::protobuf::Timestamp out;
  if (t >= absl::FromUnixSeconds(kMaxTimestampSeconds + 1)) {
    out.set_seconds(kMaxTimestampSeconds);
    out.set_nanos(999999999);
    return out;
  }
  if (t < absl::FromUnixSeconds(kMinTimestampSeconds)) {
    out.set_seconds(kMinTimestampSeconds);
    return out;
  }
  const int64_t seconds = absl::ToUnixSeconds(t);  // rounds down: nanos stay >= 0
  out.set_seconds(seconds);
  out.set_nanos(static_cast<int32_t>((t - absl::FromUnixSeconds(seconds)) / absl::Nanoseconds(1)));
  return out;
}

absl::Duration FromProtoDuration(const google::protobuf::Duration& d) {
  return absl::Seconds(d.seconds()) + absl::Nanoseconds(d.nanos());
}

google::protobuf::Duration ToProtoDuration(absl::Duration d) {
  google::protobuf::Duration out;
  if (d >= absl::Seconds(kMaxDurationSeconds)) {
    out.set_seconds(kMaxDurationSeconds);
    return out;
  }
  if (d <= absl::Seconds(-kMaxDurationSeconds)) {
    out.set_seconds(-kMaxDurationSeconds);
    return out;
  }
  const int64_t seconds = absl::IDivDuration(d, absl::Seconds(1), &d);  // toward zero
  out.set_seconds(seconds);
  out.set_nanos(static_cast<int32_t>(absl::ToInt64Nanoseconds(d)));
  return out;
}

bool IsValidProtoDuration(const google::protobuf::Duration& d) {
  const int64_t s = d.seconds();
  const int32_t n = d.nanos();
  if (s < -kMaxDurationSeconds || s > kMaxDurationSeconds) return false;
  if (n <= -1000000000 || n >= 1000000000) return false;
  return !((s > 0 && n < 0) || (s < 0 && n > 0));
}

bool IsValidProtoTime(const google::protobuf::Timestamp& t) {
  return t.seconds() >= kMinTimestampSeconds && t.seconds() <= kMaxTimestampSeconds &&
         t.nanos() >= 0 && t.nanos() <= 999999999;
}

}  // namespace rein
