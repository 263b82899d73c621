// Token usage carried by an error: a planner reply that failed validation still cost tokens,
// and the router counts them against the run's token budget.
#ifndef REIN_COMMON_USAGE_PAYLOAD_H_
#define REIN_COMMON_USAGE_PAYLOAD_H_

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/cord.h"
#include "rein/v1/types.pb.h"

namespace rein {

// The absl::Status payload URL, and the gRPC trailing-metadata key that carries it on the wire.
inline constexpr char kUsagePayloadUrl[] = "type.googleapis.com/rein.v1.Usage";
inline constexpr char kUsageTrailer[] = "rein-usage-bin";

// `status` with `usage` attached (unchanged when status is OK or usage is empty).
inline absl::Status WithUsage(absl::Status status, const rein::v1::Usage& usage) {
  if (status.ok() || usage.ByteSizeLong() == 0) return status;
  status.SetPayload(kUsagePayloadUrl, absl::Cord(usage.SerializeAsString()));
  return status;
}

// The usage attached to `status`, if any.
inline std::optional<rein::v1::Usage> UsageOf(const absl::Status& status) {
  absl::optional<absl::Cord> payload = status.GetPayload(kUsagePayloadUrl);
  if (!payload.has_value()) return std::nullopt;
  rein::v1::Usage usage;
  if (!usage.ParseFromString(std::string(*payload))) return std::nullopt;
  return usage;
}

}  // namespace rein

#endif  // REIN_COMMON_USAGE_PAYLOAD_H_
