// Chooses and builds the planner's backend from its options.
#include "planner_service/backend_factory.h"

#include "absl/strings/str_cat.h"
#include "planner_service/scripted_backend.h"

namespace rein {

std::string ResolveBackendName(const PlannerOptions& options) {
  if (!options.backend.empty()) return options.backend;
  return options.script.empty() ? "anthropic" : "scripted";
}

absl::StatusOr<std::unique_ptr<PlannerBackend>> MakePlannerBackend(const PlannerOptions& options,
                                                                   Clock* clock) {
  const std::string name = ResolveBackendName(options);
  if (name == "scripted") {
    if (options.script.empty()) {
      return absl::InvalidArgumentError("--backend=scripted needs --script=FILE");
    }
    absl::StatusOr<std::unique_ptr<ScriptedBackend>> backend =
        ScriptedBackend::FromFile(options.script, clock);
    if (!backend.ok()) return backend.status();
    return std::unique_ptr<PlannerBackend>(*std::move(backend));
  }
  if (name == "anthropic") {
    if (!options.script.empty()) {
      return absl::InvalidArgumentError("--script is only for --backend=scripted");
    }
    return absl::UnimplementedError("anthropic backend not built yet");
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown --backend=", name, " (known: scripted, anthropic)"));
}

}  // namespace rein
