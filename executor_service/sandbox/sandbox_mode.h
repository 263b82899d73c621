// How mutating tools are sandboxed (--sandbox): bubblewrap or, when the operator insists, not.
#ifndef REIN_EXECUTOR_SERVICE_SANDBOX_MODE_H_
#define REIN_EXECUTOR_SERVICE_SANDBOX_MODE_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace rein {

enum class SandboxMode {
  kBwrap,  // bubblewrap (the default)
  kNone,   // no sandbox; only with allow_unsandboxed
};

// "bwrap" or "none": the value of --sandbox that selects `mode`.
absl::string_view SandboxModeName(SandboxMode mode);

// The mode named `name` ("bwrap" or "none", as written on the command line);
// INVALID_ARGUMENT `must be bwrap or none, got "<name>"` for anything else.
absl::StatusOr<SandboxMode> ParseSandboxMode(absl::string_view name);

}  // namespace rein

#endif  // REIN_EXECUTOR_SERVICE_SANDBOX_MODE_H_
