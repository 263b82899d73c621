// Interfaces of what the router calls: the planner and the executors.
#ifndef REIN_ROUTER_SERVICE_CLIENTS_H_
#define REIN_ROUTER_SERVICE_CLIENTS_H_

#include <functional>
#include <memory>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "rein/v1/executor.pb.h"
#include "rein/v1/planner.pb.h"

namespace rein {

// A call in flight that can be abandoned. Cancel() is thread-safe and idempotent; the call's
// callback still runs (with CANCELLED).
class PendingCall {
 public:
  virtual ~PendingCall() = default;
  virtual void Cancel() = 0;
};

// A call that completed before it was returned: nothing to cancel.
class CompletedCall final : public PendingCall {
 public:
  void Cancel() override {}
};

template <typename T>
using ReplyCallback = std::function<void(absl::StatusOr<T>)>;

// Asynchronous planner calls. `done` runs exactly once, on any thread, and must not block.
class PlannerClient {
 public:
  virtual ~PlannerClient() = default;
  virtual std::shared_ptr<PendingCall> Plan(const rein::v1::PlanRequest& request,
                                            absl::Time deadline,
                                            ReplyCallback<rein::v1::PlanResponse> done) = 0;
  virtual std::shared_ptr<PendingCall> Decide(const rein::v1::DecideRequest& request,
                                              absl::Time deadline,
                                              ReplyCallback<rein::v1::DecideResponse> done) = 0;
  virtual std::shared_ptr<PendingCall> Evaluate(const rein::v1::EvaluateRequest& request,
                                                absl::Time deadline,
                                                ReplyCallback<rein::v1::EvaluateResponse> done) = 0;
};

// Asynchronous executor calls, with the same contract as PlannerClient.
class ExecutorClient {
 public:
  virtual ~ExecutorClient() = default;
  // The tools offered to request.namespace (a run sees its namespace's: docs/TOOLS.md).
  virtual std::shared_ptr<PendingCall> ListTools(
      const rein::v1::ListToolsRequest& request, absl::Time deadline,
      ReplyCallback<rein::v1::ListToolsResponse> done) = 0;
  virtual std::shared_ptr<PendingCall> Execute(const rein::v1::ExecuteRequest& request,
                                               absl::Time deadline,
                                               ReplyCallback<rein::v1::ExecuteResponse> done) = 0;
  // Workspace copies for ForkRun. By default UNIMPLEMENTED (a client without them cannot fork).
  virtual std::shared_ptr<PendingCall> CopyWorkspace(
      const rein::v1::CopyWorkspaceRequest& /*request*/, absl::Time /*deadline*/,
      ReplyCallback<rein::v1::CopyWorkspaceResponse> done) {
    done(absl::UnimplementedError("this executor client copies no workspaces"));
    return nullptr;
  }
  virtual std::shared_ptr<PendingCall> DeleteWorkspace(
      const rein::v1::DeleteWorkspaceRequest& /*request*/, absl::Time /*deadline*/,
      ReplyCallback<rein::v1::DeleteWorkspaceResponse> done) {
    done(absl::UnimplementedError("this executor client deletes no workspaces"));
    return nullptr;
  }
  // Tells the executors that a run ended (its call journal can go). Best effort: the default
  // answers UNIMPLEMENTED at once, for clients of executors without a journal.
  virtual std::shared_ptr<PendingCall> ForgetRun(const rein::v1::ForgetRunRequest& /*request*/,
                                                 absl::Time /*deadline*/,
                                                 ReplyCallback<rein::v1::ForgetRunResponse> done) {
    done(absl::UnimplementedError("ForgetRun: this executor client has no call journal"));
    return std::make_shared<CompletedCall>();
  }
};

}  // namespace rein

#endif  // REIN_ROUTER_SERVICE_CLIENTS_H_
