// FakeClock: a Clock for tests whose time moves only when the test (or a sleeper) moves it.
#ifndef REIN_COMMON_TESTING_FAKE_CLOCK_H_
#define REIN_COMMON_TESTING_FAKE_CLOCK_H_

#include <algorithm>
#include <memory>
#include <set>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"

namespace rein {

// Time stands still until Advance or SetTime moves it; moving it wakes every AwaitWithDeadline
// whose deadline has passed and every SleepUntil whose target has been reached.
//
// SleepUntil has two modes. kSleepMovesTime (the default, for single-threaded code under test
// such as the planner's backends): the sleeper itself moves time to its target and returns at
// once. kSleepBlocks: the sleeper waits until the test moves time past its target. Either way
// every SleepUntil target is recorded.
//
// Thread-safe. A test must not call Advance or SetTime while holding a mutex that a waiter of
// this clock waits on.
class FakeClock final : public Clock {
 public:
  enum class SleepMode { kSleepMovesTime, kSleepBlocks };
  static absl::Time DefaultStart() { return absl::FromUnixSeconds(1700000000); }

  explicit FakeClock(absl::Time start = DefaultStart(), SleepMode mode = SleepMode::kSleepMovesTime)
      : now_(start), mode_(mode) {}

  absl::Time Now() override {
    absl::MutexLock lock(&mu_);
    return now_;
  }

  void SleepUntil(absl::Time until) override {
    {
      absl::MutexLock lock(&mu_);
      sleeps_.push_back(until);
      if (until <= now_) return;
      if (mode_ == SleepMode::kSleepBlocks) {
        ++blocked_sleepers_;
        auto reached = [this, until]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return now_ >= until; };
        mu_.Await(absl::Condition(&reached));
        --blocked_sleepers_;
        return;
      }
    }
    SetTime(until);
  }

  bool AwaitWithDeadline(absl::Mutex* mu, const absl::Condition& condition,
                         absl::Time deadline) override ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    if (condition.Eval()) return true;
    auto waiter = std::make_shared<Waiter>();
    waiter->mu = mu;
    waiter->deadline = deadline;
    {
      absl::MutexLock lock(&mu_);
      if (now_ >= deadline) return false;
      waiters_.insert(waiter);
    }
    Waiter* w = waiter.get();
    const absl::Condition* cond = &condition;
    auto ready = [w, cond]() { return w->expired || cond->Eval(); };
    mu->Await(absl::Condition(&ready));
    bool firing;
    {
      absl::MutexLock lock(&mu_);
      waiters_.erase(waiter);
      firing = waiter->firing;
    }
    if (firing) {
      // A concurrent Advance is about to lock *mu to wake this waiter: let it finish, so that
      // *mu is not touched after this call returns (its owner may then destroy it).
      mu->Unlock();
      {
        absl::MutexLock lock(&mu_);
        auto done = [w]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !w->firing; };
        mu_.Await(absl::Condition(&done));
      }
      mu->Lock();
    }
    return condition.Eval();
  }

  void Advance(absl::Duration d) {
    absl::Time to;
    {
      absl::MutexLock lock(&mu_);
      to = now_ + d;
    }
    SetTime(to);
  }

  // Moves time to `t` (never backwards) and wakes whoever waits for it.
  void SetTime(absl::Time t) {
    std::vector<std::shared_ptr<Waiter>> due;
    {
      absl::MutexLock lock(&mu_);
      if (t > now_) now_ = t;
      for (const auto& w : waiters_) {
        if (!w->firing && w->deadline <= now_) {
          w->firing = true;
          due.push_back(w);
        }
      }
    }
    for (const auto& w : due) {
      w->mu->Lock();
      w->expired = true;
      w->mu->Unlock();
    }
    absl::MutexLock lock(&mu_);
    for (const auto& w : due) w->firing = false;
  }

  // The targets of every SleepUntil call so far, in order.
  std::vector<absl::Time> sleeps() {
    absl::MutexLock lock(&mu_);
    return sleeps_;
  }

  // Number of threads blocked in AwaitWithDeadline (with a deadline not yet reached) or in a
  // blocking SleepUntil.
  int waiters() {
    absl::MutexLock lock(&mu_);
    return static_cast<int>(waiters_.size()) + blocked_sleepers_;
  }

  // Blocks (on real time, without a timeout) until some AwaitWithDeadline waits for a deadline
  // at or before `t`, i.e. until advancing to `t` would wake someone. Returns that deadline.
  absl::Time BlockUntilWaiterBy(absl::Time t) {
    absl::MutexLock lock(&mu_);
    auto found = [this, t]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      for (const auto& w : waiters_) {
        if (w->deadline <= t) return true;
      }
      return false;
    };
    mu_.Await(absl::Condition(&found));
    absl::Time first = absl::InfiniteFuture();
    for (const auto& w : waiters_) first = std::min(first, w->deadline);
    return first;
  }

 private:
  struct Waiter {
    absl::Mutex* mu = nullptr;
    absl::Time deadline;
    bool expired = false;  // guarded by *mu
    bool firing = false;   // guarded by the clock's mu_: SetTime is about to set `expired`
  };

  absl::Mutex mu_;
  absl::Time now_ ABSL_GUARDED_BY(mu_);
  const SleepMode mode_;
  std::vector<absl::Time> sleeps_ ABSL_GUARDED_BY(mu_);
  std::set<std::shared_ptr<Waiter>> waiters_ ABSL_GUARDED_BY(mu_);
  int blocked_sleepers_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace rein

#endif  // REIN_COMMON_TESTING_FAKE_CLOCK_H_
