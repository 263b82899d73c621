// The wall clock behind Clock.
#include "common/clock.h"

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

  bool AwaitWithDeadline(absl::Mutex* mu, const absl::Condition& condition,
                         absl::Time deadline) override ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    return mu->AwaitWithDeadline(condition, deadline);
  }
};

}  // namespace

Clock* RealClock() {
  static WallClock* clock = new WallClock();
  return clock;
}

}  // namespace rein
