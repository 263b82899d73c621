// Service tests of rein.v1.Executor through an in-process gRPC server.
#include "executor_service/executor_grpc.h"

#include <memory>
#include <random>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/grpc_status.h"
#include "common/status_reason.h"
#include "executor_service/testing/temp_workspace.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "rein/v1/executor.grpc.pb.h"

namespace rein {
namespace {

using ::rein::testing::TempWorkspace;

class ExecutorGrpcServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    temp_.WriteFile("hello.txt", "hello\nworld\n");
    ExecutorOptions options;
    options.workspace_root = temp_.root();
    options.executor_id = "exec-test:1";
    auto executor = ToolExecutor::Create(options);
    ASSERT_TRUE(executor.ok()) << executor.status();
    executor_ = *std::move(executor);
    service_ = std::make_unique<ExecutorGrpcService>(executor_.get());
    grpc::ServerBuilder builder;
    builder.RegisterService(service_.get());
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    stub_ = rein::v1::Executor::NewStub(server_->InProcessChannel(grpc::ChannelArguments()));
  }

  void TearDown() override {
    if (server_) server_->Shutdown();
  }

  grpc::Status Execute(const rein::v1::ExecuteRequest& request,
                       rein::v1::ExecuteResponse* response) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    return stub_->Execute(&context, request, response);
  }

  int calls_ = 0;

  rein::v1::ExecuteRequest Request(const std::string& tool, const std::string& args) {
    rein::v1::ExecuteRequest request;
    // A call_id names one call: mutating calls are journaled by it.
    request.set_call_id(absl::StrCat("run-7-", ++calls_));
    request.set_run_id("run-7");
    request.set_workspace(TempWorkspace::kName);
    request.set_tool(tool);
    request.set_args_json(args);
    return request;
  }

  TempWorkspace temp_;
  std::unique_ptr<ToolExecutor> executor_;
  std::unique_ptr<ExecutorGrpcService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<rein::v1::Executor::Stub> stub_;
};

TEST_F(ExecutorGrpcServiceTest, ListToolsReturnsSpecsAndExecutorId) {
  grpc::ClientContext context;
  rein::v1::ListToolsResponse response;
  ASSERT_TRUE(stub_->ListTools(&context, rein::v1::ListToolsRequest(), &response).ok());
  ASSERT_EQ(response.tools_size(), 6);
  EXPECT_EQ(response.tools(2).name(), "read_file");
  EXPECT_FALSE(response.tools(2).mutating());
  EXPECT_EQ(response.tools(2).default_timeout().seconds(), 30);
  EXPECT_EQ(nlohmann::json::parse(response.tools(2).input_schema_json())["required"][0], "path");
  EXPECT_EQ(response.executor_id(), "exec-test:1");
  EXPECT_EQ(response.tools(3).name(), "run_command");
  EXPECT_TRUE(response.tools(3).mutating());
  EXPECT_EQ(response.tools(5).name(), "write_file");
  EXPECT_TRUE(response.tools(5).mutating());
  for (const rein::v1::ToolSpec& tool : response.tools()) EXPECT_EQ(tool.origin(), "builtin");
  EXPECT_EQ(response.sandbox().rfind("bwrap: ", 0), 0u) << response.sandbox();
}

TEST_F(ExecutorGrpcServiceTest, CommandExitAndTimeoutAreDistinctInTheReply) {
  rein::v1::ExecuteResponse response;
  ASSERT_TRUE(Execute(Request("run_command", R"({"shell": "echo hi; exit 3"})"), &response).ok());
  EXPECT_FALSE(response.ok());
  EXPECT_EQ(response.exit_code(), 3);
  EXPECT_FALSE(response.timed_out());
  EXPECT_EQ(response.output(), "hi\n[exit status 3]\n");
  EXPECT_EQ(response.error().code(), "NONZERO_EXIT");
  rein::v1::ExecuteResponse slow;
  ASSERT_TRUE(
      Execute(Request("run_command", R"({"shell": "sleep 30", "timeout_seconds": 1})"), &slow)
          .ok());
  EXPECT_FALSE(slow.ok());
  EXPECT_TRUE(slow.timed_out());
  EXPECT_EQ(slow.error().code(), "TIMEOUT");
}

