// RunWriter: the one path by which the router writes a run.
#include "router_service/run_writer.h"

#include <chrono>
#include <utility>

#include "common/log.h"
#include "common/metrics.h"

namespace rein {

RunWriter::RunWriter(RunStore* store, GroupCommitOptions options, Clock* clock)
    : store_(store), committer_(store, options, clock) {}

absl::StatusOr<CreateResult> RunWriter::Create(const rein::v1::Run& run,
                                               std::vector<rein::v1::RunEvent> events) {
  writes_.fetch_add(1);
  return store_->CreateRun(run, std::move(events));
}

absl::StatusOr<std::vector<rein::v1::RunEvent>> RunWriter::Commit(
    const rein::v1::Run& run, bool owned, const rein::v1::RunState& new_state,
    std::vector<rein::v1::RunEvent> events, std::optional<Snapshot> snapshot, absl::Time now,
    absl::Time deadline) {
  // Latency metrics measure real elapsed time on a monotonic source, not the injected Clock.
  const auto started = std::chrono::steady_clock::now();
  CommitRequest request{run.run_id(),
                        owned ? std::optional<int64_t>(run.lease_epoch()) : std::nullopt,
                        run.state().version(),
                        &new_state,
                        std::move(events),
                        std::move(snapshot),
                        now};
  writes_.fetch_add(1);
  absl::StatusOr<std::vector<rein::v1::RunEvent>> stored =
      committer_.Commit(std::move(request), deadline);
  Metrics::Global().Observe(
      "rein_router_commit_seconds",
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  Metrics::Global().Add("rein_router_commits_total", 1);
  if (!stored.ok()) {
    LogError("commit failed", {{"run_id", run.run_id()},
                               {"trace_id", run.state().trace().trace_id()},
                               {"error", stored.status().ToString()}});
    Metrics::Global().Add("rein_router_commit_errors_total", 1);
  }
  return stored;
}

}  // namespace rein
