// FakeClock: a Clock for tests whose SleepUntil returns at once and moves time forward.
#ifndef REIN_PLANNER_SERVICE_TESTING_FAKE_CLOCK_H_
#define REIN_PLANNER_SERVICE_TESTING_FAKE_CLOCK_H_

#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "planner_service/clock.h"

namespace rein {

// Time stands still until SleepUntil or Advance moves it. Every SleepUntil target is recorded.
// Thread-safe.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(absl::Time start = absl::FromUnixSeconds(1700000000)) : now_(start) {}

  absl::Time Now() override {
    absl::MutexLock lock(&mu_);
    return now_;
  }

  void SleepUntil(absl::Time until) override {
    absl::MutexLock lock(&mu_);
    sleeps_.push_back(until);
    if (until > now_) now_ = until;
  }

  void Advance(absl::Duration d) {
    absl::MutexLock lock(&mu_);
    now_ += d;
  }

  // The targets of every SleepUntil call so far, in order.
  std::vector<absl::Time> sleeps() {
    absl::MutexLock lock(&mu_);
    return sleeps_;
  }

 private:
  absl::Mutex mu_;
  absl::Time now_ ABSL_GUARDED_BY(mu_);
  std::vector<absl::Time> sleeps_ ABSL_GUARDED_BY(mu_);
};

}  // namespace rein

#endif  // REIN_PLANNER_SERVICE_TESTING_FAKE_CLOCK_H_
