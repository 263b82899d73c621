// EventTail: the newest committed events of each run, kept in memory for live watchers.
#include "router_service/event_tail.h"

namespace rein {

void EventTail::Append(const std::string& run_id, const std::vector<rein::v1::RunEvent>& events,
                       bool ended) {
  if (events.empty()) return;
  absl::MutexLock lock(&mu_);
  Tail& tail = tails_[run_id];
  for (const rein::v1::RunEvent& event : events) {
    tail.recent.push_back(event);
    if (tail.recent.size() > kEvents) tail.recent.pop_front();
  }
  tail.last_seq = events.back().seq();
  if (ended) {
    tail.ended = true;
    ended_.push_back(run_id);
    if (ended_.size() > kEndedKept) {
      tails_.erase(ended_.front());
      ended_.pop_front();
    }
  }
}

void EventTail::NoteRemote(const std::string& run_id, int64_t last_seq, bool ended) {
  absl::MutexLock lock(&mu_);
  Tail& tail = tails_[run_id];
  if (last_seq <= tail.last_seq) return;
  // The events in between are not here: what the tail held no longer reaches the end.
  tail.recent.clear();
  tail.last_seq = last_seq;
  if (ended && !tail.ended) {
    tail.ended = true;
    ended_.push_back(run_id);
    if (ended_.size() > kEndedKept) {
      tails_.erase(ended_.front());
      ended_.pop_front();
    }
  }
}

void EventTail::Forget(const std::string& run_id) {
  absl::MutexLock lock(&mu_);
  tails_.erase(run_id);
}

EventTail::Read EventTail::ReadAfter(const std::string& run_id, int64_t after_seq,
                                     absl::Time until) {
  Read read;
  absl::MutexLock lock(&mu_);
  auto it = tails_.find(run_id);
  if (it == tails_.end()) return read;
  if (it->second.last_seq <= after_seq) {
    if (it->second.ended) {
      read.kind = Read::Kind::kEnded;
      return read;
    }
    auto newer = [this, &run_id, after_seq]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      auto found = tails_.find(run_id);
      return found == tails_.end() || found->second.last_seq > after_seq;
    };
    if (!clock_->AwaitWithDeadline(&mu_, absl::Condition(&newer), until)) {
      read.kind = Read::Kind::kTimedOut;
      return read;
    }
    it = tails_.find(run_id);  // the tail may have been forgotten while waiting
  }
  if (it != tails_.end() && !it->second.recent.empty() &&
      it->second.recent.front().seq() <= after_seq + 1) {
    read.kind = Read::Kind::kEvents;
    for (const rein::v1::RunEvent& event : it->second.recent) {
      if (event.seq() > after_seq) read.events.push_back(event);
    }
  }
  return read;
}

bool EventTail::AwaitNewer(const std::string& run_id, int64_t after_seq, absl::Time until) {
  absl::MutexLock lock(&mu_);
  auto newer = [this, &run_id, after_seq]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto it = tails_.find(run_id);
    return it == tails_.end() ? false : it->second.last_seq > after_seq;
  };
  return clock_->AwaitWithDeadline(&mu_, absl::Condition(&newer), until);
}

}  // namespace rein
