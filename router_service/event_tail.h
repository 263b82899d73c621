// EventTail: the newest committed events of each run, kept in memory for live watchers.
#ifndef REIN_ROUTER_SERVICE_EVENT_TAIL_H_
#define REIN_ROUTER_SERVICE_EVENT_TAIL_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "rein/v1/router.pb.h"

namespace rein {

// Holds the last kEvents events of every run committed by this process (the events of ended
// runs are forgotten kEndedKept runs later), so that a watcher waiting on a live run is served
// from memory and wakes on the commit it waits for. Waits are on the injected Clock.
// Thread-safe.
class EventTail {
 public:
  static constexpr size_t kEvents = 12;
  static constexpr size_t kEndedKept = 1000;

  explicit EventTail(Clock* clock) : clock_(clock) {}

  // Records events just committed for `run_id` (in seq order); `ended` when the run ended.
  // The subscribers' wake-ups (Subscribe) run before it returns, or, with `wakes`, are added
  // there for the caller to run once it has done what must not wait for them.
  void Append(const std::string& run_id, const std::vector<rein::v1::RunEvent>& events, bool ended,
              std::vector<std::function<void()>>* wakes = nullptr);

  // Another router committed `run_id` up to `last_seq` (a notice): waiters wake, and readers
  // of seqs the tail does not hold go to the store. `ended` when that commit ended the run.
  void NoteRemote(const std::string& run_id, int64_t last_seq, bool ended);

  // Forgets the run's tail (this router stopped driving it): readers go to the store.
  void Forget(const std::string& run_id);

  struct Read {
    enum class Kind {
      kMiss,      // the tail does not reach back to after_seq + 1 (or knows no such run)
      kEvents,    // `events` holds every event after after_seq that the tail has
      kEnded,     // the run ended and nothing follows after_seq
      kTimedOut,  // nothing newer came before `until`
    };
    Kind kind = Kind::kMiss;
    std::vector<rein::v1::RunEvent> events;
  };

  // The events of `run_id` after `after_seq`, waiting until `until` (on the clock) when the
  // tail has none yet and the run has not ended (absl::InfinitePast(): never waits).
  Read ReadAfter(const std::string& run_id, int64_t after_seq, absl::Time until);

  // Waits until a commit of `run_id` past `after_seq` or `until`; returns whether one came
  // (at once false for absl::InfinitePast()).
  bool AwaitNewer(const std::string& run_id, int64_t after_seq, absl::Time until);

  // A one-shot wake-up for a watcher that holds no thread (the router's WatchRun): `wake` is
  // called once, when a commit of `run_id` past `after_seq` is recorded (Append, NoteRemote)
  // or the run's tail is forgotten (Forget, or an ended run's tail aged out), on the thread
  // that records it, after every lock of the tail is released. The watcher then reads again.
  // Returns 0, subscribing nothing and never calling `wake`, when such a commit is already
  // recorded (read again now); else an id for Unsubscribe. `wake` must be quick and must not
  // block: it runs on the thread that committed.
  uint64_t Subscribe(const std::string& run_id, int64_t after_seq, std::function<void()> wake);
  // Cancels a subscription that has not fired yet (nothing when it has).
  void Unsubscribe(const std::string& run_id, uint64_t id);
  // Live subscriptions (tests and metrics).
  size_t subscriptions();

 private:
  // One run's tail, with its own mutex: a watcher waits on its run's mutex only, so a commit
  // wakes the watchers of that run and no others (with one mutex for all, every commit made
  // absl::Mutex re-evaluate the wait condition of every watcher of every run).
  struct Tail {
    absl::Mutex mu;
    // False for a tail that Subscribe made before any commit of the run was recorded here: it
    // holds nothing (ReadAfter misses) and goes when its last subscription does.
    bool known ABSL_GUARDED_BY(mu) = true;
    int64_t last_seq ABSL_GUARDED_BY(mu) = 0;
    bool ended ABSL_GUARDED_BY(mu) = false;
    bool forgotten ABSL_GUARDED_BY(mu) = false;  // removed from tails_: readers go to the store
    std::deque<rein::v1::RunEvent> recent ABSL_GUARDED_BY(mu);  // at most kEvents, oldest first
    // last_seq, also readable under the map's mutex (AwaitNewer on a run with no tail yet).
    std::atomic<int64_t> published_seq{0};
    // Subscribe's wake-ups, fired and cleared on the next commit or when forgotten.
    struct Subscriber {
      uint64_t id;
      int64_t after_seq;
      std::function<void()> wake;
    };
    std::vector<Subscriber> subscribers ABSL_GUARDED_BY(mu);
  };
  using Wakes = std::vector<std::function<void()>>;

  std::shared_ptr<Tail> Find(const std::string& run_id);
  // Removes the tail from tails_ and wakes its waiters. Needs mu_ held.
  // Its subscribers' wake-ups go to `wakes`, to be called once mu_ is released.
  void RemoveLocked(const std::string& run_id, Wakes* wakes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Records that the run ended; forgets the oldest ended tail past kEndedKept.
  void NoteEndedLocked(const std::string& run_id, Wakes* wakes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Moves to `wakes` the wake-ups of the tail's subscribers waiting for a seq past theirs
  // (all of them when the tail is forgotten).
  void TakeWakesLocked(Tail* tail, Wakes* wakes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(tail->mu);
  // Makes `last_seq` the tail's newest and published seq, marks it ended if `ended`, and takes
  // its subscribers' wake-ups; true when it ended just now.
  bool PublishLocked(Tail* tail, int64_t last_seq, bool ended, Wakes* wakes)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(tail->mu);
  static void Fire(Wakes& wakes);

  Clock* const clock_;
  absl::Mutex mu_;  // the map; taken before a Tail's mu, never after
  std::map<std::string, std::shared_ptr<Tail>> tails_ ABSL_GUARDED_BY(mu_);
  std::deque<std::string> ended_ ABSL_GUARDED_BY(mu_);
  uint64_t next_subscription_ ABSL_GUARDED_BY(mu_) = 1;
  std::atomic<size_t> subscriptions_{0};
};

}  // namespace rein

#endif  // REIN_ROUTER_SERVICE_EVENT_TAIL_H_
