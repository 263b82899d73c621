// FairCalls: a run's planner and executor calls, admitted per namespace (CallGate).
#include "router_service/fairness/fair_calls.h"

#include <utility>

#include "router_service/stage_calls.h"

namespace rein {
namespace {

template <typename T>
std::shared_ptr<PendingCall> NotSent(const ReplyCallback<T>& done) {
  done(absl::CancelledError("cancelled while waiting for a slot; the call was not sent"));
  return nullptr;
}

// Answers every call CANCELLED at once: the reply of a call cancelled before it was sent, in
// the shape SendCall gives its effect's reply.
class NotSentClients final : public PlannerClient, public ExecutorClient {
 public:
  std::shared_ptr<PendingCall> Plan(const rein::v1::PlanRequest&, absl::Time,
                                    ReplyCallback<rein::v1::PlanResponse> done) override {
    return NotSent(done);
  }
  std::shared_ptr<PendingCall> Decide(const rein::v1::DecideRequest&, absl::Time,
                                      ReplyCallback<rein::v1::DecideResponse> done) override {
    return NotSent(done);
  }
  std::shared_ptr<PendingCall> Evaluate(const rein::v1::EvaluateRequest&, absl::Time,
                                        ReplyCallback<rein::v1::EvaluateResponse> done) override {
    return NotSent(done);
  }
  std::shared_ptr<PendingCall> ListTools(const rein::v1::ListToolsRequest&, absl::Time,
                                         ReplyCallback<rein::v1::ListToolsResponse> done) override {
    return NotSent(done);
  }
  std::shared_ptr<PendingCall> Execute(const rein::v1::ExecuteRequest&, absl::Time,
                                       ReplyCallback<rein::v1::ExecuteResponse> done) override {
    return NotSent(done);
  }
};

bool ToPlanner(Effect::Kind kind) {
  return kind == Effect::Kind::kPlan || kind == Effect::Kind::kDecide ||
         kind == Effect::Kind::kEvaluate;
}

}  // namespace

FairCalls::FairCalls(PlannerClient* planner, ExecutorClient* executor, FairCallsOptions options)
    : planner_(planner),
      executor_(executor),
      planner_gate_(
          CallGate::Make(options.max_planner_calls, options.weight_of, R"(to="planner")")),
      executor_gate_(
          CallGate::Make(options.max_executor_calls, options.weight_of, R"(to="executor")")) {}

std::shared_ptr<PendingCall> FairCalls::Send(const std::string& share, const Effect& effect,
                                             std::function<void(StageReply)> done) {
  if (effect.kind == Effect::Kind::kNone) return nullptr;
  CallGate& gate = ToPlanner(effect.kind) ? *planner_gate_ : *executor_gate_;
  // No limit: sent as it is, with nothing copied.
  if (gate.max_in_flight() <= 0) return SendCall(planner_, executor_, effect, std::move(done));
  // The call may wait: it keeps its own copy of the effect.
  auto waiting = std::make_shared<const Effect>(effect);
  auto shared_done = std::make_shared<std::function<void(StageReply)>>(std::move(done));
  return gate.Submit(
      share,
      [this, waiting, shared_done](std::function<void()> release) {
        return SendCall(planner_, executor_, *waiting,
                        [release = std::move(release), shared_done](StageReply reply) {
                          release();  // the slot goes to the next call before this reply applies
                          (*shared_done)(std::move(reply));
                        });
      },
      [waiting, shared_done] {
        NotSentClients not_sent;
        SendCall(&not_sent, &not_sent, *waiting, *shared_done);
      });
}

void FairCalls::Stop() {
  planner_gate_->Stop();
  executor_gate_->Stop();
}

}  // namespace rein
