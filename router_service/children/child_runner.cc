// ChildRunner: the driver's side of child runs.
#include "router_service/children/child_runner.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/limits.h"
#include "common/log.h"
#include "router_service/children/child_group.h"

namespace rein {

using rein::v1::ChildRun;

ChildrenObserved ChildRunner::Observe(const ChildrenEffect& effect) {
  ChildrenObserved observed;
  std::vector<ChildRun> group = effect.group;
  for (const ChildrenEffect::Start& start : effect.start) {
    rein::v1::Run child;
    Transition t = router_->NewRun(hooks_.new_run_id(), start.member.request_id(), start.spec,
                                   clock_->Now(), &child);
    ClampChildDeadline(start.deadline, &t, &child);
    child.set_owner(router_id_);  // the parent's router drives the children it starts
    child.set_lease_epoch(1);
    absl::StatusOr<CreateResult> created = CreateChild(child, std::move(t.events));
    if (created.ok() && created->run.spec().parent().run_id() != start.spec.parent().run_id()) {
      // The key names a run that is not this parent's child: never adopt it.
      created = absl::FailedPreconditionError(absl::StrCat(
          "request_id ", start.member.request_id(), " names run ", created->run.run_id(),
          ", which is not a child of run ", start.spec.parent().run_id(),
          " (its spec.parent.run_id is \"", created->run.spec().parent().run_id(), "\")"));
    }
    for (ChildRun& member : group) {
      if (member.request_id() != start.member.request_id()) continue;
      if (created.ok()) {
        member.set_run_id(created->run.run_id());
      } else {
        member.set_start_error(std::string(created.status().message()));
      }
    }
    if (!created.ok()) {
      LogError("cannot start a child run",
               {{"request_id", start.member.request_id()}, {"error", created.status().ToString()}});
      continue;
    }
    if (created->created) {
      LogInfo("child run started", {{"run_id", created->run.run_id()},
                                    {"trace_id", created->run.state().trace().trace_id()},
                                    {"parent", start.spec.parent().run_id()}});
      hooks_.drive(created->run);
    }
  }
  for (const ChildRun& member : group) {
    if (member.run_id().empty()) {
      observed.children.push_back(member);  // not started: start_error says why
      continue;
    }
    absl::StatusOr<rein::v1::Run> child = store_->GetRun(member.run_id());
    if (!child.ok()) {
      observed.status = child.status();
      return observed;
    }
    if (effect.cancel && !StageRouter::IsTerminal(child->state().stage())) {
      hooks_.cancel(member.run_id(), effect.cancel_reason);
    }
    observed.children.push_back(
        ObserveChild(member, *child, router_->options().max_observation_bytes));
  }
  return observed;
}

absl::StatusOr<CreateResult> ChildRunner::CreateChild(const rein::v1::Run& child,
                                                      std::vector<rein::v1::RunEvent> events) {
  // A child created before (by this router before a crash, or another before a takeover) is
  // found without being admitted again. A router from before children took their parent's
  // namespace created them in `default`: a group it opened finds its children there, not a
  // second set.
  const std::string& ns = child.spec().namespace_();
  for (const std::string& where : {ns, std::string()}) {
    absl::StatusOr<rein::v1::Run> earlier = store_->FindRunByRequestId(where, child.request_id());
    if (earlier.ok()) return CreateResult{*std::move(earlier), /*created=*/false};
    if (!absl::IsNotFound(earlier.status())) return earlier.status();
    if (ns.empty()) break;
  }
  if (!hooks_.admit) return store_->CreateRun(child, std::move(events));
  // A new child counts in its namespace's max_concurrent_runs; refused, it fails with the
  // reason (the parent sees it at the join).
  absl::StatusOr<CreateResult> created = absl::InternalError("the child was not created");
  absl::Status admitted = hooks_.admit(std::string(NamespaceOrDefault(ns)), [&] {
    created = store_->CreateRun(child, std::move(events));
    return created.ok() && created->created;
  });
  if (!admitted.ok()) return admitted;
  return created;
}

void ChildRunner::FillChildren(rein::v1::Run* parent) {
  parent->clear_children();
  for (const ChildRun& member : parent->state().children()) {
    ChildRun* shown = parent->add_children();
    *shown = member;
    if (member.run_id().empty()) continue;
    absl::StatusOr<rein::v1::Run> child = store_->GetRun(member.run_id());
    if (child.ok()) shown->set_stage(child->state().stage());
  }
}

absl::StatusOr<RunPage> ChildRunner::ListChildren(const std::string& parent_run_id,
                                                  const std::string& namespace_name) {
  absl::StatusOr<rein::v1::Run> parent = store_->GetRun(parent_run_id);
  if (parent.ok() && !namespace_name.empty() &&
      NamespaceOrDefault(parent->spec().namespace_()) != namespace_name) {
    parent = absl::NotFoundError("another namespace's run");  // answered as an unknown id
  }
  if (!parent.ok()) {
    if (absl::IsNotFound(parent.status())) {
      return absl::NotFoundError(absl::StrCat("parent_run_id: run ", parent_run_id, " not found"));
    }
    return parent.status();
  }
  RunPage page;
  for (const ChildRun& member : parent->state().children()) {
    if (member.run_id().empty()) continue;
    absl::StatusOr<rein::v1::Run> child = store_->GetRun(member.run_id());
    if (!child.ok()) return child.status();
    page.runs.push_back(*std::move(child));
  }
  return page;
}

}  // namespace rein
