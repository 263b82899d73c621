// Fakes of PlannerClient and ExecutorClient for router tests: scripted by functions, able to
// hold calls open (to model calls in flight) and release them later.
#ifndef REIN_ROUTER_SERVICE_TESTING_FAKE_CLIENTS_H_
#define REIN_ROUTER_SERVICE_TESTING_FAKE_CLIENTS_H_

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "common/limits.h"
#include "router_service/clients.h"

namespace rein::testing {

// A call that the fake has not answered yet.
class FakePendingCall final : public PendingCall {
 public:
  explicit FakePendingCall(std::function<void()> on_cancel) : on_cancel_(std::move(on_cancel)) {}
  void Cancel() override {
    if (!cancelled_.exchange(true) && on_cancel_) on_cancel_();
  }

 private:
  std::function<void()> on_cancel_;
  std::atomic<bool> cancelled_{false};
};

// Holds answers until released; thread-safe.
class HeldCalls {
 public:
  void Add(std::function<void(bool cancelled)> answer) {
    absl::MutexLock lock(&mu_);
    held_.push_back(std::move(answer));
  }
  size_t size() {
    absl::MutexLock lock(&mu_);
    return held_.size();
  }
  // Blocks until at least `n` calls are held (the calls are then in flight).
  void AwaitAtLeast(size_t n) {
    absl::MutexLock lock(&mu_);
    auto enough = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return held_.size() >= n; };
    mu_.Await(absl::Condition(&enough));
  }
  // Number of held calls cancelled by their caller.
  int cancels() { return cancels_.load(); }
  void CountCancel() { ++cancels_; }
  // Answers every held call (as cancelled when `cancelled`).
  void ReleaseAll(bool cancelled = false) {
    std::vector<std::function<void(bool)>> held;
    {
      absl::MutexLock lock(&mu_);
      held.swap(held_);
    }
    for (auto& answer : held) answer(cancelled);
  }

 private:
  absl::Mutex mu_;
  std::vector<std::function<void(bool)>> held_ ABSL_GUARDED_BY(mu_);
  std::atomic<int> cancels_{0};
};

// Each stage's reply comes from a function of the request; a hold flag keeps calls open.
class FakePlannerClient final : public PlannerClient {
 public:
  std::function<absl::StatusOr<rein::v1::PlanResponse>(const rein::v1::PlanRequest&)> plan;
  std::function<absl::StatusOr<rein::v1::DecideResponse>(const rein::v1::DecideRequest&)> decide;
  std::function<absl::StatusOr<rein::v1::EvaluateResponse>(const rein::v1::EvaluateRequest&)>
      evaluate;
  std::atomic<bool> hold{false};
  HeldCalls held;
  std::atomic<int> calls{0};

  std::shared_ptr<PendingCall> Plan(const rein::v1::PlanRequest& request, absl::Time,
                                    ReplyCallback<rein::v1::PlanResponse> done) override {
    return Answer(plan(request), std::move(done));
  }
  std::shared_ptr<PendingCall> Decide(const rein::v1::DecideRequest& request, absl::Time,
                                      ReplyCallback<rein::v1::DecideResponse> done) override {
    return Answer(decide(request), std::move(done));
  }
  std::shared_ptr<PendingCall> Evaluate(const rein::v1::EvaluateRequest& request, absl::Time,
                                        ReplyCallback<rein::v1::EvaluateResponse> done) override {
    return Answer(evaluate(request), std::move(done));
  }

 private:
  template <typename T>
  std::shared_ptr<PendingCall> Answer(absl::StatusOr<T> reply, ReplyCallback<T> done) {
    ++calls;
    if (!hold) {
      done(std::move(reply));
      return std::make_shared<FakePendingCall>(nullptr);
    }
    auto shared_done = std::make_shared<ReplyCallback<T>>(std::move(done));
    auto answered = std::make_shared<std::atomic<bool>>(false);
    auto answer = [shared_done, answered, reply](bool cancelled) {
      if (answered->exchange(true)) return;
      (*shared_done)(cancelled ? absl::StatusOr<T>(absl::CancelledError("cancelled")) : reply);
    };
    held.Add(answer);
    return std::make_shared<FakePendingCall>([this, answer] {
      held.CountCancel();
      answer(true);
    });
  }
};

class FakeExecutorClient final : public ExecutorClient {
 public:
  // ListTools answers `tools`, or the namespace's list of `tools_by_namespace` when it has one
  // (keyed "default" for "").
  std::vector<rein::v1::ToolSpec> tools;
  std::map<std::string, std::vector<rein::v1::ToolSpec>> tools_by_namespace;
  std::function<absl::StatusOr<rein::v1::ExecuteResponse>(const rein::v1::ExecuteRequest&)> execute;
  std::atomic<bool> hold{false};
  HeldCalls held;
  std::atomic<int> executions{0};
  // Whether CopyWorkspace (for ForkRun) answers OK; false: UNIMPLEMENTED, as ExecutorClient's.
  bool copies_workspaces = false;

