// Fork points of recorded runs.
#include "router_service/fork.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "router_service/children/child_fork.h"
#include "router_service/replay.h"

namespace rein {
namespace {

bool IsMutating(const rein::v1::Run& source, const std::string& tool) {
  for (const rein::v1::ToolSpec& spec : source.state().tools()) {
    if (spec.name() == tool) return spec.mutating();
  }
  return false;
}

// The last seq whose event's version is <= `version` (0 when none).
int64_t LastSeqAtVersion(const std::vector<rein::v1::RunEvent>& events, int64_t version) {
  int64_t seq = 0;
  for (const rein::v1::RunEvent& e : events) {
    if (e.version() <= version) seq = e.seq();
  }
  return seq;
}

}  // namespace

absl::StatusOr<ForkPoint> FindForkPoint(const StageRouter& router, const rein::v1::Run& source,
                                        const std::vector<rein::v1::RunEvent>& events,
                                        const std::vector<Snapshot>& snapshots,
                                        const rein::v1::ForkRunRequest& request) {
  ForkPoint point;
  point.from.set_run_id(source.run_id());
  switch (request.at_case()) {
    case rein::v1::ForkRunRequest::kIteration: {
      const int32_t n = request.iteration();
      int32_t max_iteration = 0;
      const Snapshot* found = nullptr;
      for (const Snapshot& s : snapshots) {
        max_iteration = std::max(max_iteration, s.iteration);
        if (s.iteration == n && found == nullptr) found = &s;
      }
      if (found == nullptr) {
        return absl::InvalidArgumentError(absl::StrCat(
            "at.iteration: run ", source.run_id(), " has no snapshot of iteration ", n,
            " (its snapshots are of iterations 0..", max_iteration, "; see ExportRun)"));
      }
      if (!point.state.ParseFromString(found->state)) {
        return absl::DataLossError(absl::StrCat("snapshot of version ", found->version, " of run ",
                                                source.run_id(), " is corrupt"));
      }
      point.from.set_seq(LastSeqAtVersion(events, found->version));
      break;
    }
    case rein::v1::ForkRunRequest::kSeq: {
      const int64_t seq = request.seq();
      if (seq < 1 || seq > static_cast<int64_t>(events.size())) {
        return absl::InvalidArgumentError(absl::StrCat(
            "at.seq: run ", source.run_id(), " has events 1..", events.size(), ", not ", seq));
      }
      const int64_t version = events[seq - 1].version();
      point.from.set_seq(LastSeqAtVersion(events, version));
      auto snapshot = std::find_if(snapshots.begin(), snapshots.end(),
                                   [&](const Snapshot& s) { return s.version == version; });
      if (snapshot != snapshots.end() && point.state.ParseFromString(snapshot->state)) break;
      absl::StatusOr<ReplayResult> replayed =
          ReplayRun(router, source, events, ReplayOptions{.stop_after_seq = seq});
      if (!replayed.ok()) {
        return absl::FailedPreconditionError(
            absl::StrCat("at.seq: the state at seq ", seq, " cannot be rebuilt (",
                         replayed.status().message(), "); fork at an iteration instead"));
      }
      if (replayed->divergence || replayed->events_replayed < seq) {
        return absl::FailedPreconditionError(absl::StrCat(
            "at.seq: the state at seq ", seq, " cannot be rebuilt: ", DescribeReplay(*replayed),
            "; fork at an iteration instead"));
      }
      point.state = replayed->run.state();
      break;
    }
    case rein::v1::ForkRunRequest::AT_NOT_SET:
      return absl::InvalidArgumentError("at: one of at.iteration or at.seq is required");
  }
  // Inside a child group the fork would share the source's running children.
  if (absl::Status s = CheckForkOutsideGroup(source.run_id(), point.state, events); !s.ok()) {
    return s;
  }
  point.from.set_iteration(point.state.iteration());
  point.from.set_version(point.state.version());

  // The first mutating call sent after the point: a result, or a RECOVERY pause (sent, no
  // result), or the source's call in flight now.
  for (const rein::v1::RunEvent& e : events) {
    if (e.seq() <= point.from.seq()) continue;
    if (e.has_tool_result() && IsMutating(source, e.tool_result().action().tool())) {
      point.first_mutating_call_after = e.tool_result().action().call_id();
      return point;
    }
    if (e.has_paused() && e.paused().pause().reason() == rein::v1::RECOVERY &&
        e.paused().pause().pending_call().mutating()) {
      point.first_mutating_call_after = e.paused().pause().pending_call().call_id();
      return point;
    }
  }
  if (source.state().call_dispatched() && source.state().pending_call().mutating()) {
    point.first_mutating_call_after = source.state().pending_call().call_id();
  }
  return point;
}

}  // namespace rein
