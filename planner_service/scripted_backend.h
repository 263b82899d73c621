// ScriptedBackend: a PlannerBackend that answers from a script of stage rules, for tests and
// the offline demo (format in planner_service/SCRIPT.md).
#ifndef REIN_PLANNER_SERVICE_SCRIPTED_BACKEND_H_
#define REIN_PLANNER_SERVICE_SCRIPTED_BACKEND_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "planner_service/planner_backend.h"
#include "planner_service/script.h"
#include "rein/v1/planner.pb.h"

namespace rein {

// Answers each stage with the first rule of that stage whose `when` matches the request.
// The script was validated completely when it was parsed; the backend never changes it, so it
// is thread-safe and stateless: the same request always gets the same reply.
class ScriptedBackend final : public PlannerBackend {
 public:
  // `clock` (not owned) must outlive the backend.
  ScriptedBackend(Script script, Clock* clock);

  // ParseScript(text, source), then a backend over it; the errors are ParseScript's.
  static absl::StatusOr<std::unique_ptr<ScriptedBackend>> FromJson(absl::string_view text,
                                                                   absl::string_view source,
                                                                   Clock* clock);
  // LoadScriptFile(path), then a backend over it; the errors are LoadScriptFile's.
  static absl::StatusOr<std::unique_ptr<ScriptedBackend>> FromFile(const std::string& path,
                                                                   Clock* clock);

  absl::StatusOr<rein::v1::PlanResponse> Plan(const rein::v1::PlanRequest& request,
                                              absl::Time deadline) override;
  absl::StatusOr<rein::v1::DecideResponse> Decide(const rein::v1::DecideRequest& request,
                                                  absl::Time deadline) override;
  absl::StatusOr<rein::v1::EvaluateResponse> Evaluate(const rein::v1::EvaluateRequest& request,
                                                      absl::Time deadline) override;

  std::string name() const override { return "scripted"; }

 private:
  const Script script_;
  Clock* const clock_;
};

}  // namespace rein

#endif  // REIN_PLANNER_SERVICE_SCRIPTED_BACKEND_H_
