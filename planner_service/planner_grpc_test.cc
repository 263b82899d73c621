// Service tests of PlannerGrpcService through a real gRPC server and an in-process channel.
#include "planner_service/planner_grpc.h"

#include <chrono>
#include <future>
#include <memory>
#include <string>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "common/grpc_status.h"
#include "gmock/gmock.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "planner_service/scripted_backend.h"
#include "rein/v1/planner.grpc.pb.h"

namespace rein {
namespace {

using ::rein::v1::DecideRequest;
using ::rein::v1::DecideResponse;
using ::rein::v1::EvaluateRequest;
using ::rein::v1::EvaluateResponse;
using ::rein::v1::PlanRequest;
using ::rein::v1::PlanResponse;

constexpr char kScript[] = R"json({
  "plan": [
    {"when": {"replan_reason_contains": "garbled"},
     "error": {"code": "INTERNAL", "message": "invalid output: no subtasks"}},
    {"reply": {"reasoning": "plan at ${iteration}",
               "subtasks": [{"id": "list", "description": "list", "allowedTools": ["list_files"]}]}}],
  "decide": [
    {"when": {"subtask": "slow"}, "delay_ms": 10000, "reply": {"reasoning": "too late"}},
    {"when": {"subtask": "down"}, "error": {"code": "UNAVAILABLE", "message": "model overloaded"}},
    {"when": {"subtask": "key"}, "error": {"code": "UNAUTHENTICATED", "message": "invalid x-api-key"}},
    {"reply": {"toolCall": {"tool": "list_files", "args": {"path": "."}}}}],
  "evaluate": [
    {"when": {"tool": "list_files"}, "reply": {"status": "COMPLETED", "summary": "listed"}}]
})json";

// A backend that records the deadline it was given and answers at once.
class DeadlineRecordingBackend final : public PlannerBackend {
 public:
  absl::StatusOr<PlanResponse> Plan(const PlanRequest&, absl::Time deadline) override {
    deadline_ = deadline;
    return PlanResponse();
  }
  absl::StatusOr<DecideResponse> Decide(const DecideRequest&, absl::Time deadline) override {
    deadline_ = deadline;
    return DecideResponse();
  }
  absl::StatusOr<EvaluateResponse> Evaluate(const EvaluateRequest&, absl::Time deadline) override {
    deadline_ = deadline;
    return EvaluateResponse();
  }
  std::string name() const override { return "recording"; }

  absl::Time deadline() const { return deadline_; }

 private:
  absl::Time deadline_;  // written by one call at a time in these tests
};

// A server running PlannerGrpcService over `backend`, with a stub on an in-process channel.
class TestServer {
 public:
  explicit TestServer(PlannerBackend* backend) : service_(backend) {
    grpc::ServerBuilder builder;
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    channel_ = server_->InProcessChannel(grpc::ChannelArguments());
    stub_ = rein::v1::Planner::NewStub(channel_);
  }
  ~TestServer() {
    if (server_) server_->Shutdown();
  }

  rein::v1::Planner::Stub* stub() { return stub_.get(); }
  std::shared_ptr<grpc::Channel> channel() { return channel_; }
  grpc::Server* server() { return server_.get(); }

 private:
  PlannerGrpcService service_;
  std::unique_ptr<grpc::Server> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<rein::v1::Planner::Stub> stub_;
};

class PlannerGrpcServiceTest : public ::testing::Test {
 protected:
  PlannerGrpcServiceTest() {
    absl::StatusOr<std::unique_ptr<ScriptedBackend>> backend =
        ScriptedBackend::FromJson(kScript, "service_test.json", RealClock());
    EXPECT_TRUE(backend.ok()) << backend.status();
    backend_ = *std::move(backend);
    server_ = std::make_unique<TestServer>(backend_.get());
  }

  rein::v1::Planner::Stub* stub() { return server_->stub(); }

  std::unique_ptr<ScriptedBackend> backend_;
  std::unique_ptr<TestServer> server_;
};

PlanRequest MakePlan() {
  PlanRequest request;
  request.set_run_id("run-7");
  request.set_goal("list the files");
  request.set_iteration(2);
  return request;
}

DecideRequest MakeDecide(const std::string& subtask) {
  DecideRequest request;
  request.set_run_id("run-7");
  request.set_goal("list the files");
  request.mutable_subtask()->set_id(subtask);
  request.set_iteration(3);
  return request;
}

