// Clock: the one source of time and of timed waiting, injected so that tests never sleep.
#ifndef REIN_COMMON_CLOCK_H_
#define REIN_COMMON_CLOCK_H_

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace rein {

// Reads the time and waits on it. Every timed wait of a service goes through its Clock, so a
// fake clock (common/testing/fake_clock.h) drives timers, backoffs and deadlines in tests.
// Implementations are thread-safe.
class Clock {
 public:
  virtual ~Clock() = default;

  virtual absl::Time Now() = 0;

  // Returns once Now() >= `until` (at once when `until` is not in the future).
  virtual void SleepUntil(absl::Time until) = 0;

  // Like absl::Mutex::AwaitWithDeadline with `deadline` on this clock: `*mu` must be held; it
  // is released while waiting and held again on return. Returns whether `condition` holds,
  // which is false only when Now() reached `deadline` first. `condition` is re-evaluated
  // whenever `*mu` is released by another thread, as with absl::Mutex.
  virtual bool AwaitWithDeadline(absl::Mutex* mu, const absl::Condition& condition,
                                 absl::Time deadline) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) = 0;
};

// The wall clock. Never null, never deleted.
Clock* RealClock();

}  // namespace rein

#endif  // REIN_COMMON_CLOCK_H_
