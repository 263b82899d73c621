// What the router logs and counts about a committed transition.
#ifndef REIN_ROUTER_SERVICE_RUN_LOG_H_
#define REIN_ROUTER_SERVICE_RUN_LOG_H_

#include <vector>

#include "rein/v1/types.pb.h"

namespace rein {

// Logs and counts a committed transition of `run` (its state now; `before` its stage before):
// a run that ended or paused, and each failed stage attempt in `stored`.
void LogCommitted(const rein::v1::Run& run, rein::v1::Stage before,
                  const std::vector<rein::v1::RunEvent>& stored);

}  // namespace rein

#endif  // REIN_ROUTER_SERVICE_RUN_LOG_H_
