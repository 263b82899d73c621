// One real rein-router process for a benchmark, and what a benchmark reads back from it: the
// iteration times of a run from its events.
#ifndef REIN_BENCH_ROUTER_PROCESS_H_
#define REIN_BENCH_ROUTER_PROCESS_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "bench/bench_util.h"
#include "rein/v1/router.grpc.pb.h"

namespace rein::bench {

// A loopback TCP port free a moment ago.
int FreePort();

// A rein-router child process: its stderr in <dir>/router.log, SIGKILLed when the benchmark
// ends (whatever ends it) and by the watchdog on a timeout. Not thread-safe; stub() is.
class RouterProcess {
 public:
  explicit RouterProcess(Watchdog* watchdog) : watchdog_(watchdog) {}
  ~RouterProcess() { Stop(absl::ZeroDuration()); }
  RouterProcess(const RouterProcess&) = delete;
  RouterProcess& operator=(const RouterProcess&) = delete;

  // Runs `binary` with --listen on a free loopback port and `flags`, and waits up to 30 s for it
  // to accept connections; false (with a message naming its log) when it did not.
  bool Start(const std::string& binary, const std::string& dir,
             const std::vector<std::string>& flags);
  // Sends SIGTERM and waits up to `grace` for the router to exit (none: no SIGTERM), then
  // SIGKILLs it. Does nothing once stopped.
  void Stop(absl::Duration grace);

  rein::v1::Router::Stub* stub() { return stub_.get(); }
  pid_t pid() const { return pid_; }

 private:
  Watchdog* const watchdog_;
  pid_t pid_ = -1;
  std::unique_ptr<rein::v1::Router::Stub> stub_;
};

// A run's iteration times from its events: the gaps between its entries into DECIDING from
// EVALUATING (one iteration each), the bytes of its events and the time of the last one.
struct IterationGaps {
  std::vector<double> us;
  int64_t last = -1;
  size_t event_bytes = 0;
  absl::Time last_time = absl::InfinitePast();

  // Counts one event of run `run_id`; says on stderr when the run ended short of its goal.
  void Add(const std::string& run_id, const rein::v1::RunEvent& e);
};

// Follows the run with WatchRun from its first event to its end (or for `limit`).
IterationGaps WatchToEnd(rein::v1::Router::Stub* stub, const std::string& run_id,
                         absl::Duration limit);

}  // namespace rein::bench

#endif  // REIN_BENCH_ROUTER_PROCESS_H_
