// WorkPool: the engine's workers, and the replies applied on the thread that received them.
#ifndef REIN_ROUTER_SERVICE_WORK_POOL_H_
#define REIN_ROUTER_SERVICE_WORK_POOL_H_

#include <deque>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"

namespace rein {

// A fixed pool of threads running posted work, and the count of replies applied inline (on a
// gRPC callback thread) instead: at most `max_inline` at once, and only when no work is queued
// (work queued before a reply goes first). Work is posted under a share (a run's namespace):
// each share's work runs in order, and the workers take from the shares with work queued in
// turn, one item each (round-robin), so a share with a thousand items queued delays another
// share's one item by at most one item per other share. Thread-safe.
class WorkPool {
 public:
  explicit WorkPool(int max_inline) : max_inline_(max_inline) {}
  ~WorkPool() { Stop(); }

  WorkPool(const WorkPool&) = delete;
  WorkPool& operator=(const WorkPool&) = delete;

  // Starts `workers` threads (at least one).
  void Start(int workers);
  // Queues `work` for a worker, in `share`'s turn.
  void Post(std::function<void()> work, const std::string& share = "");
  // Whether a reply may be applied on the calling thread now; if so, EndInline must follow
  // once it is applied. False once stopping.
  bool BeginInline();
  void EndInline();
  // Waits for the replies being applied inline and for the queued work, then ends the
  // workers. Idempotent. Returns whether workers had been started.
  bool Stop();

 private:
  void WorkerLoop();

  const int max_inline_;
  // Idle workers wait on queue_cv_, not with Mutex::Await: absl evaluates every Await
  // condition of the waiters at each unlock, which with dozens of idle workers made every
  // reply's BeginInline and EndInline scan them all.
  absl::Mutex mu_;
  absl::CondVar queue_cv_;   // work was queued, or stopping_
  absl::CondVar inline_cv_;  // inline_active_ reached 0
  std::map<std::string, std::deque<std::function<void()>>> queues_ ABSL_GUARDED_BY(mu_);
  std::deque<std::string> turns_ ABSL_GUARDED_BY(mu_);  // the shares with work queued, in turn
  size_t queued_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  int inline_active_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::thread> workers_;
};

}  // namespace rein

#endif  // REIN_ROUTER_SERVICE_WORK_POOL_H_
