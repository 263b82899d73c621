// NormalizeSpec: validation of a client's RunSpec and its defaults.
#ifndef REIN_ROUTER_SERVICE_SPEC_H_
#define REIN_ROUTER_SERVICE_SPEC_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "google/protobuf/message.h"
#include "rein/v1/executor.pb.h"
#include "rein/v1/router.pb.h"
#include "rein/v1/types.pb.h"

namespace rein {

// A run id as a client sends it: present and of a sane length (INVALID_ARGUMENT naming run_id).
absl::Status CheckRunId(const std::string& run_id);

// INVALID_ARGUMENT naming stage, outcome or page_size when ListRuns cannot take them.
absl::Status CheckListRuns(const rein::v1::ListRunsRequest& request);

// INVALID_ARGUMENT naming request_id (longer than 128 bytes, or with the prefix "child:" the
// router keeps for child runs) or spec (missing, or with the router's spec.parent) when
// StartRun cannot take the request; the spec itself is NormalizeSpec's.
absl::Status CheckStartRun(const rein::v1::StartRunRequest& request);

// INVALID_ARGUMENT naming run_id, request_id (as for StartRun) or at when ForkRun cannot take
// the request; the edits are checked against the source's state (StageRouter::Fork).
absl::Status CheckForkRun(const rein::v1::ForkRunRequest& request);

// Validates a client's spec against the tools executors offer and fills in every default.
// Errors are INVALID_ARGUMENT naming the field (e.g. "spec.limits.max_iterations: ...").
// Every floating-point field, at any depth, must be finite. Whether the workspace exists is
// not checked here (that needs an executor).
absl::StatusOr<rein::v1::RunSpec> NormalizeSpec(const rein::v1::RunSpec& spec,
                                                const std::vector<rein::v1::ToolSpec>& known_tools);

// NormalizeSpec's check of the limits alone, with their defaults filled in: INVALID_ARGUMENT
// naming the field under `path`, which names `limits` itself ("spec.limits" for StartRun,
// "edits.limits" for the limits a ForkRun changes).
absl::Status NormalizeLimits(rein::v1::Limits* limits, const std::string& path);

// INVALID_ARGUMENT naming the first double or float field of `message` (at any depth, in
// repeated fields and map values too) that is NaN or infinite, e.g. "spec.model.temperature:
// must be a finite number, got nan". `path` names `message` itself.
absl::Status CheckFiniteNumbers(const google::protobuf::Message& message, const std::string& path);

}  // namespace rein

#endif  // REIN_ROUTER_SERVICE_SPEC_H_
