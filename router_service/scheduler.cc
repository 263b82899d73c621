// Scheduler: wakes runs at times on the injected Clock.
#include "router_service/scheduler.h"

#include <utility>
#include <vector>

namespace rein {

Scheduler::Scheduler(Clock* clock, std::function<void(const std::string&)> fire)
    : clock_(clock), fire_(std::move(fire)) {}

Scheduler::~Scheduler() { Stop(); }

void Scheduler::Start() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = false;
  }
  thread_ = std::thread([this] { Loop(); });
}

void Scheduler::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

void Scheduler::WakeAt(absl::Time when, const std::string& run_id) {
  absl::MutexLock lock(&mu_);
  timers_.emplace(when, run_id);
}

int Scheduler::pending() {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(timers_.size());
}

absl::Time Scheduler::next_due() {
  absl::MutexLock lock(&mu_);
  return timers_.empty() ? absl::InfiniteFuture() : timers_.begin()->first;
}

void Scheduler::Loop() {
  while (true) {
    std::vector<std::string> due;
    {
      absl::MutexLock lock(&mu_);
      const absl::Time next = timers_.empty() ? absl::InfiniteFuture() : timers_.begin()->first;
      // Wake early when stopped or when a timer earlier than `next` is added.
      auto changed = [this, next]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stop_ || (!timers_.empty() && timers_.begin()->first < next);
      };
      clock_->AwaitWithDeadline(&mu_, absl::Condition(&changed), next);
      if (stop_) return;
      const absl::Time now = clock_->Now();
      while (!timers_.empty() && timers_.begin()->first <= now) {
        due.push_back(timers_.begin()->second);
        timers_.erase(timers_.begin());
      }
    }
    for (const std::string& id : due) fire_(id);
  }
}

}  // namespace rein
