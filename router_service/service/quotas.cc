// Per-namespace quotas: parsing the file, reloading it, admitting starts.
#include "router_service/service/quotas.h"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/limits.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/proto_time.h"
#include "common/status_macros.h"
#include "common/status_reason.h"

namespace rein {
namespace {

constexpr char kConcurrent[] = "max_concurrent_runs";
constexpr char kStarts[] = "max_starts_per_minute";
constexpr char kTokens[] = "max_tokens_per_day";
constexpr char kCost[] = "max_cost_usd_per_day";
constexpr char kWeight[] = "weight";

std::string FileStamp(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return "";
  return absl::StrCat(st.st_ino, ":", st.st_size, ":", st.st_mtim.tv_sec, ".", st.st_mtim.tv_nsec);
}

absl::StatusOr<std::map<std::string, NamespaceQuota>> ReadQuotaFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::InvalidArgumentError(absl::StrCat("cannot read ", path));
  std::ostringstream text;
  text << in.rdbuf();
  absl::StatusOr<std::map<std::string, NamespaceQuota>> table = ParseQuotaFile(text.str());
  if (!table.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", table.status().message()));
  }
  return table;
}

// The start of the UTC day after `now`.
absl::Time NextUtcDay(absl::Time now) {
  const int64_t day = absl::ToUnixSeconds(now) / 86400;
  return absl::FromUnixSeconds((day + 1) * 86400);
}

absl::Status Exhausted(const std::string& ns, const char* quota, const std::string& detail) {
  return WithReason(absl::ResourceExhaustedError(
                        absl::StrCat("namespace ", ns, ": quota ", quota, " is spent: ", detail)),
                    reason::kQuotaExceeded);
}

}  // namespace

absl::StatusOr<std::map<std::string, NamespaceQuota>> ParseQuotaFile(absl::string_view content) {
  std::map<std::string, NamespaceQuota> table;
  int number = 0;
  for (absl::string_view line : absl::StrSplit(content, '\n')) {
    ++number;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line[0] == '#') continue;
    auto error = [number](absl::string_view problem) {
      return absl::InvalidArgumentError(absl::StrCat("line ", number, ": ", problem));
    };
    std::vector<absl::string_view> fields = absl::StrSplit(line, ' ', absl::SkipWhitespace());
    if (absl::Status bad = CheckNamespaceName(fields[0], "namespace"); !bad.ok()) {
      return error(bad.message());
    }
    const std::string ns(fields[0]);
    if (table.count(ns) != 0) return error(absl::StrCat("namespace ", ns, " is listed twice"));
    NamespaceQuota& quota = table[ns];
    for (size_t i = 1; i < fields.size(); ++i) {
      std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(fields[i], '=');
      const absl::string_view key = kv.first;
      const absl::string_view value = kv.second;
      if (key == kCost) {
        double x;
        if (!absl::SimpleAtod(value, &x) || !std::isfinite(x) || x < 0) {
          return error(
              absl::StrCat(key, ": want a number >= 0, got \"", value.substr(0, 32), "\""));
        }
        quota.max_cost_usd_per_day = x;
        continue;
      }
      if (key == kWeight) {
        int64_t n;
        if (!absl::SimpleAtoi(value, &n) || n < 1 || n > QuotaBook::kMaxWeight) {
          return error(absl::StrCat(key, ": want a whole number from 1 to ", QuotaBook::kMaxWeight,
                                    ", got \"", value.substr(0, 32), "\""));
        }
        quota.weight = n;
        continue;
      }
      std::optional<int64_t>* slot = key == kConcurrent ? &quota.max_concurrent_runs
                                     : key == kStarts   ? &quota.max_starts_per_minute
                                     : key == kTokens   ? &quota.max_tokens_per_day
                                                        : nullptr;
      if (slot == nullptr) {
        return error(absl::StrCat("unknown key \"", key.substr(0, 32), "\" (keys: ", kConcurrent,
                                  ", ", kStarts, ", ", kTokens, ", ", kCost, ", ", kWeight, ")"));
      }
      int64_t n;
      if (!absl::SimpleAtoi(value, &n) || n < 0) {
        return error(
            absl::StrCat(key, ": want a whole number >= 0, got \"", value.substr(0, 32), "\""));
      }
      *slot = n;
    }
  }
  return table;
}

