// DeferredWakes: the watchers' wake-ups a thread's commits cause, run when the thread is done.
#ifndef REIN_ROUTER_SERVICE_DEFERRED_WAKES_H_
#define REIN_ROUTER_SERVICE_DEFERRED_WAKES_H_

#include <functional>
#include <vector>

namespace rein {

// While one lives on a thread, the wake-ups of live watchers (WatchRun streams) that this
// thread's commits cause wait until it ends: a reply's commit, then the run's next call, then
// its watchers, so that writing to watchers never delays the run they watch. Scopes nest (the
// outermost runs them).
class DeferredWakes {
 public:
  DeferredWakes();
  ~DeferredWakes();
  DeferredWakes(const DeferredWakes&) = delete;
  DeferredWakes& operator=(const DeferredWakes&) = delete;

  // Where the calling thread's wake-ups go (EventTail::Append): the outermost scope's list,
  // null outside any scope (wake at once).
  static std::vector<std::function<void()>>* Current();

 private:
  const bool outer_;
  std::vector<std::function<void()>> wakes_;
};

}  // namespace rein

#endif  // REIN_ROUTER_SERVICE_DEFERRED_WAKES_H_
