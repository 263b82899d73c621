// Structured reasons on an absl::Status: what code branches on instead of a message's text.
#ifndef REIN_COMMON_STATUS_REASON_H_
#define REIN_COMMON_STATUS_REASON_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace rein {

// The payload URL of a rein.v1.ErrorInfo attached to an absl::Status.
inline constexpr char kErrorInfoPayloadUrl[] = "type.googleapis.com/rein.v1.ErrorInfo";
inline constexpr char kErrorDomain[] = "rein.dev";

// Every reason one piece of rein tells apart in another's status. A new one is added here,
// with the code that sets it and the code that reads it named.
namespace reason {
// The store fenced a commit: another router owns the run now (RunStore::CommitOwned).
inline constexpr char kLeaseLost[] = "LEASE_LOST";
// The executor has no workspace of that name (ExecutorClient::CopyWorkspace, Execute).
inline constexpr char kWorkspaceNotFound[] = "WORKSPACE_NOT_FOUND";
// The executor kept no workspace snapshot for the asked point (CopyWorkspace.before_call).
inline constexpr char kSnapshotMissing[] = "SNAPSHOT_MISSING";
// The executor does not implement the call (an older executor).
inline constexpr char kNotSupported[] = "NOT_SUPPORTED";
// A namespace's quota refused a start (router_service/service/quotas.h; RESOURCE_EXHAUSTED).
inline constexpr char kQuotaExceeded[] = "QUOTA_EXCEEDED";
}  // namespace reason

// `status` with `reason` attached (unchanged when status is OK or reason is empty).
absl::Status WithReason(absl::Status status, absl::string_view reason);

// The reason attached to `status`, "" when none.
std::string ReasonOf(const absl::Status& status);

inline bool HasReason(const absl::Status& status, absl::string_view reason) {
  return !status.ok() && ReasonOf(status) == reason;
}

}  // namespace rein

#endif  // REIN_COMMON_STATUS_REASON_H_
