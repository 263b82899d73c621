// The one conversion between google.protobuf Timestamp/Duration and absl::Time/Duration.
#ifndef REIN_COMMON_PROTO_TIME_H_
#define REIN_COMMON_PROTO_TIME_H_

#include <cstdint>

#include "absl/time/time.h"
#include "google/protobuf/duration.pb.h"
#include "google/protobuf/timestamp.pb.h"

namespace rein {

// The range of google.protobuf.Timestamp: 0001-01-01T00:00:00Z .. 9999-12-31T23:59:59Z.
inline constexpr int64_t kMinTimestampSeconds = -62135596800;
inline constexpr int64_t kMaxTimestampSeconds = 253402300799;

// Exact for every valid message; no overflow for any field values (no int64 nanoseconds on
// the way). An infinite absl value becomes the nearest end of the message type's range.
absl::Time FromProtoTime(const google::protobuf::Timestamp& t);
google::protobuf::Timestamp ToProtoTime(absl::Time t);
absl::Duration FromProtoDuration(const google::protobuf::Duration& d);
google::protobuf::Duration ToProtoDuration(absl::Duration d);

// Whether `d` is a Duration as google/protobuf/duration.proto defines it: seconds within
// +-315,576,000,000, nanos within +-999,999,999 and of the same sign as seconds.
bool IsValidProtoDuration(const google::protobuf::Duration& d);

// Whether `t` is a Timestamp as google/protobuf/timestamp.proto defines it: seconds from
// 0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z, nanos within [0, 999,999,999].
bool IsValidProtoTime(const google::protobuf::Timestamp& t);

}  // namespace rein

#endif  // REIN_COMMON_PROTO_TIME_H_
