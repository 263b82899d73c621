// Per-namespace quotas from --quotas_file: the table, its reload, and the admission of a start.
#ifndef REIN_ROUTER_SERVICE_SERVICE_QUOTAS_H_
#define REIN_ROUTER_SERVICE_SERVICE_QUOTAS_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "rein/v1/router.pb.h"
#include "router_service/store/run_store.h"

namespace rein {

// One namespace's line; an unset quota is unlimited.
struct NamespaceQuota {
  std::optional<int64_t> max_concurrent_runs;
  std::optional<int64_t> max_starts_per_minute;
  std::optional<int64_t> max_tokens_per_day;
  std::optional<double> max_cost_usd_per_day;
  // Not a quota: the namespace's share of the planner and executor calls in flight
  // (router_service/fairness), 1 when unset.
  std::optional<int64_t> weight;
};

// The quotas file: one line per namespace,
// `<ns> [max_concurrent_runs=N] [max_starts_per_minute=N] [max_tokens_per_day=N]
// [max_cost_usd_per_day=X] [weight=N]`, blank lines and `#` comments allowed. A malformed
// namespace, an unknown key, a negative or malformed number or a namespace listed twice is
// INVALID_ARGUMENT naming the line and the problem.
absl::StatusOr<std::map<std::string, NamespaceQuota>> ParseQuotaFile(absl::string_view content);

struct QuotaOptions {
  std::string file;                                // --quotas_file; "" = no quotas
  absl::Duration reload_check = absl::Seconds(2);  // how often the file's stat is checked
};

// Admits starts against the namespaces' quotas. The file is read again when it changes
// (checked at most every reload_check, on calls); one that fails to parse on reload is logged
// with its file and line, counted (rein_router_quota_reload_errors_total), and the last good
// table stays. What a namespace uses comes from the store (its unfinished runs, paused ones
// included; the usage of its runs started since the UTC day began) and, for starts per
// minute, from this router's own count (with several routers each admits its own share of
// that quota). A run's day budget: the start caps the run's token_budget and cost_budget_usd
// at what the namespace's day has left, so a run that would pass it ends with
// TOKEN_BUDGET_EXHAUSTED or COST_BUDGET_EXHAUSTED like any budget; runs running at once may
// each use what was left when they started. Thread-safe.
class QuotaBook {
 public:
  QuotaBook(QuotaOptions options, RunStore* store, Clock* clock);

  // Reads the file the first time; its error (file, line and problem) refuses start.
  absl::Status Load();

  // For a start in `namespace_name` (StartRun, ForkRun): RESOURCE_EXHAUSTED (reason
  // QUOTA_EXCEEDED) naming the quota and when it frees; else `spec`'s budgets capped at what the
  // day has left, then `create` called, which returns whether it created a run. Between the two
  // the start is reserved: it counts in the namespace's unfinished runs and starts of the last
  // minute, so starts admitted at once cannot together pass a quota (admissions of one
  // namespace are checked one at a time). Only a start that created a run counts in
  // max_starts_per_minute afterwards; a refused or deduplicated one counts nowhere.
  absl::Status AdmitStart(const std::string& namespace_name, rein::v1::RunSpec* spec,
                          const std::function<bool()>& create);
  // For a child run in `namespace_name`: as AdmitStart, against max_concurrent_runs only (a
  // child's tokens and cost are carved from its parent's budget, which its start was admitted
  // with; a child is not a start of max_starts_per_minute).
  absl::Status AdmitChild(const std::string& namespace_name, const std::function<bool()>& create);

  // The namespace's weight=, 1 without one (at most kMaxWeight).
  int Weight(const std::string& namespace_name);
  static constexpr int64_t kMaxWeight = 1000;

  // The namespace's quotas and what it uses of them now.
  absl::StatusOr<rein::v1::QuotaReport> Report(const std::string& namespace_name);

 private:
  struct Use {
    NamespaceQuota quota;
    NamespaceUsage usage;
    int64_t starts_in_window = 0;
    int64_t reserved_runs = 0;                       // admitted, being created
    int64_t reserved_starts = 0;                     // of those, starts (not children)
    absl::Time window_frees = absl::InfinitePast();  // when the oldest start leaves the window
    absl::Time day_ends;
  };
  // The quota and use of a namespace now; false when it has no line.
  absl::StatusOr<bool> UseOf(const std::string& namespace_name, Use* use);
  void MaybeReloadLocked(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // AdmitStart (`spec` set) and AdmitChild (`spec` null).
  absl::Status Admit(const std::string& namespace_name, rein::v1::RunSpec* spec,
                     const std::function<bool()>& create);
  // Refusal of a start or child now (RESOURCE_EXHAUSTED naming the quota), else OK with the
  // spec's budgets capped.
  absl::Status Check(const std::string& namespace_name, const Use& use, rein::v1::RunSpec* spec);
  // The lock one namespace's admissions take in turn.
  absl::Mutex* AdmissionLock(const std::string& namespace_name);

  const QuotaOptions options_;
  RunStore* const store_;
  Clock* const clock_;
  absl::Mutex mu_;
  std::map<std::string, NamespaceQuota> table_ ABSL_GUARDED_BY(mu_);
  std::string file_stamp_ ABSL_GUARDED_BY(mu_);
  absl::Time last_check_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  // The times of this router's recent starts, per namespace (the last minute's).
  std::map<std::string, std::deque<absl::Time>> starts_ ABSL_GUARDED_BY(mu_);
  // Admitted starts and children being created, per namespace.
  std::map<std::string, std::pair<int64_t, int64_t>> reserved_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::unique_ptr<absl::Mutex>> admission_locks_ ABSL_GUARDED_BY(mu_);
};

}  // namespace rein

#endif  // REIN_ROUTER_SERVICE_SERVICE_QUOTAS_H_