QuotaBook::QuotaBook(QuotaOptions options, RunStore* store, Clock* clock)
    : options_(std::move(options)), store_(store), clock_(clock) {}

absl::Status QuotaBook::Load() {
  if (options_.file.empty()) return absl::OkStatus();
  absl::MutexLock lock(&mu_);
  std::string stamp = FileStamp(options_.file);
  absl::StatusOr<std::map<std::string, NamespaceQuota>> table = ReadQuotaFile(options_.file);
  if (!table.ok()) return table.status();
  table_ = std::move(*table);
  file_stamp_ = stamp;
  last_check_ = clock_->Now();
  return absl::OkStatus();
}

void QuotaBook::MaybeReloadLocked(absl::Time now) {
  if (options_.file.empty() || now - last_check_ < options_.reload_check) return;
  last_check_ = now;
  std::string stamp = FileStamp(options_.file);
  if (stamp == file_stamp_) return;
  file_stamp_ = stamp;
  absl::StatusOr<std::map<std::string, NamespaceQuota>> table = ReadQuotaFile(options_.file);
  if (!table.ok()) {
    LogError("quotas file not reloaded; the previous quotas stay in force",
             {{"error", table.status().message()}});
    Metrics::Global().Add("rein_router_quota_reload_errors_total", 1);
    return;
  }
  table_ = std::move(*table);
  LogInfo("quotas file reloaded", {{"namespaces", absl::StrCat(table_.size())}});
}

int QuotaBook::Weight(const std::string& ns) {
  absl::MutexLock lock(&mu_);
  MaybeReloadLocked(clock_->Now());
  auto it = table_.find(ns.empty() ? "default" : ns);
  if (it == table_.end() || !it->second.weight) return 1;
  return static_cast<int>(*it->second.weight);
}

absl::StatusOr<bool> QuotaBook::UseOf(const std::string& ns, Use* use) {
  const absl::Time now = clock_->Now();
  {
    absl::MutexLock lock(&mu_);
    MaybeReloadLocked(now);
    auto it = table_.find(ns);
    if (it == table_.end()) return false;
    use->quota = it->second;
    std::deque<absl::Time>& starts = starts_[ns];
    while (!starts.empty() && now - starts.front() >= absl::Minutes(1)) starts.pop_front();
    use->starts_in_window = static_cast<int64_t>(starts.size());
    const std::pair<int64_t, int64_t>& reserved = reserved_[ns];
    use->reserved_runs = reserved.first;
    use->reserved_starts = reserved.second;
    if (!starts.empty()) use->window_frees = starts.front() + absl::Minutes(1);
  }
  use->day_ends = NextUtcDay(now);
  absl::StatusOr<NamespaceUsage> usage =
      store_->GetNamespaceUsage(ns, use->day_ends - absl::Hours(24));
  if (!usage.ok()) return usage.status();
  use->usage = *usage;
  return true;
}

absl::Mutex* QuotaBook::AdmissionLock(const std::string& ns) {
  absl::MutexLock lock(&mu_);
  std::unique_ptr<absl::Mutex>& gate = admission_locks_[ns];
  if (gate == nullptr) gate = std::make_unique<absl::Mutex>();
  return gate.get();
}

absl::Status QuotaBook::AdmitStart(const std::string& ns, rein::v1::RunSpec* spec,
                                   const std::function<bool()>& create) {
  return Admit(ns, spec, create);
}

absl::Status QuotaBook::AdmitChild(const std::string& ns, const std::function<bool()>& create) {
  return Admit(ns, nullptr, create);
}

absl::Status QuotaBook::Admit(const std::string& ns, rein::v1::RunSpec* spec,
                              const std::function<bool()>& create) {
  const bool start = spec != nullptr;
  absl::Mutex* gate = AdmissionLock(ns);
  bool limited = false;
  {
    // The store's count and the reservations are read together, one admission of the
    // namespace at a time; a reservation ends (below) only after its create has committed,
    // so a run is always counted in one or the other.
    absl::MutexLock admitting(gate);
    Use use;
    ASSIGN_OR_RETURN(limited, UseOf(ns, &use));
    if (limited) {
      RETURN_IF_ERROR(Check(ns, use, spec));
      absl::MutexLock lock(&mu_);
      std::pair<int64_t, int64_t>& reserved = reserved_[ns];
      ++reserved.first;
      if (start) ++reserved.second;
    }
  }
  const bool created = create();
  if (!limited) return absl::OkStatus();
  absl::MutexLock admitting(gate);
  absl::MutexLock lock(&mu_);
  std::pair<int64_t, int64_t>& reserved = reserved_[ns];
  --reserved.first;
  if (start) --reserved.second;
  if (start && created) starts_[ns].push_back(clock_->Now());
  return absl::OkStatus();
}

