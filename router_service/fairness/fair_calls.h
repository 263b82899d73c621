// FairCalls: a run's planner and executor calls, admitted per namespace (CallGate).
#ifndef REIN_ROUTER_SERVICE_FAIRNESS_FAIR_CALLS_H_
#define REIN_ROUTER_SERVICE_FAIRNESS_FAIR_CALLS_H_

#include <functional>
#include <memory>
#include <string>

#include "router_service/clients.h"
#include "router_service/fairness/call_gate.h"
#include "router_service/transition.h"

namespace rein {

struct FairCallsOptions {
  // Calls in flight at once to the planner (Plan, Decide, Evaluate) and to the executors
  // (ListTools, Execute, the workspace check): --max_planner_calls, --max_executor_calls.
  // 0: no limit (every call is sent at once, and nothing is shared).
  int max_planner_calls = 0;
  int max_executor_calls = 0;
  // A namespace's weight (the quotas file's weight=, default 1); unset: all weigh 1.
  CallGate::WeightOf weight_of;
};

// Sends a run's calls (SendCall) through two gates, one per service, so that past the limits
// the slots go to the namespaces with calls waiting by weighted round-robin. Thread-safe.
class FairCalls {
 public:
  FairCalls(PlannerClient* planner, ExecutorClient* executor, FairCallsOptions options);

  // SendCall, in `share`'s turn: `done` gets the reply, or CANCELLED when the call is cancelled
  // before it is sent or Stop comes first.
  std::shared_ptr<PendingCall> Send(const std::string& share, const Effect& effect,
                                    std::function<void(StageReply)> done);
  // Answers every waiting call CANCELLED and sends no more (the engine stops dispatching).
  void Stop();

  CallGate& planner_gate() { return *planner_gate_; }
  CallGate& executor_gate() { return *executor_gate_; }

 private:
  PlannerClient* const planner_;
  ExecutorClient* const executor_;
  const std::shared_ptr<CallGate> planner_gate_;
  const std::shared_ptr<CallGate> executor_gate_;
};

}  // namespace rein

#endif  // REIN_ROUTER_SERVICE_FAIRNESS_FAIR_CALLS_H_
