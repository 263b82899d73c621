// Fake planner and executor services for the router benchmarks (see fake_services.h).
#include "bench/fake_services.h"

#include <cstdio>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace rein::bench {
namespace {

// A run's goal says how many iterations it wants: "loop <n>".
int TargetOf(const std::string& goal) {
  int n = 0;
  return absl::SimpleAtoi(goal.substr(goal.rfind(' ') + 1), &n) ? n : 1;
}

// Finishes the call once `capacity` serves it, or at once without one.
grpc::ServerUnaryReactor* Reply(grpc::CallbackServerContext* ctx, CallCapacity* capacity) {
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  if (capacity == nullptr) {
    reactor->Finish(grpc::Status::OK);
  } else {
    capacity->Serve(reactor);
  }
  return reactor;
}

// Starts one server for `service` on `address`; `*target` is where it is reached.
std::unique_ptr<grpc::Server> Serve(grpc::Service* service, const std::string& address,
                                    std::string* target) {
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort(address, grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  *target = address.rfind("unix:", 0) == 0 ? address : absl::StrCat("127.0.0.1:", port);
  return server;
}

}  // namespace

CallCapacity::CallCapacity(int capacity, absl::Duration delay)
    : capacity_(capacity), delay_(delay), thread_([this] { Loop(); }) {}

CallCapacity::~CallCapacity() {
  Drain();
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void CallCapacity::Serve(grpc::ServerUnaryReactor* reactor) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    waiting_.push_back(reactor);
  }
  cv_.notify_all();
}

void CallCapacity::Drain() {
  std::deque<grpc::ServerUnaryReactor*> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    all.swap(waiting_);
    for (auto& [until, r] : serving_) all.push_back(r);
    serving_.clear();
  }
  for (auto* r : all) r->Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "bench over"));
}

void CallCapacity::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    const absl::Time now = absl::Now();
    std::vector<grpc::ServerUnaryReactor*> done;
    // serving_ is in order of finish (every call takes the same delay).
    while (!serving_.empty() && serving_.front().first <= now) {
      done.push_back(serving_.front().second);
      serving_.pop_front();
    }
    while (static_cast<int>(serving_.size()) < capacity_ && !waiting_.empty()) {
      serving_.emplace_back(now + delay_, waiting_.front());
      waiting_.pop_front();
    }
    if (!done.empty()) {
      lock.unlock();
      for (auto* r : done) r->Finish(grpc::Status::OK);
      served_ += static_cast<int64_t>(done.size());
      lock.lock();
      continue;
    }
    if (serving_.empty()) {
      cv_.wait(lock);
    } else {
      cv_.wait_until(lock, absl::ToChronoTime(serving_.front().first));
    }
  }
}

grpc::ServerUnaryReactor* FakePlanner::Plan(grpc::CallbackServerContext* ctx,
                                            const rein::v1::PlanRequest*,
                                            rein::v1::PlanResponse* resp) {
  rein::v1::SubTask* task = resp->add_subtasks();
  task->set_id("work");
  task->set_description("loop");
  if (!options_.name.empty()) resp->set_backend(options_.name);
  return Reply(ctx, options_.planner_capacity);
}

grpc::ServerUnaryReactor* FakePlanner::Decide(grpc::CallbackServerContext* ctx,
                                              const rein::v1::DecideRequest* req,
                                              rein::v1::DecideResponse* resp) {
  rein::v1::ToolCall* call = resp->mutable_tool_call();
  call->set_tool("list_files");
  call->set_args_json(absl::StrCat("{\"path\":\"d", req->iteration(), "\"}"));
  if (Payloads* p = options_.payloads; p != nullptr) {
    p->decide_request = req->ByteSizeLong();
    p->decide_response = resp->ByteSizeLong();
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (hold_) {
      grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
      held_.push_back(reactor);
      return reactor;
    }
  }
  return Reply(ctx, options_.planner_capacity);
}

grpc::ServerUnaryReactor* FakePlanner::Evaluate(grpc::CallbackServerContext* ctx,
                                                const rein::v1::EvaluateRequest* req,
                                                rein::v1::EvaluateResponse* resp) {
  const int target = target_ > 0 ? target_.load() : TargetOf(req->goal());
  resp->set_goal_achieved(req->iteration() >= target);
  resp->set_status(resp->goal_achieved() ? rein::v1::RunEvent::Evaluation::COMPLETED
                                         : rein::v1::RunEvent::Evaluation::NEEDS_MORE_WORK);
  if (Payloads* p = options_.payloads; p != nullptr) {
    p->evaluate_request = req->ByteSizeLong();
    p->evaluate_response = resp->ByteSizeLong();
  }
  return Reply(ctx, options_.planner_capacity);
}

void FakePlanner::Hold() {
  std::lock_guard<std::mutex> lock(mu_);
  hold_ = true;
}

size_t FakePlanner::held() {
  std::lock_guard<std::mutex> lock(mu_);
  return held_.size();
}

void FakePlanner::Release() {
  std::vector<grpc::ServerUnaryReactor*> held;
  {
    std::lock_guard<std::mutex> lock(mu_);
    hold_ = false;
    held.swap(held_);
  }
  for (auto* r : held) r->Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "bench over"));
}

grpc::ServerUnaryReactor* FakeExecutor::ListTools(grpc::CallbackServerContext* ctx,
                                                  const rein::v1::ListToolsRequest*,
                                                  rein::v1::ListToolsResponse* resp) {
  rein::v1::ToolSpec* tool = resp->add_tools();
  tool->set_name("list_files");
  if (!options_.tool_schema_json.empty()) tool->set_input_schema_json(options_.tool_schema_json);
  return Reply(ctx, nullptr);
}

grpc::ServerUnaryReactor* FakeExecutor::Execute(grpc::CallbackServerContext* ctx,
                                                const rein::v1::ExecuteRequest* req,
                                                rein::v1::ExecuteResponse* resp) {
  resp->set_ok(true);
  resp->set_output(absl::StrCat("listing of ", req->args_json()));
  if (!options_.name.empty()) resp->set_executor_id(options_.name);
  if (Payloads* p = options_.payloads; p != nullptr) {
    p->execute_request = req->ByteSizeLong();
    p->execute_response = resp->ByteSizeLong();
  }
  return Reply(ctx, options_.executor_capacity);
}

FakeServices::FakeServices(const FakeServiceOptions& options)
    : options_(options), planner_(options), executor_(options) {}

FakeServices::~FakeServices() {
  Release();
  const auto now = std::chrono::system_clock::now();
  if (planner_server_) planner_server_->Shutdown(now);
  if (executor_server_) executor_server_->Shutdown(now);
}

bool FakeServices::Start(const std::string& socket_dir) {
  const bool unix_sockets = !socket_dir.empty();
  planner_server_ = Serve(
      &planner_, unix_sockets ? absl::StrCat("unix:", socket_dir, "/planner.sock") : "127.0.0.1:0",
      &planner_target_);
  executor_server_ =
      Serve(&executor_,
            unix_sockets ? absl::StrCat("unix:", socket_dir, "/executor.sock") : "127.0.0.1:0",
            &executor_target_);
  if (!planner_server_ || !executor_server_) {
    fprintf(stderr, "the fake planner or executor could not listen\n");
    return false;
  }
  return true;
}

void FakeServices::Release() {
  planner_.Release();
  if (options_.planner_capacity != nullptr) options_.planner_capacity->Drain();
  if (options_.executor_capacity != nullptr) options_.executor_capacity->Drain();
}

}  // namespace rein::bench
