// The values StageRouter trades with its driver: a Transition to commit, the Effect (the call)
// to make, the replies to those calls, and the options of the rules.
#ifndef REIN_ROUTER_SERVICE_TRANSITION_H_
#define REIN_ROUTER_SERVICE_TRANSITION_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "rein/v1/executor.pb.h"
#include "rein/v1/planner.pb.h"
#include "rein/v1/types.pb.h"
#include "router_service/children/child_effect.h"
#include "router_service/price_table.h"
#include "router_service/store/run_store.h"

namespace rein {

// The format of the event log this router writes, recorded on a run's first event
// (RunEvent.StageChanged.log_format, RunEvent.Forked.log_format). Replay (replay.h) reads logs
// of this format. 1: first events carry the format; Error events carry the failed reply's usage
// and, for router-judged invalid output, the reply itself. 2: the terminal Outcome carries the
// run's usage and cost; an Evaluation may carry a proposed next call (next_call,
// next_call_dropped) and a Decision may come from it (from_evaluation, no usage). 3: a Plan may
// carry a proposed first call (first_call, first_call_dropped) and a Decision may come from it
// (from_plan, no usage).
inline constexpr int32_t kLogFormat = 3;

// How an Error event's message begins, by the call that failed (the call's status message
// follows). Replay takes them off again to rebuild the call's status.
inline constexpr char kListToolsErrorPrefix[] = "executor ListTools: ";
inline constexpr char kWorkspaceCheckErrorPrefix[] = "executor workspace check: ";
inline constexpr char kExecuteErrorPrefix[] = "executor: ";

// The result of one transition: the new state (version + 1), the events it emits (seq left
// for the store to assign) and, at iteration boundaries, pauses and the end, a snapshot. The
// flags say what the driver must do about it beyond committing it; it infers none of them.
struct Transition {
  rein::v1::RunState state;
  std::vector<rein::v1::RunEvent> events;
  std::optional<Snapshot> snapshot;
  // A call's attempt failed (an Error event): the driver backs off before the next call.
  bool attempt_failed = false;
  // A failed attempt of a run with no cancel requested: a driver that is stopping (and so
  // cancelled the call itself) commits nothing for it; the call is made again after a start.
  bool void_when_stopping = false;
  // The transition marks a mutating call as sent (MarkDispatched): the driver commits it only
  // while its lease allows a mutating call.
  bool dispatches_mutating_call = false;
  // The run ends with this transition: after the commit, the driver tells the executors they
  // may forget the run's call journal (best effort).
  std::optional<rein::v1::ForgetRunRequest> forget_run;
};

// What the driver must do next for a run.
struct Effect {
  // kListTools then, when the executors offer file_info, kCheckWorkspace: the two calls of
  // INITIALIZING, made one after another with nothing committed between them.
  // kChildren: a WAITING parent's group (router_service/children), answered by the driver.
  enum class Kind {
    kNone,
    kListTools,
    kCheckWorkspace,
    kPlan,
    kDecide,
    kExecute,
    kEvaluate,
    kChildren
  };
  Kind kind = Kind::kNone;
  rein::v1::ListToolsRequest list_tools;  // kListTools: the run's namespace
  rein::v1::PlanRequest plan;
  rein::v1::DecideRequest decide;
  rein::v1::ExecuteRequest execute;  // kExecute, and kCheckWorkspace's file_info
  rein::v1::EvaluateRequest evaluate;
  rein::v1::ListToolsResponse tools;             // kCheckWorkspace: the tools listed just before
  ChildrenEffect children;                       // kChildren
  absl::Time deadline = absl::InfiniteFuture();  // min(now + stage_timeout, run deadline)
  // Whether this call is a mutating tool call (the lease must allow one).
  bool mutating = false;
};

// The replies to the calls of an Effect, one type per call (Effect::Kind). A non-OK status is
// the call's gRPC status.
struct ToolsListed {  // kListTools
  absl::StatusOr<rein::v1::ListToolsResponse> tools;
};
struct WorkspaceChecked {  // kCheckWorkspace: the executor's reply to file_info {"path": "."}
  rein::v1::ListToolsResponse tools;
  absl::StatusOr<rein::v1::ExecuteResponse> workspace;
};
struct Planned {  // kPlan
  absl::StatusOr<rein::v1::PlanResponse> reply;
};
struct Decided {  // kDecide
  absl::StatusOr<rein::v1::DecideResponse> reply;
};
struct Executed {  // kExecute
  absl::StatusOr<rein::v1::ExecuteResponse> reply;
};
struct Evaluated {  // kEvaluate
  absl::StatusOr<rein::v1::EvaluateResponse> reply;
};
// kChildren: ChildrenObserved (router_service/children/child_effect.h).
using StageReply = std::variant<ToolsListed, WorkspaceChecked, Planned, Decided, Executed,
                                Evaluated, ChildrenObserved>;

// Whether the executors offer file_info, with which a run's workspace is checked.
template <typename Tools>
bool HasFileInfo(const Tools& tools) {
  for (const rein::v1::ToolSpec& tool : tools) {
    if (tool.name() == "file_info") return true;
  }
  return false;
}

// file_info {"path": "."} in `workspace` of `namespace_name` (RunSpec.namespace): fails (a
// tool error) when the workspace is missing.
inline rein::v1::ExecuteRequest WorkspaceCheck(const std::string& run_id,
                                               const std::string& workspace,
                                               const std::string& namespace_name = "") {
  rein::v1::ExecuteRequest check;
  check.set_namespace_(namespace_name);
  check.set_call_id(run_id + "-workspace-check");
  check.set_run_id(run_id);
  check.set_workspace(workspace);
  check.set_tool("file_info");
  check.set_args_json(R"({"path":"."})");
  return check;
}

// Whether a run in `stage` has ended.
inline bool IsTerminalStage(rein::v1::Stage stage) {
  return stage == rein::v1::FINISHED || stage == rein::v1::FAILED || stage == rein::v1::CANCELLED;
}

// What a reply comes to (StageRouter::Apply): a transition to commit, or, with nothing to
// commit yet, the next call of the same stage (INITIALIZING's workspace check).
struct Applied {
  std::optional<Transition> transition;
  std::optional<Effect> call;
};

// Everything the driver must do next for a run with no call in flight (StageRouter::Next).
struct NextStep {
  enum class Kind {
    kEnded,      // the run is terminal: nothing more; the driver may forget it
    kIdle,       // PAUSED with no deadline: nothing until a review or a cancel
    kCommit,     // commit `transition` now, then ask again
    kWaitUntil,  // nothing to do before `until` (a paused run's deadline, a retry backoff)
    kCall,       // make `effect`'s call
  };
  Kind kind = Kind::kIdle;
  std::optional<Transition> transition;       // kCommit
  absl::Time until = absl::InfiniteFuture();  // kWaitUntil
  Effect effect;                              // kCall
};

struct StageRouterOptions {
  size_t max_observation_bytes = 8 * 1024;  // Action.observation and latest_observation cap
  int max_completed_in_plan = 20;           // completed summaries shown to Plan
  int max_human_inputs_in_request = 10;     // human inputs shown to Plan and Decide
  int decide_actions = 3;                   // recent actions shown to Decide
  int max_notes = 20;                       // notes kept in RunState
  int max_human_inputs = 50;                // human inputs kept in RunState
  // The router's --price_table: each model reply's cost (RunState.cost_used_usd) and rule 6's
  // cost budget. nullptr = none: replies of priced backends ("anthropic:<model>") then cost
  // nothing, and a run with a cost budget ends at its first such reply.
  std::shared_ptr<const PriceTable> prices;
};

}  // namespace rein

#endif  // REIN_ROUTER_SERVICE_TRANSITION_H_
