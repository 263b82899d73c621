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

void WorkPool::Post(std::function<void()> work, const std::string& share) {
  absl::MutexLock lock(&mu_);
  std::deque<std::function<void()>>& queue = queues_[share];
  if (queue.empty()) turns_.push_back(share);
  queue.push_back(std::move(work));
  ++queued_;
  queue_cv_.Signal();
}

bool WorkPool::BeginInline() {
  if (max_inline_ <= 0) return false;
  absl::MutexLock lock(&mu_);
  // Work queued before this reply goes first (the workers have it); so does shutdown.
  if (stopping_ || queued_ > 0 || inline_active_ >= max_inline_) {
    Metrics::Global().Add("rein_router_replies_queued_total", 1,
                          queued_ > 0 ? "why=\"queued\"" : "why=\"busy\"");
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
      while (!stopping_ && queued_ == 0) queue_cv_.Wait(&mu_);
      if (queued_ == 0) return;  // stopping
      // The share whose turn it is gives one item, and goes to the back if it has more.
      const std::string share = std::move(turns_.front());
      turns_.pop_front();
      auto it = queues_.find(share);
      work = std::move(it->second.front());
      it->second.pop_front();
      --queued_;
      if (it->second.empty()) {
        queues_.erase(it);
      } else {
        turns_.push_back(share);
      }
    }
    work();
  }
}

}  // namespace rein
