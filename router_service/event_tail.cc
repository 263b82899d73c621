// EventTail: the newest committed events of each run, kept in memory for live watchers.
#include "router_service/event_tail.h"

namespace rein {

std::shared_ptr<EventTail::Tail> EventTail::Find(const std::string& run_id) {
  absl::MutexLock lock(&mu_);
  auto it = tails_.find(run_id);
  return it == tails_.end() ? nullptr : it->second;
}

void EventTail::TakeWakesLocked(Tail* tail, Wakes* wakes) {
  auto& subs = tail->subscribers;
  size_t kept = 0;
  for (size_t i = 0; i < subs.size(); ++i) {
    if (tail->forgotten || subs[i].after_seq < tail->last_seq) {
      wakes->push_back(std::move(subs[i].wake));
    } else {
      subs[kept++] = std::move(subs[i]);
    }
  }
  subscriptions_.fetch_sub(subs.size() - kept);
  subs.resize(kept);
}

bool EventTail::PublishLocked(Tail* tail, int64_t last_seq, bool ended, Wakes* wakes) {
  tail->last_seq = last_seq;
  tail->published_seq = last_seq;
  const bool newly_ended = ended && !tail->ended;
  if (ended) tail->ended = true;
  TakeWakesLocked(tail, wakes);
  return newly_ended;
}

void EventTail::Fire(Wakes& wakes) {
  for (std::function<void()>& wake : wakes) wake();
}

void EventTail::RemoveLocked(const std::string& run_id, Wakes* wakes) {
  auto it = tails_.find(run_id);
  if (it == tails_.end()) return;
  std::shared_ptr<Tail> tail = std::move(it->second);
  tails_.erase(it);
  absl::MutexLock tail_lock(&tail->mu);
  tail->forgotten = true;
  TakeWakesLocked(tail.get(), wakes);
}

void EventTail::NoteEndedLocked(const std::string& run_id, Wakes* wakes) {
  ended_.push_back(run_id);
  if (ended_.size() > kEndedKept) {
    RemoveLocked(ended_.front(), wakes);
    ended_.pop_front();
  }
}

void EventTail::Append(const std::string& run_id, const std::vector<rein::v1::RunEvent>& events,
                       bool ended, Wakes* deferred) {
  if (events.empty()) return;
  Wakes own;
  Wakes& wakes = deferred != nullptr ? *deferred : own;
  {
    absl::MutexLock lock(&mu_);
    std::shared_ptr<Tail>& slot = tails_[run_id];
    if (!slot) slot = std::make_shared<Tail>();
    bool newly_ended = false;
    {
      absl::MutexLock tail_lock(&slot->mu);
      slot->known = true;
      for (const rein::v1::RunEvent& event : events) {
        slot->recent.push_back(event);
        if (slot->recent.size() > kEvents) slot->recent.pop_front();
      }
      newly_ended = PublishLocked(slot.get(), events.back().seq(), ended, &wakes);
    }
    if (newly_ended) NoteEndedLocked(run_id, &wakes);
  }
  Fire(own);
}

void EventTail::NoteRemote(const std::string& run_id, int64_t last_seq, bool ended) {
  Wakes wakes;
  {
    absl::MutexLock lock(&mu_);
    std::shared_ptr<Tail>& slot = tails_[run_id];
    if (!slot) slot = std::make_shared<Tail>();
    bool newly_ended = false;
    {
      absl::MutexLock tail_lock(&slot->mu);
      if (last_seq <= slot->last_seq) return;
      // The events in between are not here: what the tail held no longer reaches the end.
      slot->known = true;
      slot->recent.clear();
      newly_ended = PublishLocked(slot.get(), last_seq, ended, &wakes);
    }
    if (newly_ended) NoteEndedLocked(run_id, &wakes);
  }
  Fire(wakes);
}

void EventTail::Forget(const std::string& run_id) {
  Wakes wakes;
  {
    absl::MutexLock lock(&mu_);
    RemoveLocked(run_id, &wakes);
  }
  Fire(wakes);
}

uint64_t EventTail::Subscribe(const std::string& run_id, int64_t after_seq,
                              std::function<void()> wake) {
  absl::MutexLock lock(&mu_);
  std::shared_ptr<Tail>& slot = tails_[run_id];
  const bool placeholder = slot == nullptr;
  if (placeholder) slot = std::make_shared<Tail>();
  absl::MutexLock tail_lock(&slot->mu);
  if (placeholder) slot->known = false;
  if (slot->last_seq > after_seq) return 0;
  const uint64_t id = next_subscription_++;
  slot->subscribers.push_back({id, after_seq, std::move(wake)});
  subscriptions_.fetch_add(1);
  return id;
}

void EventTail::Unsubscribe(const std::string& run_id, uint64_t id) {
  if (id == 0) return;
  absl::MutexLock lock(&mu_);
  auto it = tails_.find(run_id);
  if (it == tails_.end()) return;
  Tail* t = it->second.get();
  bool drop = false;
  {
    absl::MutexLock tail_lock(&t->mu);
    auto& subs = t->subscribers;
    for (auto sub = subs.begin(); sub != subs.end(); ++sub) {
      if (sub->id != id) continue;
      subs.erase(sub);
      subscriptions_.fetch_sub(1);
      break;
    }
    drop = !t->known && subs.empty();
  }
  if (drop) tails_.erase(it);  // a placeholder nobody waits on any more
}

size_t EventTail::subscriptions() { return subscriptions_.load(); }

EventTail::Read EventTail::ReadAfter(const std::string& run_id, int64_t after_seq,
                                     absl::Time until) {
  Read read;
  std::shared_ptr<Tail> tail = Find(run_id);
  if (!tail) return read;
  Tail* t = tail.get();
  absl::MutexLock lock(&t->mu);
  if (t->forgotten || !t->known) return read;
  if (t->last_seq <= after_seq) {
    if (t->ended) {
      read.kind = Read::Kind::kEnded;
      return read;
    }
    auto newer = [t, after_seq]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(t->mu) {
      return t->forgotten || t->last_seq > after_seq;
    };
    // InfinitePast: a read that never waits (not even one futex call, as a wait whose
    // deadline has passed still makes in absl::Mutex).
    if (until == absl::InfinitePast() ||
        !clock_->AwaitWithDeadline(&t->mu, absl::Condition(&newer), until)) {
      read.kind = Read::Kind::kTimedOut;
      return read;
    }
    if (t->forgotten) return read;  // forgotten while waiting: a miss
  }
  if (!t->recent.empty() && t->recent.front().seq() <= after_seq + 1) {
    read.kind = Read::Kind::kEvents;
    for (const rein::v1::RunEvent& event : t->recent) {
      if (event.seq() > after_seq) read.events.push_back(event);
    }
  }
  return read;
}

bool EventTail::AwaitNewer(const std::string& run_id, int64_t after_seq, absl::Time until) {
  if (until == absl::InfinitePast()) return false;  // a read that never waits
  if (std::shared_ptr<Tail> tail = Find(run_id)) {
    Tail* t = tail.get();
    absl::MutexLock lock(&t->mu);
    auto newer = [t, after_seq]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(t->mu) {
      return !t->forgotten && t->last_seq > after_seq;
    };
    if (!t->forgotten) return clock_->AwaitWithDeadline(&t->mu, absl::Condition(&newer), until);
  }
  // No tail (yet): wait on the map, which every Append and NoteRemote takes, until one for this
  // run passes after_seq (rare: runs of other routers, and runs being taken over).
  absl::MutexLock lock(&mu_);
  auto newer = [this, &run_id, after_seq]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto it = tails_.find(run_id);
    return it != tails_.end() && it->second->published_seq.load() > after_seq;
  };
  return clock_->AwaitWithDeadline(&mu_, absl::Condition(&newer), until);
}

}  // namespace rein
