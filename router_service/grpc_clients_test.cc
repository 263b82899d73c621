// The gRPC planner and executor clients against in-process servers: replies arrive, and a call
// that has finished holds nothing of its callback (so the engine's pattern, a handle kept by
// something the callback also holds, is freed).
#include "router_service/grpc_clients.h"

#include <pthread.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace rein {
namespace {

class FakeExecutor final : public rein::v1::Executor::CallbackService {
 public:
  grpc::ServerUnaryReactor* ListTools(grpc::CallbackServerContext* ctx,
                                      const rein::v1::ListToolsRequest*,
                                      rein::v1::ListToolsResponse* resp) override {
    resp->add_tools()->set_name("list_files");
    auto* reactor = ctx->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }
  grpc::ServerUnaryReactor* Execute(grpc::CallbackServerContext* ctx,
                                    const rein::v1::ExecuteRequest* req,
                                    rein::v1::ExecuteResponse* resp) override {
    resp->set_ok(true);
    resp->set_output("ran " + req->tool());
    auto* reactor = ctx->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }
};

class FakePlanner final : public rein::v1::Planner::CallbackService {
 public:
  grpc::ServerUnaryReactor* Decide(grpc::CallbackServerContext* ctx, const rein::v1::DecideRequest*,
                                   rein::v1::DecideResponse* resp) override {
    resp->mutable_tool_call()->set_tool("list_files");
    auto* reactor = ctx->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }
  // Held until Release: calls in flight for as long as the test wants.
  grpc::ServerUnaryReactor* Evaluate(grpc::CallbackServerContext* ctx,
                                     const rein::v1::EvaluateRequest*,
                                     rein::v1::EvaluateResponse*) override {
    auto* reactor = ctx->DefaultReactor();
    absl::MutexLock lock(&mu_);
    held_.push_back(reactor);
    return reactor;
  }
  int held() {
    absl::MutexLock lock(&mu_);
    return static_cast<int>(held_.size());
  }
  void Release() {
    absl::MutexLock lock(&mu_);
    for (grpc::ServerUnaryReactor* reactor : held_) reactor->Finish(grpc::Status::OK);
    held_.clear();
  }

 private:
  absl::Mutex mu_;
  std::vector<grpc::ServerUnaryReactor*> held_;
};

// The name of the calling thread.
std::string ThreadName() {
  char name[32] = {0};
  pthread_getname_np(pthread_self(), name, sizeof name);
  return name;
}

class GrpcClientsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(&executor_);
    builder.RegisterService(&planner_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    channel_ = MakeRoundRobinChannel("127.0.0.1:" + std::to_string(port_));
  }
  void TearDown() override { server_->Shutdown(std::chrono::system_clock::now()); }

  FakeExecutor executor_;
  FakePlanner planner_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  std::shared_ptr<grpc::Channel> channel_;
};

// What the engine does: the handle of the call is kept by an object its callback also holds
// (RunEngine's ChainedCall) until the reply has been applied, then dropped by whoever holds
// that object. Once the reply ran and the last outside reference goes, the holder must be freed.
struct Holder {
  std::shared_ptr<PendingCall> call;
};

template <typename Reply, typename StartFn>
void ExpectFreedAfterReply(StartFn start) {
  absl::Notification replied;
  std::weak_ptr<Holder> weak;
  {
    auto holder = std::make_shared<Holder>();
    weak = holder;
    holder->call = start([holder, &replied](absl::StatusOr<Reply> reply) {
      EXPECT_TRUE(reply.ok()) << reply.status();
      replied.Notify();
    });
  }
  ASSERT_TRUE(replied.WaitForNotificationWithTimeout(absl::Seconds(30)));
  // gRPC lets go of its side of the call just after the callback returns.
  const absl::Time until = absl::Now() + absl::Seconds(10);
  while (!weak.expired() && absl::Now() < until) absl::SleepFor(absl::Milliseconds(5));
  EXPECT_TRUE(weak.expired()) << "a finished call still holds its callback (a reference cycle)";
}

TEST_F(GrpcClientsTest, FinishedExecutorCallsHoldNothingOfTheirCallback) {
  GrpcExecutorClient client(channel_);
  ExpectFreedAfterReply<rein::v1::ListToolsResponse>([&](auto done) {
    return client.ListTools(rein::v1::ListToolsRequest(), absl::Now() + absl::Seconds(30),
                            std::move(done));
  });
  rein::v1::ExecuteRequest request;
  request.set_tool("list_files");
  request.set_call_id("c1");
  ExpectFreedAfterReply<rein::v1::ExecuteResponse>([&](auto done) {
    return client.Execute(request, absl::Now() + absl::Seconds(30), std::move(done));
  });
}

