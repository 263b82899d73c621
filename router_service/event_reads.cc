// ReadEventsUntil: a run's events for WaitEvents and WatchRun, from memory or the store.
#include "router_service/event_reads.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "router_service/spec.h"
#include "router_service/stage_router.h"

namespace rein {

using rein::v1::RunEvent;

absl::StatusOr<std::vector<RunEvent>> ReadEventsUntil(const EventReadContext& ctx,
                                                      const std::string& run_id, int64_t after_seq,
                                                      absl::Time until, bool* ended) {
  *ended = false;
  RETURN_IF_ERROR(CheckRunId(run_id));
  if (after_seq < 0) return absl::InvalidArgumentError("after_seq: must be >= 0");
  while (true) {
    if (!ctx.shared || ctx.driven(run_id)) {
      EventTail::Read read = ctx.tail->ReadAfter(run_id, after_seq, until);
      switch (read.kind) {
        case EventTail::Read::Kind::kEnded: *ended = true; return std::vector<RunEvent>();
        case EventTail::Read::Kind::kTimedOut: return std::vector<RunEvent>();
        case EventTail::Read::Kind::kEvents: return std::move(read.events);
        case EventTail::Read::Kind::kMiss: break;
      }
    }
    absl::StatusOr<std::vector<RunEvent>> events = ctx.store->ReadEvents(run_id, after_seq, 256);
    if (!events.ok()) {
      if (absl::IsNotFound(events.status())) {
        return absl::NotFoundError(absl::StrCat("run ", run_id, " not found"));
      }
      return events.status();
    }
    if (!events->empty()) return events;
    if (!ctx.driven(run_id)) {
      // Not in memory: ended (or unknown, which ReadEvents reported). Its end may have been
      // committed after the read above, so read once more before saying nothing will come.
      absl::StatusOr<rein::v1::Run> run = ctx.store->GetRun(run_id);
      if (run.ok() && StageRouter::IsTerminal(run->state().stage())) {
        events = ctx.store->ReadEvents(run_id, after_seq, 256);
        if (!events.ok()) return events.status();
        *ended = events->empty();
        return events;
      }
    }
    // Wait for a commit of this run past after_seq.
    if (!ctx.tail->AwaitNewer(run_id, after_seq, until)) return events;
  }
}

}  // namespace rein
