// ReadEventsUntil: a run's events for WaitEvents and WatchRun, from memory or the store.
#ifndef REIN_ROUTER_SERVICE_EVENT_READS_H_
#define REIN_ROUTER_SERVICE_EVENT_READS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "rein/v1/types.pb.h"
#include "router_service/event_tail.h"
#include "router_service/store/run_store.h"

namespace rein {

// What a read works with (the engine's).
struct EventReadContext {
  RunStore* store;
  EventTail* tail;
  bool shared;  // a store shared by several routers (FleetMember::shared)
  // Whether this router drives the run (holds it in memory).
  std::function<bool(const std::string& run_id)> driven;
};

// The run's events after `after_seq`, waiting until `until` for one when there are none yet
// (InfinitePast: never waits). A run this router drives is served from the tail in memory when
// it reaches back far enough; another router's from the store, the wait woken by that
// router's commit notices (or ended at `until`, which bounds the delay when a notice is lost).
// `ended` is set when the run has ended and every event has been returned. INVALID_ARGUMENT
// naming run_id or after_seq; NOT_FOUND for an unknown run.
absl::StatusOr<std::vector<rein::v1::RunEvent>> ReadEventsUntil(const EventReadContext& ctx,
                                                                const std::string& run_id,
                                                                int64_t after_seq, absl::Time until,
                                                                bool* ended);

}  // namespace rein

#endif  // REIN_ROUTER_SERVICE_EVENT_READS_H_
