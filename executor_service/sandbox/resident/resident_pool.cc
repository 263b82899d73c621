// The resident sandboxes of an executor.
#include "executor_service/sandbox/resident/resident_pool.h"

#include <algorithm>
#include <utility>

namespace rein {

ResidentPool::ResidentPool(absl::Duration idle, int max, Clock* clock)
    : idle_limit_(idle), max_(static_cast<size_t>(max)), clock_(clock) {
  thread_ = std::thread([this] { Janitor(); });
}

ResidentPool::~ResidentPool() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  thread_.join();
}

std::unique_ptr<ResidentSandbox> ResidentPool::Take(const std::string& run, const std::string& plan,
                                                    bool* cold) {
  absl::MutexLock lock(&mu_);
  *cold = false;
  if (stop_ || busy_.count(run) > 0) {
    *cold = true;
    return nullptr;
  }
  auto it = idle_.find(run);
  if (it != idle_.end()) {
    std::unique_ptr<ResidentSandbox> resident = std::move(it->second.sandbox);
    idle_.erase(it);
    if (resident->alive() && resident->plan() == plan) {
      busy_.insert(run);
      return resident;
    }
    dead_.push_back(std::move(resident));
    --alive_;
  }
  if (alive_ >= max_ && !idle_.empty()) {
    auto oldest = idle_.begin();
    for (auto i = idle_.begin(); i != idle_.end(); ++i) {
      if (i->second.since < oldest->second.since) oldest = i;
    }
    dead_.push_back(std::move(oldest->second.sandbox));
    idle_.erase(oldest);
    --alive_;
  }
  if (alive_ >= max_) {
    *cold = true;
    return nullptr;
  }
  ++alive_;
  busy_.insert(run);
  return nullptr;
}

void ResidentPool::Put(const std::string& run, std::unique_ptr<ResidentSandbox> resident) {
  absl::MutexLock lock(&mu_);
  busy_.erase(run);
  const bool forgotten = forgotten_.erase(run) > 0;
  if (resident != nullptr && resident->alive() && !stop_ && !forgotten) {
    idle_[run] = {std::move(resident), clock_->Now()};
    return;
  }
  if (resident != nullptr) dead_.push_back(std::move(resident));
  --alive_;
}

void ResidentPool::Forget(const std::string& run) {
  absl::MutexLock lock(&mu_);
  if (busy_.count(run) > 0) forgotten_.insert(run);
  auto it = idle_.find(run);
  if (it == idle_.end()) return;
  dead_.push_back(std::move(it->second.sandbox));
  idle_.erase(it);
  --alive_;
}

size_t ResidentPool::alive() const {
  absl::MutexLock lock(&mu_);
  return alive_;
}

void ResidentPool::Janitor() {
  const absl::Duration tick =
      std::max(absl::Milliseconds(50), std::min(absl::Seconds(1), idle_limit_ / 4));
  for (;;) {
    std::vector<std::unique_ptr<ResidentSandbox>> gone;
    bool stopping;
    {
      absl::MutexLock lock(&mu_);
      clock_->AwaitWithDeadline(&mu_, absl::Condition(this, &ResidentPool::HasWork),
                                clock_->Now() + tick);
      stopping = stop_;
      const absl::Time now = clock_->Now();
      for (auto it = idle_.begin(); it != idle_.end();) {
        if (stopping || now - it->second.since >= idle_limit_) {
          gone.push_back(std::move(it->second.sandbox));
          it = idle_.erase(it);
          --alive_;
        } else {
          ++it;
        }
      }
      for (auto& dead : dead_) gone.push_back(std::move(dead));
      dead_.clear();
    }
    gone.clear();  // kills what is still alive, reaps, removes cgroups and placeholders
    if (stopping) return;
  }
}

}  // namespace rein