  std::shared_ptr<PendingCall> CopyWorkspace(
      const rein::v1::CopyWorkspaceRequest& request, absl::Time deadline,
      ReplyCallback<rein::v1::CopyWorkspaceResponse> done) override {
    if (!copies_workspaces)
      return ExecutorClient::CopyWorkspace(request, deadline, std::move(done));
    done(rein::v1::CopyWorkspaceResponse());
    return nullptr;
  }

  // The run_ids of every ForgetRun, in order.
  std::vector<std::string> forgotten() {
    absl::MutexLock lock(&forgotten_mu_);
    return forgotten_;
  }
  std::shared_ptr<PendingCall> ForgetRun(const rein::v1::ForgetRunRequest& request, absl::Time,
                                         ReplyCallback<rein::v1::ForgetRunResponse> done) override {
    {
      absl::MutexLock lock(&forgotten_mu_);
      forgotten_.push_back(request.run_id());
    }
    done(rein::v1::ForgetRunResponse());
    return std::make_shared<FakePendingCall>(nullptr);
  }

  std::shared_ptr<PendingCall> ListTools(const rein::v1::ListToolsRequest& request, absl::Time,
                                         ReplyCallback<rein::v1::ListToolsResponse> done) override {
    rein::v1::ListToolsResponse reply;
    auto own = tools_by_namespace.find(std::string(NamespaceOrDefault(request.namespace_())));
    for (const auto& tool : own != tools_by_namespace.end() ? own->second : tools) {
      *reply.add_tools() = tool;
    }
    done(reply);
    return std::make_shared<FakePendingCall>(nullptr);
  }
  std::shared_ptr<PendingCall> Execute(const rein::v1::ExecuteRequest& request, absl::Time,
                                       ReplyCallback<rein::v1::ExecuteResponse> done) override {
    ++executions;
    absl::StatusOr<rein::v1::ExecuteResponse> reply = execute(request);
    if (!hold) {
      done(std::move(reply));
      return std::make_shared<FakePendingCall>(nullptr);
    }
    auto shared_done = std::make_shared<ReplyCallback<rein::v1::ExecuteResponse>>(std::move(done));
    auto answered = std::make_shared<std::atomic<bool>>(false);
    auto answer = [shared_done, answered, reply](bool cancelled) {
      if (answered->exchange(true)) return;
      (*shared_done)(
          cancelled ? absl::StatusOr<rein::v1::ExecuteResponse>(absl::CancelledError("cancelled"))
                    : reply);
    };
    held.Add(answer);
    return std::make_shared<FakePendingCall>([this, answer] {
      held.CountCancel();
      answer(true);
    });
  }

 private:
  absl::Mutex forgotten_mu_;
  std::vector<std::string> forgotten_ ABSL_GUARDED_BY(forgotten_mu_);
};

// Scripts the fakes for the shortest run: a plan of one subtask ("s0"), one list_files call
// that succeeds, an evaluation that completes it with the goal achieved.
inline void ScriptListFilesRun(FakePlannerClient* planner, FakeExecutorClient* executor) {
  planner->plan = [](const rein::v1::PlanRequest&) {
    rein::v1::PlanResponse reply;
    auto* task = reply.add_subtasks();
    task->set_id("s0");
    task->set_description("list");
    return absl::StatusOr<rein::v1::PlanResponse>(reply);
  };
  planner->decide = [](const rein::v1::DecideRequest&) {
    rein::v1::DecideResponse reply;
    reply.mutable_tool_call()->set_tool("list_files");
    reply.mutable_tool_call()->set_args_json("{}");
    return absl::StatusOr<rein::v1::DecideResponse>(reply);
  };
  planner->evaluate = [](const rein::v1::EvaluateRequest&) {
    rein::v1::EvaluateResponse reply;
    reply.set_status(rein::v1::RunEvent::Evaluation::COMPLETED);
    reply.set_summary("listed");
    reply.set_goal_achieved(true);
    return absl::StatusOr<rein::v1::EvaluateResponse>(reply);
  };
  rein::v1::ToolSpec list;
  list.set_name("list_files");
  executor->tools = {list};
  executor->execute = [](const rein::v1::ExecuteRequest&) {
    rein::v1::ExecuteResponse reply;
    reply.set_ok(true);
    return absl::StatusOr<rein::v1::ExecuteResponse>(reply);
  };
}

}  // namespace rein::testing

#endif  // REIN_ROUTER_SERVICE_TESTING_FAKE_CLIENTS_H_
