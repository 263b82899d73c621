// How many WatchRun streams one principal may hold open at once.
#include "router_service/stream_quota.h"

#include "absl/strings/str_cat.h"

namespace rein {

StreamQuota::Ticket::~Ticket() { quota_->Release(principal_); }

absl::StatusOr<std::unique_ptr<StreamQuota::Ticket>> StreamQuota::Acquire(
    const std::string& principal) {
  absl::MutexLock lock(&mu_);
  int& open = open_[principal];
  if (max_ > 0 && open >= max_) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "WatchRun: ", principal.empty() ? std::string("callers without a token") : principal,
        " already hold ", open,
        " open streams, the most one principal may "
        "(--max_watch_streams_per_principal); close one first"));
  }
  ++open;
  return std::unique_ptr<Ticket>(new Ticket(this, principal));
}

int StreamQuota::open(const std::string& principal) {
  absl::MutexLock lock(&mu_);
  auto it = open_.find(principal);
  return it == open_.end() ? 0 : it->second;
}

void StreamQuota::Release(const std::string& principal) {
  absl::MutexLock lock(&mu_);
  auto it = open_.find(principal);
  if (it == open_.end()) return;
  if (--it->second <= 0) open_.erase(it);
}

}  // namespace rein
