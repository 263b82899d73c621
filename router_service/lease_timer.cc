// LeaseTimer: when a router may act on its runs, judged from its last successful renewal.
#include "router_service/lease_timer.h"

#include <algorithm>

namespace rein {

void LeaseTimer::Renewed(absl::Time sent) {
  absl::MutexLock lock(&mu_);
  renewed_ = std::max(renewed_, sent);
}

bool LeaseTimer::joined() const {
  absl::MutexLock lock(&mu_);
  return renewed_ != absl::InfinitePast();
}

bool LeaseTimer::MayMutate(absl::Time now) const {
  absl::MutexLock lock(&mu_);
  return now < renewed_ + ttl_ / 2;
}

bool LeaseTimer::Live(absl::Time now) const {
  absl::MutexLock lock(&mu_);
  return now < renewed_ + ttl_;
}

}  // namespace rein
