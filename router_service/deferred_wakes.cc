// DeferredWakes: the watchers' wake-ups a thread's commits cause, run when the thread is done.
#include "router_service/deferred_wakes.h"

namespace rein {
namespace {

// The wake-ups of the commits a thread makes inside a DeferredWakes scope; null outside one.
thread_local std::vector<std::function<void()>>* t_deferred_wakes = nullptr;

}  // namespace

DeferredWakes::DeferredWakes() : outer_(t_deferred_wakes != nullptr) {
  if (!outer_) t_deferred_wakes = &wakes_;
}

DeferredWakes::~DeferredWakes() {
  if (outer_) return;
  t_deferred_wakes = nullptr;
  for (std::function<void()>& wake : wakes_) wake();
}

std::vector<std::function<void()>>* DeferredWakes::Current() { return t_deferred_wakes; }

}  // namespace rein
