// Chooses and builds the planner's backend (`scripted` or `anthropic`) from its options.
#ifndef REIN_PLANNER_SERVICE_BACKEND_FACTORY_H_
#define REIN_PLANNER_SERVICE_BACKEND_FACTORY_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/clock.h"
#include "planner_service/planner_backend.h"

namespace rein {

// The planner's configuration, copied from main's flags.
struct PlannerOptions {
  std::string backend;  // "scripted", "anthropic", or empty: see ResolveBackendName
  std::string script;   // scripted: the JSON script file
  std::string model = "claude-sonnet-5";
  std::string api_key_file;        // anthropic: else ANTHROPIC_API_KEY
  std::string anthropic_base_url;  // anthropic: else ANTHROPIC_BASE_URL, else the public API
  std::string prompts_dir;         // anthropic: else DefaultPromptsDir() (stage_prompts.h)
};

// The backend `options` asks for: `options.backend` when set, else "scripted" when a script
// is given, else "anthropic".
std::string ResolveBackendName(const PlannerOptions& options);

// Builds the backend. INVALID_ARGUMENT for an unknown backend or options that do not fit it
// (a scripted backend without a script, a script given to another backend); the script's
// own load errors as ScriptedBackend::FromFile returns them. For `anthropic`:
// FAILED_PRECONDITION when no API key is found (--api_key_file, else ANTHROPIC_API_KEY) or the
// key file is empty, NOT_FOUND for a missing key file, the prompts' load errors
// (StagePrompts::Load) and INVALID_ARGUMENT for a bad base URL or key. No message shows the
// key. `clock` (not owned) must outlive the backend.
absl::StatusOr<std::unique_ptr<PlannerBackend>> MakePlannerBackend(const PlannerOptions& options,
                                                                   Clock* clock);

}  // namespace rein

#endif  // REIN_PLANNER_SERVICE_BACKEND_FACTORY_H_
