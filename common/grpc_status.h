// The one conversion between absl::Status and grpc::Status; codes are kept, messages capped.
#ifndef REIN_COMMON_GRPC_STATUS_H_
#define REIN_COMMON_GRPC_STATUS_H_

#include <string>

#include "absl/status/status.h"
#include "grpcpp/support/status.h"

namespace rein {

// Messages longer than this are cut (with a marker) when crossing the wire.
inline constexpr size_t kMaxStatusMessageBytes = 4096;

grpc::Status ToGrpcStatus(const absl::Status& status);
absl::Status FromGrpcStatus(const grpc::Status& status);

}  // namespace rein

#endif  // REIN_COMMON_GRPC_STATUS_H_
