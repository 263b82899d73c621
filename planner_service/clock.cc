// The wall clock behind Clock.
#include "planner_service/clock.h"

#include "absl/time/clock.h"

namespace rein {
namespace {

class WallClock final : public Clock {
 public:
  absl::Time Now() override { return absl::Now(); }
  void SleepUntil(absl::Time until) override {
    absl::Duration left = until - absl::Now();
    if (left > absl::ZeroDuration()) absl::SleepFor(left);
  }
};

}  // namespace

Clock* RealClock() {
  static WallClock* clock = new WallClock();
  return clock;
}

}  // namespace rein
