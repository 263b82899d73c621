// CallGate: calls in flight up to a limit, the slots shared between namespaces by weight.
#ifndef REIN_ROUTER_SERVICE_FAIRNESS_CALL_GATE_H_
#define REIN_ROUTER_SERVICE_FAIRNESS_CALL_GATE_H_

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "router_service/clients.h"

namespace rein {

// Admits asynchronous calls (to the planner, or to the executors) up to `max_in_flight` at
// once. A call past the limit waits in its share's queue (a run's namespace); when a slot
// frees, the shares with calls waiting are served by weighted round-robin: in its turn a share
// starts up to its weight of calls, then goes to the back. So a share with a thousand calls
// waiting delays another share's one call by at most the weights of the shares ahead of it in
// the turn, never by the thousand. Within a share, calls start in the order submitted.
// max_in_flight 0: no limit, every call starts at once. Thread-safe.
class CallGate : public std::enable_shared_from_this<CallGate> {
 public:
  // Sends the call; `release` must run once when its reply arrives (before the reply is
  // applied, so that the slot goes to the next call at once).
  using Start = std::function<std::shared_ptr<PendingCall>(std::function<void()> release)>;
  // A share's weight (at least 1 is used); unset: every share weighs 1.
  using WeightOf = std::function<int(const std::string& share)>;

  // Made shared: a waiting call's handle outlives nothing it refers to. `labels` label the
  // gate's metrics: rein_router_calls_waited_total (calls that waited for a slot) and the
  // gauge rein_router_calls_waiting (calls waiting now).
  static std::shared_ptr<CallGate> Make(int max_in_flight, WeightOf weight_of = nullptr,
                                        std::string labels = "");

  // Starts `start` now if a slot is free and no call waits, else queues it in `share`'s turn.
  // `cancelled` answers the call CANCELLED without sending it: it runs (once, on the
  // cancelling thread) instead of `start` when the returned handle is cancelled while the call
  // waits, or when the gate stops. Cancelling a started call cancels what `start` returned.
  std::shared_ptr<PendingCall> Submit(const std::string& share, Start start,
                                      std::function<void()> cancelled);
  // Answers every waiting call with `cancelled`; calls submitted after are answered so at once.
  // Calls already started go on.
  void Stop();

  int in_flight();
  int waiting();
  int max_in_flight() const { return max_in_flight_; }

 private:
  class Call;
  struct Share {
    std::deque<std::shared_ptr<Call>> calls;
    int started_in_turn = 0;
  };

  CallGate(int max_in_flight, WeightOf weight_of, std::string labels)
      : max_in_flight_(max_in_flight),
        weight_of_(std::move(weight_of)),
        labels_(std::move(labels)) {}

  // Starts waiting calls while slots are free; one thread at a time does it, the others leave it
  // to that one (a call whose reply comes back inside its start releases its slot in there).
  void Pump();
  // The next call to start, its slot taken; nullptr when no slot is free or no call waits.
  std::shared_ptr<Call> NextLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Release();
  // Takes a waiting call out of its queue; false when it is not waiting (started, answered).
  bool Withdraw(Call* call);
  void StartCall(const std::shared_ptr<Call>& call);
  // The gauge of calls waiting, after waiting_ changed.
  void CountWaitingLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const int max_in_flight_;
  const WeightOf weight_of_;
  const std::string labels_;
  absl::Mutex mu_;
  std::map<std::string, Share> shares_ ABSL_GUARDED_BY(mu_);
  std::deque<std::string> turns_ ABSL_GUARDED_BY(mu_);  // shares with calls waiting, in turn
  int in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  int waiting_ ABSL_GUARDED_BY(mu_) = 0;
  bool pumping_ ABSL_GUARDED_BY(mu_) = false;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace rein

#endif  // REIN_ROUTER_SERVICE_FAIRNESS_CALL_GATE_H_
