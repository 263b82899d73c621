// CallGate: calls in flight up to a limit, the slots shared between namespaces by weight.
#include "router_service/fairness/call_gate.h"

#include <algorithm>
#include <atomic>
#include <utility>
#include <vector>

#include "common/metrics.h"

namespace rein {

class CallGate::Call final : public PendingCall {
 public:
  Call(std::weak_ptr<CallGate> gate, std::string share, Start start,
       std::function<void()> cancelled)
      : gate_(std::move(gate)),
        share_(std::move(share)),
        start_(std::move(start)),
        cancelled_(std::move(cancelled)) {}

  void Cancel() override {
    std::shared_ptr<CallGate> gate = gate_.lock();
    if (gate != nullptr && gate->Withdraw(this)) {
      AnswerCancelled();
      return;
    }
    std::shared_ptr<PendingCall> inner;
    {
      absl::MutexLock lock(&mu_);
      cancel_requested_ = true;
      inner = inner_;
    }
    if (inner != nullptr) inner->Cancel();
  }

  const std::string& share() const { return share_; }

  void AnswerCancelled() {
    if (!answered_.exchange(true) && cancelled_) cancelled_();
  }

  // Sends the call; `release` gives its slot back.
  void Begin(std::function<void()> release) {
    std::shared_ptr<PendingCall> inner = start_(std::move(release));
    bool cancel;
    {
      absl::MutexLock lock(&mu_);
      inner_ = inner;
      cancel = cancel_requested_;
    }
    // Cancelled while it was being sent: the call just made is cancelled now.
    if (cancel && inner != nullptr) inner->Cancel();
  }

  bool queued = false;  // guarded by the gate's mu_

 private:
  const std::weak_ptr<CallGate> gate_;
  const std::string share_;
  const Start start_;
  const std::function<void()> cancelled_;
  std::atomic<bool> answered_{false};
  absl::Mutex mu_;
  std::shared_ptr<PendingCall> inner_ ABSL_GUARDED_BY(mu_);
  bool cancel_requested_ ABSL_GUARDED_BY(mu_) = false;
};

std::shared_ptr<CallGate> CallGate::Make(int max_in_flight, WeightOf weight_of,
                                         std::string labels) {
  return std::shared_ptr<CallGate>(
      new CallGate(max_in_flight, std::move(weight_of), std::move(labels)));
}

void CallGate::CountWaitingLocked() {
  Metrics::Global().Set("rein_router_calls_waiting", waiting_, labels_);
}

std::shared_ptr<PendingCall> CallGate::Submit(const std::string& share, Start start,
                                              std::function<void()> cancelled) {
  if (max_in_flight_ <= 0) return start([] {});
  auto call =
      std::make_shared<Call>(weak_from_this(), share, std::move(start), std::move(cancelled));
  enum { kNow, kQueued, kStopped } what = kQueued;
  {
    absl::MutexLock lock(&mu_);
    if (stopped_) {
      what = kStopped;  // answered below, as a waiting call is when the gate stops
    } else if (in_flight_ < max_in_flight_ && waiting_ == 0) {
      ++in_flight_;
      what = kNow;
    } else {
      Share& queue = shares_[share];
      if (queue.calls.empty()) turns_.push_back(share);
      queue.calls.push_back(call);
      call->queued = true;
      ++waiting_;
      CountWaitingLocked();
      Metrics::Global().Add("rein_router_calls_waited_total", 1, labels_);
    }
  }
  if (what == kNow) {
    StartCall(call);
  } else if (what == kStopped) {
    call->AnswerCancelled();
  } else {
    Pump();  // a slot may have freed while this call was queued
  }
  return call;
}

void CallGate::StartCall(const std::shared_ptr<Call>& call) {
  auto released = std::make_shared<std::atomic<bool>>(false);
  call->Begin([gate = shared_from_this(), released] {
    if (!released->exchange(true)) gate->Release();
  });
}

void CallGate::Release() {
  {
    absl::MutexLock lock(&mu_);
    --in_flight_;
  }
  Pump();
}

void CallGate::Pump() {
  {
    absl::MutexLock lock(&mu_);
    if (pumping_) return;  // the thread pumping sees the freed slot on its next look
    pumping_ = true;
  }
  while (true) {
    std::shared_ptr<Call> next;
    {
      absl::MutexLock lock(&mu_);
      next = NextLocked();
      if (next == nullptr) {
        pumping_ = false;
        return;
      }
    }
    StartCall(next);
  }
}

std::shared_ptr<CallGate::Call> CallGate::NextLocked() {
  if (stopped_ || in_flight_ >= max_in_flight_ || turns_.empty()) return nullptr;
  const std::string share = turns_.front();
  auto it = shares_.find(share);
  Share& queue = it->second;
  std::shared_ptr<Call> call = std::move(queue.calls.front());
  queue.calls.pop_front();
  call->queued = false;
  --waiting_;
  CountWaitingLocked();
  ++in_flight_;
  const int weight = weight_of_ ? std::max(1, weight_of_(share)) : 1;
  if (queue.calls.empty()) {
    shares_.erase(it);
    turns_.pop_front();
  } else if (++queue.started_in_turn >= weight) {
    // Its turn is spent: to the back of the round.
    queue.started_in_turn = 0;
    turns_.pop_front();
    turns_.push_back(share);
  }
  return call;
}

bool CallGate::Withdraw(Call* call) {
  absl::MutexLock lock(&mu_);
  if (!call->queued) return false;
  call->queued = false;
  --waiting_;
  CountWaitingLocked();
  auto it = shares_.find(call->share());
  std::deque<std::shared_ptr<Call>>& calls = it->second.calls;
  calls.erase(std::find_if(calls.begin(), calls.end(),
                           [call](const std::shared_ptr<Call>& c) { return c.get() == call; }));
  if (calls.empty()) {
    shares_.erase(it);
    turns_.erase(std::find(turns_.begin(), turns_.end(), call->share()));
  }
  return true;
}

void CallGate::Stop() {
  std::vector<std::shared_ptr<Call>> answered;
  {
    absl::MutexLock lock(&mu_);
    stopped_ = true;
    for (auto& [share, queue] : shares_) {
      for (std::shared_ptr<Call>& call : queue.calls) {
        call->queued = false;
        answered.push_back(std::move(call));
      }
    }
    shares_.clear();
    turns_.clear();
    waiting_ = 0;
    CountWaitingLocked();
  }
  for (const std::shared_ptr<Call>& call : answered) call->AnswerCancelled();
}

int CallGate::in_flight() {
  absl::MutexLock lock(&mu_);
  return in_flight_;
}

int CallGate::waiting() {
  absl::MutexLock lock(&mu_);
  return waiting_;
}

}  // namespace rein