TEST_F(ExecutorGrpcServiceTest, RepeatedMutatingCallIsReplayedAndForgottenWithTheRun) {
  const rein::v1::ExecuteRequest request =
      Request("run_command", R"({"shell": "echo once >> count; cat count"})");
  rein::v1::ExecuteResponse first, second;
  ASSERT_TRUE(Execute(request, &first).ok());
  ASSERT_TRUE(Execute(request, &second).ok());
  EXPECT_FALSE(first.replayed());
  EXPECT_TRUE(second.replayed());
  EXPECT_FALSE(second.outcome_unknown());
  EXPECT_EQ(second.output(), first.output());
  EXPECT_EQ(second.executor_id(), "exec-test:1");
  EXPECT_EQ(second.duration().seconds(), first.duration().seconds());
  grpc::ClientContext context;
  rein::v1::ForgetRunRequest forget;
  forget.set_run_id("run-7");
  rein::v1::ForgetRunResponse forgotten;
  ASSERT_TRUE(stub_->ForgetRun(&context, forget, &forgotten).ok());
  EXPECT_EQ(forgotten.calls_forgotten(), 1);
  grpc::ClientContext bad_context;
  EXPECT_EQ(stub_->ForgetRun(&bad_context, rein::v1::ForgetRunRequest(), &forgotten).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(ExecutorGrpcServiceTest, ExecuteReturnsOutputDurationAndExecutorId) {
  rein::v1::ExecuteResponse response;
  grpc::Status status = Execute(Request("read_file", R"({"path": "hello.txt"})"), &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_TRUE(response.ok());
  EXPECT_EQ(response.output(), "1: hello\n2: world\n");
  EXPECT_FALSE(response.truncated());
  EXPECT_FALSE(response.has_error());
  EXPECT_EQ(response.executor_id(), "exec-test:1");
  EXPECT_TRUE(response.has_duration());
  EXPECT_GE(response.duration().nanos(), 0);
}

TEST_F(ExecutorGrpcServiceTest, CallWithoutDeadlineRunsUnderTheToolTimeout) {
  grpc::ClientContext context;  // no deadline: the server sees an infinite one
  rein::v1::ExecuteResponse response;
  ASSERT_TRUE(stub_->Execute(&context, Request("list_files", ""), &response).ok());
  EXPECT_TRUE(response.ok()) << response.error().message();
  EXPECT_EQ(response.output(), "hello.txt\tfile\t12\n");
}

TEST_F(ExecutorGrpcServiceTest, ToolFailureIsAnOkReplyWithError) {
  rein::v1::ExecuteResponse response;
  ASSERT_TRUE(Execute(Request("read_file", R"({"path": "/etc/passwd"})"), &response).ok());
  EXPECT_FALSE(response.ok());
  EXPECT_EQ(response.error().code(), "PERMISSION_DENIED");
  EXPECT_NE(response.error().message().find("/etc/passwd"), std::string::npos);
  EXPECT_EQ(response.output(), "");
}

TEST_F(ExecutorGrpcServiceTest, UnknownToolIsInvalidArgument) {
  rein::v1::ExecuteResponse response;
  grpc::Status status = Execute(Request("delete_everything", "{}"), &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(status.error_message().rfind("tool: unknown tool \"delete_everything\"", 0), 0u)
      << status.error_message();
}

TEST_F(ExecutorGrpcServiceTest, EmptyCallIdIsInvalidArgument) {
  rein::v1::ExecuteRequest request = Request("read_file", R"({"path": "hello.txt"})");
  request.clear_call_id();
  rein::v1::ExecuteResponse response;
  grpc::Status status = Execute(request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(status.error_message(), "call_id: must not be empty");
}

TEST_F(ExecutorGrpcServiceTest, InvalidTimeoutIsInvalidArgument) {
  rein::v1::ExecuteRequest request = Request("read_file", R"({"path": "hello.txt"})");
  request.mutable_limits()->mutable_timeout()->set_seconds(5);
  request.mutable_limits()->mutable_timeout()->set_nanos(-3);
  rein::v1::ExecuteResponse response;
  grpc::Status status = Execute(request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(status.error_message(), "limits.timeout: not a valid duration");
}

TEST_F(ExecutorGrpcServiceTest, MaxOutputBytesLimitIsApplied) {
  rein::v1::ExecuteRequest request = Request("read_file", R"({"path": "hello.txt"})");
  request.mutable_limits()->set_max_output_bytes(5);
  rein::v1::ExecuteResponse response;
  ASSERT_TRUE(Execute(request, &response).ok());
  EXPECT_TRUE(response.ok());
  EXPECT_TRUE(response.truncated());
  EXPECT_EQ(response.output(), "1: he\n[output truncated: 13 bytes omitted]\n");
}

TEST_F(ExecutorGrpcServiceTest, InvalidUtf8OnTheWireIsRefusedByTheTransport) {
  // proto3 strings must be UTF-8: such a request never reaches the service code.
  rein::v1::ExecuteResponse response;
  grpc::Status status = Execute(Request("read_file", "{\"path\": \"\xff\xfe\"}"), &response);
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.error_code(), grpc::StatusCode::UNAVAILABLE) << status.error_message();
  grpc::ClientContext context;
  rein::v1::ListToolsResponse tools;
  EXPECT_TRUE(stub_->ListTools(&context, rein::v1::ListToolsRequest(), &tools).ok());
}

TEST_F(ExecutorGrpcServiceTest, MalformedRequestsLeaveTheServiceAnswering) {
  std::mt19937 rng(12345);
  const std::vector<std::string> tools = {"read_file", "list_files", "search_text", "file_info"};
  const std::string fragments[] = {
      "{",           "}",      "[",    "]",         "\"path\"", ":",
      ",",           "\"..\"", "null", "-1",        "1e999",    "\"/etc/passwd\"",
      "\"pattern\"", "\"(\"",  "true", "\"limit\"", "\\u0000",  "\"offset\""};
  int ok_replies = 0;
  int invalid_argument = 0;
  for (int i = 0; i < 1000; ++i) {
    std::string args;
    const int length = static_cast<int>(rng() % 64);
    if (i % 2 == 0) {
      // Random bytes (kept to ASCII: proto3 strings must be UTF-8 on the wire).
      for (int k = 0; k < length; ++k) args.push_back(static_cast<char>(rng() % 128));
    } else {
      for (int k = 0; k < length / 4; ++k) args += fragments[rng() % std::size(fragments)];
    }
    std::string tool;
    if (i % 5 == 0) {
      const int tool_length = static_cast<int>(rng() % 20);
      for (int k = 0; k < tool_length; ++k) tool.push_back(static_cast<char>(32 + rng() % 95));
    } else {
      tool = tools[rng() % tools.size()];
    }
    rein::v1::ExecuteRequest request = Request(tool, args);
    if (i % 7 == 0) request.set_workspace(i % 14 == 0 ? "../ws" : "");
    if (i % 11 == 0) request.mutable_limits()->set_max_output_bytes(-static_cast<int64_t>(rng()));
    rein::v1::ExecuteResponse response;
    grpc::Status status = Execute(request, &response);
    if (status.ok()) {
      ++ok_replies;
      if (!response.ok()) {
        EXPECT_FALSE(response.error().code().empty()) << args;
      }
    } else {
      EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
          << tool << " " << args << ": " << status.error_message();
      ++invalid_argument;
    }
  }
  EXPECT_EQ(ok_replies + invalid_argument, 1000);
  EXPECT_GT(ok_replies, 0);
  EXPECT_GT(invalid_argument, 0);

  grpc::ClientContext context;
  rein::v1::ListToolsResponse tools_response;
  ASSERT_TRUE(stub_->ListTools(&context, rein::v1::ListToolsRequest(), &tools_response).ok());
  EXPECT_EQ(tools_response.tools_size(), 6);
}

TEST_F(ExecutorGrpcServiceTest, MissingWorkspaceAndUnsupportedCopyCarryReasons) {
  rein::v1::ExecuteRequest request = Request("read_file", R"({"path": "hello.txt"})");
  request.set_workspace("no_such_workspace");
  rein::v1::ExecuteResponse response;
  ASSERT_TRUE(Execute(request, &response).ok());
  EXPECT_FALSE(response.ok());
  EXPECT_EQ(response.error().code(), "NOT_FOUND");
  EXPECT_EQ(response.error().reason(), reason::kWorkspaceNotFound);

  // This service has no workspace history: CopyWorkspace is not supported.
  grpc::ClientContext context;
  rein::v1::CopyWorkspaceRequest copy;
  copy.set_workspace(TempWorkspace::kName);
  copy.set_target("copy");
  rein::v1::CopyWorkspaceResponse copied;
  const absl::Status status = FromGrpcStatus(stub_->CopyWorkspace(&context, copy, &copied));
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(ReasonOf(status), reason::kNotSupported);
}

}  // namespace
}  // namespace rein