absl::Status QuotaBook::Check(const std::string& ns, const Use& use, rein::v1::RunSpec* spec) {
  const NamespaceQuota& q = use.quota;
  const std::string day_frees = absl::StrCat("frees at ", absl::FormatTime(use.day_ends));
  const int64_t runs = use.usage.unfinished_runs + use.reserved_runs;
  if (q.max_concurrent_runs && runs >= *q.max_concurrent_runs) {
    return Exhausted(ns, kConcurrent,
                     absl::StrCat(runs, " of ", *q.max_concurrent_runs,
                                  " runs unfinished (paused runs and child runs count); frees "
                                  "when one ends"));
  }
  if (spec == nullptr) return absl::OkStatus();  // a child: its parent's budget bounds it
  const int64_t starts = use.starts_in_window + use.reserved_starts;
  if (q.max_starts_per_minute && starts >= *q.max_starts_per_minute) {
    return Exhausted(
        ns, kStarts,
        absl::StrCat(starts, " of ", *q.max_starts_per_minute,
                     " starts in the last minute; frees at ", absl::FormatTime(use.window_frees)));
  }
  if (q.max_tokens_per_day && use.usage.tokens >= *q.max_tokens_per_day) {
    return Exhausted(ns, kTokens,
                     absl::StrCat(use.usage.tokens, " of ", *q.max_tokens_per_day,
                                  " tokens used today (UTC); ", day_frees));
  }
  if (q.max_cost_usd_per_day && use.usage.cost_usd >= *q.max_cost_usd_per_day) {
    return Exhausted(ns, kCost,
                     absl::StrCat(use.usage.cost_usd, " of ", *q.max_cost_usd_per_day,
                                  " USD spent today (UTC); ", day_frees));
  }
  rein::v1::Limits* limits = spec->mutable_limits();
  if (q.max_tokens_per_day) {
    const int64_t left = *q.max_tokens_per_day - use.usage.tokens;
    if (limits->token_budget() <= 0 || limits->token_budget() > left) {
      limits->set_token_budget(left);
    }
  }
  if (q.max_cost_usd_per_day) {
    const double left = *q.max_cost_usd_per_day - use.usage.cost_usd;
    if (limits->cost_budget_usd() <= 0 || limits->cost_budget_usd() > left) {
      limits->set_cost_budget_usd(left);
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<rein::v1::QuotaReport> QuotaBook::Report(const std::string& ns) {
  rein::v1::QuotaReport report;
  report.set_namespace_(ns);
  Use use;
  absl::StatusOr<bool> limited = UseOf(ns, &use);
  if (!limited.ok()) return limited.status();
  if (!*limited) return report;
  auto add = [&](const char* name, double limit, double used, std::optional<absl::Time> frees) {
    rein::v1::QuotaUse* q = report.add_quotas();
    q->set_name(name);
    q->set_limit(limit);
    q->set_used(used);
    if (frees.has_value() && used >= limit) *q->mutable_frees_at() = ToProtoTime(*frees);
  };
  const NamespaceQuota& q = use.quota;
  if (q.max_concurrent_runs) {
    add(kConcurrent, *q.max_concurrent_runs, use.usage.unfinished_runs, std::nullopt);
  }
  if (q.max_starts_per_minute) {
    add(kStarts, *q.max_starts_per_minute, use.starts_in_window, use.window_frees);
  }
  if (q.max_tokens_per_day) add(kTokens, *q.max_tokens_per_day, use.usage.tokens, use.day_ends);
  if (q.max_cost_usd_per_day) {
    add(kCost, *q.max_cost_usd_per_day, use.usage.cost_usd, use.day_ends);
  }
  return report;
}

}  // namespace rein
