// Structured reasons on an absl::Status (rein.v1.ErrorInfo payloads).
#include "common/status_reason.h"

#include "absl/strings/cord.h"
#include "rein/v1/types.pb.h"

namespace rein {

absl::Status WithReason(absl::Status status, absl::string_view reason) {
  if (status.ok() || reason.empty()) return status;
  rein::v1::ErrorInfo info;
  info.set_reason(std::string(reason));
  info.set_domain(kErrorDomain);
  status.SetPayload(kErrorInfoPayloadUrl, absl::Cord(info.SerializeAsString()));
  return status;
}

std::string ReasonOf(const absl::Status& status) {
  if (status.ok()) return "";
  absl::optional<absl::Cord> payload = status.GetPayload(kErrorInfoPayloadUrl);
  if (!payload.has_value()) return "";
  rein::v1::ErrorInfo info;
  if (!info.ParseFromString(std::string(*payload))) return "";
  return info.reason();
}

}  // namespace rein