TEST_F(PlannerGrpcServiceTest, PlanDecideEvaluateRoundTrip) {
  grpc::ClientContext plan_context;
  PlanResponse plan;
  grpc::Status status = stub()->Plan(&plan_context, MakePlan(), &plan);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(plan.reasoning(), "plan at 2");
  ASSERT_EQ(plan.subtasks_size(), 1);
  EXPECT_EQ(plan.subtasks(0).id(), "list");
  EXPECT_EQ(plan.backend(), "scripted");
  EXPECT_GT(plan.usage().input_tokens(), 0);
  EXPECT_GT(plan.usage().output_tokens(), 0);

  grpc::ClientContext decide_context;
  DecideResponse decide;
  status = stub()->Decide(&decide_context, MakeDecide("list"), &decide);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(decide.tool_call().tool(), "list_files");
  EXPECT_EQ(decide.tool_call().args_json(), R"({"path":"."})");
  EXPECT_EQ(decide.backend(), "scripted");

  EvaluateRequest evaluate_request;
  evaluate_request.set_run_id("run-7");
  evaluate_request.set_goal("list the files");
  evaluate_request.mutable_subtask()->set_id("list");
  evaluate_request.mutable_action()->set_tool("list_files");
  evaluate_request.mutable_action()->set_ok(true);
  evaluate_request.set_observation("a.txt");
  grpc::ClientContext evaluate_context;
  EvaluateResponse evaluate;
  status = stub()->Evaluate(&evaluate_context, evaluate_request, &evaluate);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(evaluate.status(), rein::v1::RunEvent::Evaluation::COMPLETED);
  EXPECT_EQ(evaluate.summary(), "listed");
  EXPECT_EQ(evaluate.backend(), "scripted");
}

TEST_F(PlannerGrpcServiceTest, ScriptedErrorCodesAndMessagesPassThrough) {
  DecideResponse decide;
  grpc::ClientContext down_context;
  grpc::Status status = stub()->Decide(&down_context, MakeDecide("down"), &decide);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(status.error_message(), "model overloaded");

  grpc::ClientContext key_context;
  status = stub()->Decide(&key_context, MakeDecide("key"), &decide);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(status.error_message(), "invalid x-api-key");

  PlanRequest garbled = MakePlan();
  garbled.set_replan_reason("garbled reply");
  PlanResponse plan;
  grpc::ClientContext plan_context;
  status = stub()->Plan(&plan_context, garbled, &plan);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INTERNAL);
  EXPECT_EQ(status.error_message(), "invalid output: no subtasks");

  EvaluateRequest unmatched;
  unmatched.set_goal("g");
  unmatched.mutable_subtask()->set_id("read");
  unmatched.mutable_action()->set_tool("read_file");
  unmatched.set_iteration(4);
  EvaluateResponse evaluate;
  grpc::ClientContext evaluate_context;
  status = stub()->Evaluate(&evaluate_context, unmatched, &evaluate);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(status.error_message(),
            "scripted planner: no evaluate rule matches (subtask=read, iteration=4)");
}

TEST_F(PlannerGrpcServiceTest, InvalidRequestsNameTheField) {
  PlanRequest no_goal = MakePlan();
  no_goal.clear_goal();
  PlanResponse plan;
  grpc::ClientContext plan_context;
  grpc::Status status = stub()->Plan(&plan_context, no_goal, &plan);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(status.error_message(), "goal: must not be empty");

  DecideResponse decide;
  grpc::ClientContext decide_context;
  status = stub()->Decide(&decide_context, MakeDecide(""), &decide);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(status.error_message(), "subtask.id: must not be empty");

  EvaluateRequest evaluate_request;
  evaluate_request.set_goal("g");
  EvaluateResponse evaluate;
  grpc::ClientContext evaluate_context;
  status = stub()->Evaluate(&evaluate_context, evaluate_request, &evaluate);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(status.error_message(), "subtask.id: must not be empty");
}

TEST_F(PlannerGrpcServiceTest, ClientDeadlineEndsADelayedReplyOnTheServer) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(300));
  DecideResponse decide;
  const absl::Time start = absl::Now();
  grpc::Status status = stub()->Decide(&context, MakeDecide("slow"), &decide);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  // The handler itself must have returned at the deadline, not after its 10 s delay:
  // Shutdown() waits for every running handler.
  server_->server()->Shutdown();
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
}

TEST(PlannerServiceDeadlineTest, ClientDeadlineReachesTheBackend) {
  DeadlineRecordingBackend backend;
  TestServer server(&backend);
  const auto client_deadline = std::chrono::system_clock::now() + std::chrono::seconds(30);
  grpc::ClientContext context;
  context.set_deadline(client_deadline);
  PlanResponse plan;
  ASSERT_TRUE(server.stub()->Plan(&context, MakePlan(), &plan).ok());
  EXPECT_LT(absl::AbsDuration(backend.deadline() - absl::FromChrono(client_deadline)),
            absl::Seconds(1));
}

TEST(PlannerServiceDeadlineTest, NoClientDeadlineIsInfiniteFuture) {
  DeadlineRecordingBackend backend;
  TestServer server(&backend);
  grpc::ClientContext context;
  DecideResponse decide;
  ASSERT_TRUE(server.stub()->Decide(&context, MakeDecide("list"), &decide).ok());
  EXPECT_EQ(backend.deadline(), absl::InfiniteFuture());
}