TEST_F(GrpcClientsTest, FinishedPlannerCallsHoldNothingOfTheirCallback) {
  GrpcPlannerClient client(channel_);
  ExpectFreedAfterReply<rein::v1::DecideResponse>([&](auto done) {
    return client.Decide(rein::v1::DecideRequest(), absl::Now() + absl::Seconds(30),
                         std::move(done));
  });
}

TEST_F(GrpcClientsTest, RepliesArrive) {
  GrpcExecutorClient client(channel_);
  absl::Notification replied;
  absl::StatusOr<rein::v1::ExecuteResponse> got;
  rein::v1::ExecuteRequest request;
  request.set_tool("read_file");
  request.set_call_id("c2");
  auto call = client.Execute(request, absl::Now() + absl::Seconds(30),
                             [&](absl::StatusOr<rein::v1::ExecuteResponse> reply) {
                               got = std::move(reply);
                               replied.Notify();
                             });
  ASSERT_TRUE(replied.WaitForNotificationWithTimeout(absl::Seconds(30)));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->output(), "ran read_file");
}

// Makes one Decide call and returns the name of the thread its callback ran on ("" if no
// reply came within 30 s).
std::string DecideRepliedOn(GrpcPlannerClient& client) {
  absl::Notification replied;
  std::string thread;
  std::shared_ptr<PendingCall> call =
      client.Decide(rein::v1::DecideRequest(), absl::Now() + absl::Seconds(30),
                    [&](absl::StatusOr<rein::v1::DecideResponse> reply) {
                      EXPECT_TRUE(reply.ok()) << reply.status();
                      thread = ThreadName();
                      replied.Notify();
                    });
  return replied.WaitForNotificationWithTimeout(absl::Seconds(30)) ? thread : "";
}

TEST_F(GrpcClientsTest, ALoneCallsReplyIsReadByTheReplyThreadAndManyGoToGrpcsThreads) {
  GrpcPlannerClient client(channel_);
  // One call in flight: its reply is read, and its callback run, by the router's reply thread.
  EXPECT_EQ(DecideRepliedOn(client), "rein-replies");
  // Six calls held by the server: the first four go to the reply thread, the rest (and any call
  // started while they are in flight) to gRPC's callback threads.
  absl::Mutex mu;
  std::vector<std::string> threads;
  std::vector<absl::Status> statuses;
  bool all = false;
  std::vector<std::shared_ptr<PendingCall>> calls;
  for (int i = 0; i < 6; ++i) {
    calls.push_back(client.Evaluate(rein::v1::EvaluateRequest(), absl::Now() + absl::Seconds(30),
                                    [&](absl::StatusOr<rein::v1::EvaluateResponse> reply) {
                                      absl::MutexLock lock(&mu);
                                      threads.push_back(ThreadName());
                                      statuses.push_back(reply.status());
                                      all = threads.size() == 6;
                                    }));
  }
  for (int i = 0; i < 3000 && planner_.held() < 6; ++i) absl::SleepFor(absl::Milliseconds(10));
  ASSERT_EQ(planner_.held(), 6);
  const std::string seventh = DecideRepliedOn(client);
  EXPECT_NE(seventh, "");
  EXPECT_NE(seventh, "rein-replies");
  // A call on the reply thread can be cancelled like any other.
  calls[0]->Cancel();
  planner_.Release();
  absl::MutexLock lock(&mu);
  ASSERT_TRUE(mu.AwaitWithTimeout(absl::Condition(&all), absl::Seconds(30)));
  int on_reply_thread = 0;
  int cancelled = 0;
  for (size_t i = 0; i < threads.size(); ++i) {
    on_reply_thread += threads[i] == "rein-replies";
    cancelled += absl::IsCancelled(statuses[i]);
    EXPECT_TRUE(statuses[i].ok() || absl::IsCancelled(statuses[i])) << statuses[i];
  }
  EXPECT_EQ(on_reply_thread, 4);
  EXPECT_EQ(cancelled, 1);
}

}  // namespace
}  // namespace rein
