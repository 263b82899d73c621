// Step: the builder of one transition, and the rules every transition applies (the ends, the
// pauses, the moves between stages, the retry budget, the charge of a model reply).
#ifndef REIN_ROUTER_SERVICE_STEP_H_
#define REIN_ROUTER_SERVICE_STEP_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "google/protobuf/message.h"
#include "rein/v1/types.pb.h"
#include "router_service/price_table.h"
#include "router_service/subtasks.h"
#include "router_service/transition.h"

namespace rein {

// Whether a planner error code is one that retrying cannot fix (PLANNER_ERROR at once).
bool IsFatalPlannerError(absl::StatusCode code);

// Keeps `used` for the next Step on this thread to copy into (StageRouter::Recycle).
void RecycleState(rein::v1::RunState&& used);

// Builds one transition: a copy of the state with version + 1, and its events.
class Step {
 public:
  // A copy of the run's state (into one handed back by RecycleState, when there is one) at
  // version + 1.
  Step(const rein::v1::Run& run, absl::Time now);

  const rein::v1::Run& run() const { return run_; }
  const rein::v1::RunSpec& spec() const { return run_.spec(); }
  const rein::v1::RunState& old() const { return run_.state(); }
  rein::v1::RunState& state() { return state_; }
  const rein::v1::RunState& state() const { return state_; }
  absl::Time now() const { return now_; }

  rein::v1::RunEvent* AddEvent() {
    events_.emplace_back();
    return &events_.back();
  }
  std::vector<rein::v1::RunEvent>& events() { return events_; }

  // A reply of this step could not be priced while the run has a cost budget (ChargeReply):
  // rule 6's cost budget then ends the run, whatever the counters say.
  const std::optional<std::string>& unpriced() const { return unpriced_; }
  void set_unpriced(std::string why) { unpriced_ = std::move(why); }

  void MoveTo(rein::v1::Stage next) {
    if (state_.stage() == next) return;
    auto* changed = AddEvent()->mutable_stage_changed();
    changed->set_from(state_.stage());
    changed->set_to(next);
    state_.set_stage(next);
  }

  // The transition: the events stamped with the run id, time and version, a snapshot at
  // iteration boundaries, pauses and the end, and what the driver must do about it.
  Transition Finish() &&;

 private:
  const rein::v1::Run& run_;
  absl::Time now_;
  rein::v1::RunState state_;
  std::vector<rein::v1::RunEvent> events_;
  std::optional<std::string> unpriced_;
};

void Terminate(Step& s, rein::v1::Stage status, rein::v1::TerminationReason reason,
               const std::string& message);

// Applies rules 1-6; returns true when the run ended. A reply that could not be priced under a
// cost budget counts as over it (the last check of rule 6).
bool EndIfLimited(Step& s, bool begins_iteration);

void SetPause(Step& s, rein::v1::Pause pause);

// Pauses after rules 1-6 (a limit that fires wins over the pause).
void PauseRun(Step& s, rein::v1::Pause pause);

void FinishRun(Step& s);

// Moves into a working stage after rules 1-6; an iteration begins when entering PLANNING or
// DECIDING from another stage.
void Enter(Step& s, rein::v1::Stage next);

// Spends one unit of the retry budget for a failed stage attempt and stays in the stage.
// Returns the error event (valid until the next AddEvent) so callers can add to it.
rein::v1::RunEvent::Error* SpendRetry(Step& s, rein::v1::Stage stage, const std::string& code,
                                      const std::string& message);

// A planner error: fatal ones end the run at once, others spend a retry.
void PlannerFailed(Step& s, rein::v1::Stage stage, const absl::Status& status,
                   const PriceTable* prices);

// The router judged the planner's `reply` invalid; the reply is kept in the event for replay.
void InvalidOutput(Step& s, rein::v1::Stage stage, const std::string& what,
                   const google::protobuf::Message& reply);

// Adds `usage` to `total`, field by field.
void AddUsage(rein::v1::Usage* total, const rein::v1::Usage& usage);

// Adds one model reply's usage to the run: tokens_used (input, cache reads and writes, and
// output: the token budget's counter), the usage split and its cost at `backend`'s price
// ("anthropic:<model>"; other backends cost nothing). A reply that cannot be priced adds no
// cost; under a cost budget it marks the step (Step::unpriced), which ends the run.
void ChargeReply(Step& s, const rein::v1::Usage& usage, const std::string& backend,
                 const PriceTable* prices);

// The backend a reply names, else (an older planner) the run's last one.
std::string BackendOf(const rein::v1::RunState& st, const std::string& backend);

void AddNote(Step& s, const std::string& notes, int max_notes);

bool PausesOnNotes(const rein::v1::RunSpec& spec);

bool CombinesEvaluateDecide(const rein::v1::RunSpec& spec);

bool CombinesPlanDecide(const rein::v1::RunSpec& spec);

bool HasPausePoint(const rein::v1::RunSpec& spec, rein::v1::PausePoint point);

rein::v1::Pause MakePause(rein::v1::PauseReason reason, rein::v1::Stage resume,
                          const std::string& detail);

// Where the loop goes after EVALUATING (or after a review that finished an evaluation).
rein::v1::Stage NextAfterEvaluation(const rein::v1::RunState& st);

// Goes to `next` from EVALUATING: rules 1-6, then stagnation (rule 7), then pauses, then the
// move. `pause` is a candidate pause (reason unset = none).
void ContinueAfterEvaluation(Step& s, rein::v1::Stage next, rein::v1::Pause pause);

// Whether a tool error says the run's workspace does not exist (reason WORKSPACE_NOT_FOUND).
bool IsWorkspaceMissing(const rein::v1::ToolError& error);

std::string WorkspaceGoneMessage(const rein::v1::Run& run, const rein::v1::ToolError& error);

}  // namespace rein

#endif  // REIN_ROUTER_SERVICE_STEP_H_
