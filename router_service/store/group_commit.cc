// GroupCommitter: commits the transitions of many runs that are ready together in one batch.
#include "router_service/store/group_commit.h"

#include <algorithm>
#include <utility>

namespace rein {

GroupCommitter::GroupCommitter(RunStore* store, GroupCommitOptions options, Clock* clock)
    : store_(store), options_(options), clock_(clock) {}

absl::StatusOr<std::vector<rein::v1::RunEvent>> GroupCommitter::Commit(CommitRequest request,
                                                                       absl::Time deadline) {
  Waiter self{&request, deadline, std::nullopt};
  absl::MutexLock lock(&mu_);
  queue_.push_back(&self);
  while (true) {
    // Wait until our result is in, or nobody is writing (then we lead the next batch).
    auto ready = [this, &self]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return self.result.has_value() || !writing_;
    };
    if (!clock_->AwaitWithDeadline(&mu_, absl::Condition(&ready), deadline)) {
      auto queued = std::find(queue_.begin(), queue_.end(), &self);
      if (queued != queue_.end()) {
        queue_.erase(queued);
        return absl::DeadlineExceededError(
            "the store did not take the commit before the call's deadline; nothing was written");
      }
      // In the batch a leader is writing: the store has it, so its answer is the answer.
      auto answered = [&self]() { return self.result.has_value(); };
      mu_.Await(absl::Condition(&answered));
    }
    if (self.result.has_value()) return *std::move(self.result);
    writing_ = true;
    const size_t max_batch = static_cast<size_t>(std::max(1, options_.max_batch));
    if (options_.max_delay > absl::ZeroDuration() && queue_.size() < max_batch) {
      auto full = [this, max_batch]()
                      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return queue_.size() >= max_batch; };
      mu_.AwaitWithTimeout(absl::Condition(&full), options_.max_delay);
    }
    std::vector<Waiter*> batch;
    while (!queue_.empty() && batch.size() < max_batch) {
      batch.push_back(queue_.front());
      queue_.pop_front();
    }
    mu_.Unlock();
    std::vector<CommitRequest> requests;
    requests.reserve(batch.size());
    const absl::Time now = clock_->Now();
    for (Waiter* w : batch) {
      requests.push_back(std::move(*w->request));
      if (w->deadline != absl::InfiniteFuture()) {
        requests.back().timeout = std::max(absl::ZeroDuration(), w->deadline - now);
      }
    }
    std::vector<absl::StatusOr<std::vector<rein::v1::RunEvent>>> results =
        store_->CommitBatch(requests);
    mu_.Lock();
    for (size_t i = 0; i < batch.size(); ++i) {
      batch[i]->result = i < results.size()
                             ? std::move(results[i])
                             : absl::InternalError("the store returned too few batch results");
    }
    ++batches_;
    commits_ += static_cast<int64_t>(batch.size());
    writing_ = false;
    // Our own request may not have fit in this batch (max_batch): then go round again.
  }
}

int64_t GroupCommitter::batches() {
  absl::MutexLock lock(&mu_);
  return batches_;
}

int64_t GroupCommitter::commits() {
  absl::MutexLock lock(&mu_);
  return commits_;
}

int64_t GroupCommitter::waiting() {
  absl::MutexLock lock(&mu_);
  return static_cast<int64_t>(queue_.size());
}

}  // namespace rein
