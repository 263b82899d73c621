// The one reading of a gRPC server call's deadline as an absl::Time.
#ifndef REIN_COMMON_GRPC_DEADLINE_H_
#define REIN_COMMON_GRPC_DEADLINE_H_

#include <chrono>

#include "absl/time/time.h"
#include "grpcpp/server_context.h"

namespace rein {

// The call's deadline; absl::InfiniteFuture() when the client set none.
inline absl::Time DeadlineOf(const grpc::ServerContext& context) {
  const std::chrono::system_clock::time_point deadline = context.deadline();
  if (deadline == std::chrono::system_clock::time_point::max()) return absl::InfiniteFuture();
  return absl::FromChrono(deadline);
}

}  // namespace rein

#endif  // REIN_COMMON_GRPC_DEADLINE_H_
