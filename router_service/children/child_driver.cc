// ChildDriver: the engine's side of child runs: a WAITING parent's children observed on a
// worker, a parent woken when a child ends, and the children GetRun and ListRuns show.
#include "router_service/children/child_driver.h"

#include <utility>

namespace rein {

ChildDriver::ChildDriver(RunStore* store, const StageRouter* router, Clock* clock,
                         std::string router_id, RunRegistry* runs, WorkPool* pool, Hooks hooks)
    : runner_(store, router, clock, std::move(router_id), hooks.runner),
      runs_(runs),
      pool_(pool),
      hooks_(std::move(hooks)) {}

void ChildDriver::Dispatch(const std::shared_ptr<RunEntry>& entry, const ChildrenEffect& effect) {
  std::weak_ptr<RunEntry> weak = entry;
  pool_->Post([this, weak, children = effect] {
    ChildrenObserved observed = runner_.Observe(children);
    hooks_.done(weak.lock(), observed);
  });
}

void ChildDriver::Committed(const rein::v1::Run& run) {
  if (run.spec().has_parent() && StageRouter::IsTerminal(run.state().stage())) {
    pool_->Post([this, parent = run.spec().parent().run_id()] { WakeParent(parent); });
  }
}

void ChildDriver::WakeParent(const std::string& parent_id) {
  std::shared_ptr<RunEntry> entry = runs_->Find(parent_id);
  if (!entry) return;  // another router's: its poll reads the children
  {
    absl::MutexLock lock(&entry->mu);
    if (entry->run.state().stage() != rein::v1::WAITING) return;
    entry->not_before = absl::InfinitePast();
  }
  hooks_.advance(entry);
}

void ChildDriver::FillChildren(rein::v1::Run* parent) {
  if (parent->state().children_size() > 0) runner_.FillChildren(parent);
}

absl::StatusOr<RunPage> ChildDriver::ListChildren(const std::string& parent_run_id,
                                                  const std::string& namespace_name) {
  return runner_.ListChildren(parent_run_id, namespace_name);
}

}  // namespace rein
