// StatusCodeName: the canonical upper-case name of a status code, with no gRPC dependency.
#ifndef REIN_COMMON_STATUS_NAME_H_
#define REIN_COMMON_STATUS_NAME_H_

#include <string>

#include "absl/status/status.h"

namespace rein {

// The canonical upper-case name of a code, e.g. "UNAVAILABLE" or "DEADLINE_EXCEEDED" (the
// names gRPC and Abseil share for the same numbers).
std::string StatusCodeName(absl::StatusCode code);

}  // namespace rein

#endif  // REIN_COMMON_STATUS_NAME_H_
