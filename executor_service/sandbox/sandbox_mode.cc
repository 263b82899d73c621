// How mutating tools are sandboxed: the names of the modes.
#include "executor_service/sandbox/sandbox_mode.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace rein {

absl::string_view SandboxModeName(SandboxMode mode) {
  switch (mode) {
    case SandboxMode::kBwrap: return "bwrap";
    case SandboxMode::kNone: return "none";
  }
  return "bwrap";
}

absl::StatusOr<SandboxMode> ParseSandboxMode(absl::string_view name) {
  for (SandboxMode mode : {SandboxMode::kBwrap, SandboxMode::kNone}) {
    if (name == SandboxModeName(mode)) return mode;
  }
  return absl::InvalidArgumentError(absl::StrCat("must be bwrap or none, got \"", name, "\""));
}

}  // namespace rein
