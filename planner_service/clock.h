// Clock: the planner's source of time and of waiting, injected so tests never sleep.
#ifndef REIN_PLANNER_SERVICE_CLOCK_H_
#define REIN_PLANNER_SERVICE_CLOCK_H_

#include "absl/time/time.h"

namespace rein {

// Reads the time and waits. Implementations are thread-safe.
class Clock {
 public:
  virtual ~Clock() = default;

  virtual absl::Time Now() = 0;
  // Returns once Now() >= `until` (at once when `until` is not in the future).
  virtual void SleepUntil(absl::Time until) = 0;
};

// The wall clock. Never null, never deleted.
Clock* RealClock();

}  // namespace rein

#endif  // REIN_PLANNER_SERVICE_CLOCK_H_
