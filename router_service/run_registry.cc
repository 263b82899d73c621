// RunRegistry: the runs a RunEngine drives, each with what the engine keeps beside its state.
#include "router_service/run_registry.h"

#include <utility>

#include "common/metrics.h"

namespace rein {

std::shared_ptr<RunEntry> RunRegistry::Find(const std::string& run_id) {
  absl::MutexLock lock(&mu_);
  auto it = runs_.find(run_id);
  return it == runs_.end() ? nullptr : it->second;
}

std::shared_ptr<RunEntry> RunRegistry::Track(const rein::v1::Run& run) {
  auto entry = std::make_shared<RunEntry>();
  entry->share = run.spec().namespace_();
  {
    absl::MutexLock lock(&entry->mu);
    entry->run = run;
  }
  absl::MutexLock lock(&mu_);
  runs_.emplace(run.run_id(), entry);
  Metrics::Global().Set("rein_router_active_runs", runs_.size());
  return entry;
}

void RunRegistry::Forget(const std::string& run_id) {
  absl::MutexLock lock(&mu_);
  runs_.erase(run_id);
  Metrics::Global().Set("rein_router_active_runs", runs_.size());
}

void RunRegistry::Remove(const std::string& run_id, const std::shared_ptr<RunEntry>& entry) {
  absl::MutexLock lock(&mu_);
  auto it = runs_.find(run_id);
  if (it != runs_.end() && it->second == entry) runs_.erase(it);
  Metrics::Global().Set("rein_router_active_runs", runs_.size());
}

std::vector<std::pair<std::string, std::shared_ptr<RunEntry>>> RunRegistry::All() {
  absl::MutexLock lock(&mu_);
  return {runs_.begin(), runs_.end()};
}

int RunRegistry::size() {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(runs_.size());
}

}  // namespace rein
