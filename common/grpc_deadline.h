// The one reading of a gRPC server call's deadline as an absl::Time.
#ifndef REIN_COMMON_GRPC_DEADLINE_H_
#define REIN_COMMON_GRPC_DEADLINE_H_

#include <chrono>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "grpcpp/server_context.h"

namespace rein {

// The call's deadline; absl::InfiniteFuture() when the client set none.
inline absl::Time DeadlineOf(const grpc::ServerContext& context) {
  const std::chrono::system_clock::time_point deadline = context.deadline();
  if (deadline == std::chrono::system_clock::time_point::max()) return absl::InfiniteFuture();
  return absl::FromChrono(deadline);
}

// The call's deadline on `clock`, the service's injected Clock: the time the caller has left
// (read once, here, against the wall clock its deadline is on), from clock->Now();
// absl::InfiniteFuture() when the client set none.
inline absl::Time DeadlineOn(const grpc::ServerContextBase& context, Clock* clock) {
  const std::chrono::system_clock::time_point deadline = context.deadline();
  if (deadline == std::chrono::system_clock::time_point::max()) return absl::InfiniteFuture();
  return clock->Now() + (absl::FromChrono(deadline) - absl::Now());
}

}  // namespace rein

#endif  // REIN_COMMON_GRPC_DEADLINE_H_
