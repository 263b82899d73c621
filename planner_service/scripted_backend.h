// ScriptedBackend: a PlannerBackend that answers from a JSON script of stage rules, for tests
// and the offline demo (format in planner_service/SCRIPT.md).
#ifndef REIN_PLANNER_SERVICE_SCRIPTED_BACKEND_H_
#define REIN_PLANNER_SERVICE_SCRIPTED_BACKEND_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "planner_service/planner_backend.h"
#include "rein/v1/planner.pb.h"

namespace rein {

// Answers each stage with the first rule of that stage whose `when` matches the request.
// The script is validated completely when it loads; afterwards the backend is immutable, so it
// is thread-safe and stateless: the same request always gets the same reply.
class ScriptedBackend final : public PlannerBackend {
 public:
  // Parses and validates `text`. Every problem is INVALID_ARGUMENT reading
  // "<source>: <json path>: <problem>", e.g. "script.json: decide[2].reply.toolCall: ...".
  // `clock` (not owned) must outlive the backend.
  static absl::StatusOr<std::unique_ptr<ScriptedBackend>> FromJson(absl::string_view text,
                                                                   absl::string_view source,
                                                                   Clock* clock);
  // Reads `path` and calls FromJson with the path as source. A missing or unreadable file
  // is NOT_FOUND / FAILED_PRECONDITION naming the path.
  static absl::StatusOr<std::unique_ptr<ScriptedBackend>> FromFile(const std::string& path,
                                                                   Clock* clock);

  ~ScriptedBackend() override;

  absl::StatusOr<rein::v1::PlanResponse> Plan(const rein::v1::PlanRequest& request,
                                              absl::Time deadline) override;
  absl::StatusOr<rein::v1::DecideResponse> Decide(const rein::v1::DecideRequest& request,
                                                  absl::Time deadline) override;
  absl::StatusOr<rein::v1::EvaluateResponse> Evaluate(const rein::v1::EvaluateRequest& request,
                                                      absl::Time deadline) override;

  std::string name() const override { return "scripted"; }

 private:
  struct Script;  // the validated rules, defined in scripted_backend.cc

  ScriptedBackend(std::unique_ptr<const Script> script, Clock* clock);

  const std::unique_ptr<const Script> script_;
  Clock* const clock_;
};

}  // namespace rein

#endif  // REIN_PLANNER_SERVICE_SCRIPTED_BACKEND_H_