// A backend whose every call fails with the given status.
class FailingBackend final : public PlannerBackend {
 public:
  explicit FailingBackend(absl::Status status) : status_(std::move(status)) {}
  absl::StatusOr<PlanResponse> Plan(const PlanRequest&, absl::Time) override { return status_; }
  absl::StatusOr<DecideResponse> Decide(const DecideRequest&, absl::Time) override {
    return status_;
  }
  absl::StatusOr<EvaluateResponse> Evaluate(const EvaluateRequest&, absl::Time) override {
    return status_;
  }
  std::string name() const override { return "failing"; }

 private:
  const absl::Status status_;
};

TEST(PlannerServiceWireTest, ErrorMessageEndingInASpaceReachesTheClientTrimmed) {
  // An excerpt of a cut reply can end in a space; grpc-js drops such a grpc-message whole.
  FailingBackend backend(absl::UnavailableError(
      "Messages API reply (HTTP 200) is not a JSON object: {\"content\": [ "));
  TestServer server(&backend);
  grpc::ClientContext context;
  PlanResponse plan;
  const grpc::Status status = server.stub()->Plan(&context, MakePlan(), &plan);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(status.error_message(),
            "Messages API reply (HTTP 200) is not a JSON object: {\"content\": [");
}

TEST(PlannerServiceWireTest, ErrorGoesOnTheWireTrimmedWithItsCode) {
  // What the adapter sends for a backend error: the code kept, the message without the
  // surrounding whitespace an HTTP/2 peer such as grpc-js would drop it for.
  absl::Status status = absl::InternalError("  invalid output: x\n");
  status.SetPayload("rein/usage", absl::Cord("u"));
  const grpc::Status wire = ToGrpcStatus(status);
  EXPECT_EQ(wire.error_code(), grpc::StatusCode::INTERNAL);
  EXPECT_EQ(wire.error_message(), "invalid output: x");
  EXPECT_TRUE(ToGrpcStatus(absl::OkStatus()).ok());
}

// Sends `bytes` as the raw request of `method` and returns the status.
grpc::Status RawCall(grpc::GenericStub* stub, const std::string& method, const std::string& bytes) {
  grpc::Slice slice(bytes);
  grpc::ByteBuffer request(&slice, 1);
  grpc::ByteBuffer response;
  grpc::ClientContext context;
  std::promise<grpc::Status> done;
  stub->UnaryCall(&context, method, grpc::StubOptions(), &request, &response,
                  [&done](grpc::Status status) { done.set_value(std::move(status)); });
  return done.get_future().get();
}

TEST_F(PlannerGrpcServiceTest, ThousandMalformedRequestsLeaveItServing) {
  grpc::GenericStub generic(server_->channel());
  // Field 2 (goal), wire type 2, length 3, invalid UTF-8: proto3 refuses to parse it.
  const std::string bad_utf8("\x12\x03\xff\xfe\xfd", 5);
  // A length that runs past the end of the message.
  const std::string truncated(
      "\x12\x7f"
      "abc",
      5);
  for (int i = 0; i < 1000; ++i) {
    grpc::Status status;
    grpc::StatusCode expected = grpc::StatusCode::INVALID_ARGUMENT;
    switch (i % 6) {
      case 0:
        status = RawCall(&generic, "/rein.v1.Planner/Plan", bad_utf8);
        expected = grpc::StatusCode::INTERNAL;
        break;
      case 1:
        status = RawCall(&generic, "/rein.v1.Planner/Decide", truncated);
        expected = grpc::StatusCode::INTERNAL;
        break;
      case 2:
        status = RawCall(&generic, "/rein.v1.Planner/NoSuchMethod", "x");
        expected = grpc::StatusCode::UNIMPLEMENTED;
        break;
      case 3: {
        PlanRequest request = MakePlan();
        request.set_goal(std::string(20000, 'g'));
        request.set_iteration(-i);
        PlanResponse response;
        grpc::ClientContext context;
        status = stub()->Plan(&context, request, &response);
        break;
      }
      case 4: {
        DecideRequest request = MakeDecide("");
        DecideResponse response;
        grpc::ClientContext context;
        status = stub()->Decide(&context, request, &response);
        break;
      }
      case 5: {
        EvaluateRequest request;
        request.mutable_subtask()->set_id("x");
        EvaluateResponse response;
        grpc::ClientContext context;
        status = stub()->Evaluate(&context, request, &response);
        break;
      }
    }
    ASSERT_EQ(status.error_code(), expected) << "request " << i << ": " << status.error_message();
  }
  grpc::ClientContext context;
  PlanResponse plan;
  grpc::Status status = stub()->Plan(&context, MakePlan(), &plan);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(plan.reasoning(), "plan at 2");
}

}  // namespace
}  // namespace rein
