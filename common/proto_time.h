// The one conversion between google.protobuf Timestamp/Duration and absl::Time/Duration.
#ifndef REIN_COMMON_PROTO_TIME_H_
#define REIN_COMMON_PROTO_TIME_H_

#include "absl/time/time.h"
#include "google/protobuf/duration.pb.h"
#include "google/protobuf/timestamp.pb.h"

namespace rein {

// Exact for every valid message; no overflow for any field values (no int64 nanoseconds on
// the way). An infinite absl value becomes the nearest end of the message type's range.
absl::Time FromProtoTime(const google::protobuf::Timestamp& t);
google::protobuf::Timestamp ToProtoTime(absl::Time t);
absl::Duration FromProtoDuration(const google::protobuf::Duration& d);
google::protobuf::Duration ToProtoDuration(absl::Duration d);

// Whether `d` is a Duration as google/protobuf/duration.proto defines it: seconds within
// +-315,576,000,000, nanos within +-999,999,999 and of the same sign as seconds.
bool IsValidProtoDuration(const google::protobuf::Duration& d);

}  // namespace rein

#endif  // REIN_COMMON_PROTO_TIME_H_
