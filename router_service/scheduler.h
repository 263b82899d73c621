// Scheduler: wakes runs at times on the injected Clock (retry backoffs, pause deadlines).
#ifndef REIN_ROUTER_SERVICE_SCHEDULER_H_
#define REIN_ROUTER_SERVICE_SCHEDULER_H_

#include <functional>
#include <map>
#include <string>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"

namespace rein {

// Calls `fire(run_id)` once for every WakeAt(when, run_id), on its own thread, as soon as the
// clock reaches `when`. `fire` must not block for long (it should hand the work on). Waits on
// the clock only (no polling), so a FakeClock drives it entirely. Thread-safe.
class Scheduler {
 public:
  Scheduler(Clock* clock, std::function<void(const std::string& run_id)> fire);
  ~Scheduler();  // Stop()

  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Starts the thread. At most once.
  void Start();
  // Stops the thread; timers not yet due are dropped. Idempotent.
  void Stop();

  void WakeAt(absl::Time when, const std::string& run_id);

  // Timers not yet fired, and the earliest one (InfiniteFuture when none).
  int pending();
  absl::Time next_due();

 private:
  void Loop();

  Clock* const clock_;
  const std::function<void(const std::string&)> fire_;
  absl::Mutex mu_;
  std::multimap<absl::Time, std::string> timers_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace rein

#endif  // REIN_ROUTER_SERVICE_SCHEDULER_H_
