// WorkPool: the engine's workers, and the replies applied on the thread that received them.
#include "router_service/work_pool.h"

#include <algorithm>
#include <utility>

#include "common/metrics.h"

namespace rein {

void WorkPool::Start(int workers) {
  for (int i = 0; i < std::max(1, workers); ++i) {
    workers_.emplace_back([this] { WorkerLoop(); });
  }
}

void WorkPool::Post(std::function<void()> work) {
  absl::MutexLock lock(&mu_);
  queue_.push_back(std::move(work));
  queue_cv_.Signal();
}

bool WorkPool::BeginInline() {
  if (max_inline_ <= 0) return false;
  absl::MutexLock lock(&mu_);
  // Work queued before this reply goes first (the workers have it); so does shutdown.
  if (stopping_ || !queue_.empty() || inline_active_ >= max_inline_) {
    Metrics::Global().Add("rein_router_replies_queued_total", 1,
                          !queue_.empty() ? "why=\"queued\"" : "why=\"busy\"");
    return false;
  }
  ++inline_active_;
  return true;
}

void WorkPool::EndInline() {
  absl::MutexLock lock(&mu_);
  if (--inline_active_ == 0) inline_cv_.SignalAll();
}

bool WorkPool::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    queue_cv_.SignalAll();
    // A reply being applied on a gRPC thread is waited for like the workers' work below (no
    // new one starts once stopping_ is set).
    while (inline_active_ > 0) inline_cv_.Wait(&mu_);
  }
  const bool started = !workers_.empty();
  for (std::thread& worker : workers_) worker.join();
  workers_.clear();
  return started;
}

void WorkPool::WorkerLoop() {
  while (true) {
    std::function<void()> work;
    {
      absl::MutexLock lock(&mu_);
      while (!stopping_ && queue_.empty()) queue_cv_.Wait(&mu_);
      if (queue_.empty()) return;  // stopping
      work = std::move(queue_.front());
      queue_.pop_front();
    }
    work();
  }
}

}  // namespace rein
