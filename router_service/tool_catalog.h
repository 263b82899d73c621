// ToolCatalog: the tools the executors offer (a cached ListTools) and StartRun's workspace check.
#ifndef REIN_ROUTER_SERVICE_TOOL_CATALOG_H_
#define REIN_ROUTER_SERVICE_TOOL_CATALOG_H_

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "rein/v1/executor.pb.h"
#include "rein/v1/types.pb.h"
#include "router_service/clients.h"

namespace rein {

// Asks the executors what tools they offer to a namespace, at most once per `ttl` and
// namespace on the injected Clock, and whether a run's workspace is usable. Each call waits at most
// `timeout` for the executors, and not past the caller's `deadline` (DEADLINE_EXCEEDED when that
// came first). Thread-safe.
class ToolCatalog {
 public:
  ToolCatalog(ExecutorClient* executor, Clock* clock, absl::Duration ttl, absl::Duration timeout)
      : executor_(executor), clock_(clock), ttl_(ttl), timeout_(timeout) {}

  // The tools the executors offer to `namespace_name` ("" = "default"; from the cache when
  // that namespace's entry is younger than ttl); UNAVAILABLE when the executors cannot be
  // asked.
  absl::StatusOr<std::vector<rein::v1::ToolSpec>> Tools(
      const std::string& namespace_name = "", absl::Time deadline = absl::InfiniteFuture());

  // FAILED_PRECONDITION naming spec.workspace when an executor offering file_info says the
  // workspace is missing or unusable; OK when `tools` has no file_info; UNAVAILABLE when the
  // executors cannot be asked.
  absl::Status CheckWorkspace(const std::string& run_id, const std::string& workspace,
                              const std::vector<rein::v1::ToolSpec>& tools,
                              const std::string& namespace_name = "",
                              absl::Time deadline = absl::InfiniteFuture());

 private:
  ExecutorClient* const executor_;
  Clock* const clock_;
  const absl::Duration ttl_;
  const absl::Duration timeout_;

  // The executors' deadline of a call made for a caller with `deadline`, and the status of a
  // call that failed, DEADLINE_EXCEEDED when the caller's deadline is what cut it short.
  absl::Time CallDeadline(absl::Time deadline) {
    return std::min(deadline, clock_->Now() + timeout_);
  }
  bool CallerOutOfTime(const absl::Status& status, absl::Time deadline) {
    return absl::IsDeadlineExceeded(status) && clock_->Now() >= deadline;
  }

  struct Listed {
    std::vector<rein::v1::ToolSpec> tools;
    absl::Time at = absl::InfinitePast();
  };
  absl::Mutex mu_;
  // By namespace ("default" for ""); entries past ttl are dropped when another is stored.
  std::map<std::string, Listed> listed_ ABSL_GUARDED_BY(mu_);
};

}  // namespace rein

#endif  // REIN_ROUTER_SERVICE_TOOL_CATALOG_H_
