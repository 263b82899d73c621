// ChildGroup: the pure rules of child runs: which plans may delegate, opening a parallel group
// with budgets carved from the parent, the WAITING parent's next step, and the join.
#ifndef REIN_ROUTER_SERVICE_CHILDREN_CHILD_GROUP_H_
#define REIN_ROUTER_SERVICE_CHILDREN_CHILD_GROUP_H_

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "rein/v1/planner.pb.h"
#include "rein/v1/types.pb.h"
#include "router_service/children/child_effect.h"
#include "router_service/transition.h"

namespace rein {

// Defaults and bounds of Limits.max_children, max_parallel_children and max_depth.
inline constexpr int kMaxChildren = 100;
inline constexpr int kDefaultParallelChildren = 4;
inline constexpr int kMaxParallelChildren = 16;
inline constexpr int kDefaultChildDepth = 2;
inline constexpr int kMaxChildDepth = 4;

// The prefix of a child's request_id ("child:<parent run_id>:<group>:<index>"), reserved for
// the router: StartRun and ForkRun refuse a request_id that starts with it.
inline constexpr char kChildRequestIdPrefix[] = "child:";

// Checks and fills in the child-run limits of `limits` (normalized spec; INVALID_ARGUMENT
// naming spec.limits.<field>), and refuses spec.parent, which only the router sets.
absl::Status NormalizeChildLimits(rein::v1::RunSpec* spec);

// Child runs the run may still start (Limits.max_children less those in RunState.children).
int ChildrenLeft(const rein::v1::RunSpec& spec, const rein::v1::RunState& st);

// Fills PlanRequest.allow_delegation and its bounds from the run.
void OfferDelegation(const rein::v1::RunSpec& spec, const rein::v1::RunState& st,
                     rein::v1::PlanRequest* request);

// Whether `planned` (validated, top first, to go on top of `st`'s stack) fits the run's child
// limits: no delegate when the run may start no children, no more consecutive delegated
// subtasks than Limits.max_parallel_children, no more delegated subtasks than ChildrenLeft.
// INVALID_ARGUMENT naming `field`[i].delegate.
absl::Status CheckDelegation(const rein::v1::RunSpec& spec, const rein::v1::RunState& st,
                             const google::protobuf::RepeatedPtrField<rein::v1::SubTask>& planned,
                             const std::string& field);

// Whether the run is in DECIDING with a delegated subtask on top: the driver commits OpenGroup.
bool OpensGroup(const rein::v1::RunState& st);

// DECIDING with delegated subtasks on top -> WAITING with a new group: the consecutive
// delegated subtasks (at most max_parallel_children, ChildrenLeft and the iterations left),
// each a ChildRun with its request_id and the limits carved for it (CarveLimits). When none can
// be started (no children or iterations left), the top subtask fails instead and the run goes
// on as after an evaluation. Rules 1-6 first.
Transition OpenGroup(const StageRouterOptions& options, const rein::v1::Run& run, absl::Time now);

// The limits of each of `k` children of `run` started at `now`: equal shares of the parent's
// remaining iterations, retry budget, tokens, cost and children, its deadline, one level less.
// Never more in sum than the parent has left (docs/CHILD_RUNS.md, "The bound").
rein::v1::Limits CarveLimits(const rein::v1::Run& run, int k, absl::Time now);

// The limits of one child of weight `weight` in a group of `k` children weighing
// `total_weight` (RunSpec.child_share: its part of group_percent of what the parent has left;
// max_children is split equally). The parts of a group never sum past what the parent has left.
rein::v1::Limits CarveLimits(const rein::v1::Run& run, int k, int weight, int total_weight,
                             absl::Time now);

// The spec of the child for `member` (a delegated `task` of `parent`): the subtask's
// description as goal with the parent's goal as context, the subtask's tools, the parent's
// namespace, workspace, pause points, model and webhooks (notify), the carved limits, and
// spec.parent.
rein::v1::RunSpec ChildSpec(const rein::v1::Run& parent, const rein::v1::ChildRun& member,
                            const rein::v1::SubTask& task);

// The members of the current group (RunState.children of group child_groups).
std::vector<rein::v1::ChildRun> CurrentGroup(const rein::v1::RunState& st);

// The next step of a WAITING run: wait out `not_before` (the poll interval or a backoff), else
// the kChildren effect (start the members not started, cancel when the parent was cancelled or
// passed its deadline, read every member).
NextStep NextWaiting(const rein::v1::Run& run, absl::Time now, absl::Time not_before);

// Applies the driver's ChildrenObserved to a WAITING parent: records children that started
// (or could not), and when every member has ended joins the group in one transition (each
// delegated subtask COMPLETED or FAILED from its child's outcome with the child's summary, the
// children's iterations, retries, tokens and cost added to the parent's, then rules 1-7 and on
// as after an evaluation). nullopt when nothing changed (the driver asks again later).
std::optional<Transition> OnChildren(const StageRouterOptions& options, const rein::v1::Run& run,
                                     const ChildrenObserved& observed, absl::Time now);

// What a parent learns of `child` (read from the store): its stage and, once it has ended, its
// outcome, summary (its last ended subtask's, else the outcome's message, capped at `cap`),
// iterations and retries.
rein::v1::ChildRun ObserveChild(const rein::v1::ChildRun& member, const rein::v1::Run& child,
                                size_t cap);

// A new child run (made by StageRouter::NewRun) never outlives its parent: its deadline is at
// most `parent_deadline`.
void ClampChildDeadline(absl::Time parent_deadline, Transition* t, rein::v1::Run* child);

}  // namespace rein

#endif  // REIN_ROUTER_SERVICE_CHILDREN_CHILD_GROUP_H_
