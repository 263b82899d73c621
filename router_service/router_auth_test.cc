// Service tests of the Router's bearer tokens and roles over real gRPC (loopback TCP): every
// role against every RPC, and the principal recorded in the events of start, review, cancel.
#include <stdlib.h>

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "google/protobuf/descriptor.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "router_service/auth.h"
#include "router_service/router_grpc.h"
#include "router_service/run_engine.h"
#include "router_service/testing/fake_clients.h"
#include "router_service/testing/served_router.h"

namespace rein {
namespace {

using rein::testing::FakeExecutorClient;
using rein::testing::FakePlannerClient;
using rein::testing::ServedRouter;
using rein::testing::ServedRouterOptions;

class RouterAuthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServedRouterOptions options;
    options.tokens = absl::StrCat("# principal roles\n",                                   //
                                  "sha256:", Sha256Hex("t-viewer"), " vera viewer\n",      //
                                  "sha256:", Sha256Hex("t-operator"), " otto operator\n",  //
                                  "sha256:", Sha256Hex("t-reviewer"), " rita reviewer\n",  //
                                  "sha256:", Sha256Hex("t-both"), " bo operator,reviewer\n");
    options.auth.reload_check = absl::Milliseconds(100);
    options.grpc.max_watch_streams_per_principal = kMaxWatches;
    options.grpc.revalidate = absl::Milliseconds(100);
    rein::testing::ScriptListFilesRun(&planner_, &executor_);
    ASSERT_TRUE(served_.Start(options, &planner_, &executor_).ok());
  }

  void TearDown() override { served_.Stop(); }

  std::unique_ptr<grpc::ClientContext> Context(const std::string& token) {
    auto context = std::make_unique<grpc::ClientContext>();
    if (!token.empty()) context->AddMetadata("authorization", "Bearer " + token);
    context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    return context;
  }

  rein::v1::RunSpec Spec(bool pause) {
    rein::v1::RunSpec spec;
    spec.set_goal("list things");
    if (pause) spec.add_pause_points(rein::v1::AFTER_PLAN);
    return spec;
  }

  // Calls `method` with `token` on a run id that does not exist (or a fresh spec for StartRun).
  grpc::StatusCode Call(const std::string& method, const std::string& token) {
    auto context = Context(token);
    const std::string run_id = "0123456789abcdef0123456789abcdef";
    rein::v1::Run run;
    if (method == "StartRun") {
      rein::v1::StartRunRequest request;
      *request.mutable_spec() = Spec(/*pause=*/true);
      return served_.stub->StartRun(context.get(), request, &run).error_code();
    }
    if (method == "GetRun") {
      rein::v1::GetRunRequest request;
      request.set_run_id(run_id);
      return served_.stub->GetRun(context.get(), request, &run).error_code();
    }
    if (method == "ListRuns") {
      rein::v1::ListRunsResponse reply;
      return served_.stub->ListRuns(context.get(), rein::v1::ListRunsRequest(), &reply)
          .error_code();
    }
    if (method == "CancelRun") {
      rein::v1::CancelRunRequest request;
      request.set_run_id(run_id);
      return served_.stub->CancelRun(context.get(), request, &run).error_code();
    }
    if (method == "ResumeRun") {
      rein::v1::ResumeRunRequest request;
      request.set_run_id(run_id);
      request.mutable_review()->mutable_approve();
      return served_.stub->ResumeRun(context.get(), request, &run).error_code();
    }
    if (method == "WatchRun") {
      rein::v1::WatchRunRequest request;
      request.set_run_id(run_id);
      auto reader = served_.stub->WatchRun(context.get(), request);
      rein::v1::RunEvent event;
      while (reader->Read(&event)) {
      }
      return reader->Finish().error_code();
    }
    rein::v1::ExportRunRequest request;
    request.set_run_id(run_id);
    auto reader = served_.stub->ExportRun(context.get(), request);
    rein::v1::RunSnapshot snapshot;
    while (reader->Read(&snapshot)) {
    }
    return reader->Finish().error_code();
  }

  std::vector<rein::v1::RunEvent> Events(const std::string& run_id) {
    auto context = Context("t-viewer");
    rein::v1::WatchRunRequest request;
    request.set_run_id(run_id);
    auto reader = served_.stub->WatchRun(context.get(), request);
    std::vector<rein::v1::RunEvent> events;
    rein::v1::RunEvent event;
    while (reader->Read(&event)) events.push_back(event);
    EXPECT_TRUE(reader->Finish().ok());
    return events;
  }

  rein::v1::Run WaitPaused(const std::string& run_id) {
    rein::v1::Run run;
    for (int i = 0; i < 1000 && run.state().stage() != rein::v1::PAUSED; ++i) {
      rein::v1::GetRunRequest request;
      request.set_run_id(run_id);
      EXPECT_TRUE(served_.stub->GetRun(Context("t-viewer").get(), request, &run).ok());
      absl::SleepFor(absl::Milliseconds(5));
    }
    return run;
  }

  static constexpr int kMaxWatches = 3;
  FakePlannerClient planner_;
  FakeExecutorClient executor_;
  ServedRouter served_;
};

TEST_F(RouterAuthTest, EveryRoleAgainstEveryRpc) {
  enum Want { kAllowed, kDenied, kUnauthenticated };
  const std::vector<std::string> methods = {"GetRun",   "ListRuns",  "WatchRun", "ExportRun",
                                            "StartRun", "CancelRun", "ResumeRun"};
  struct Row {
    std::string token;
    std::vector<Want> want;  // in the order of `methods`
  };
  const std::vector<Row> table = {
      {"t-viewer", {kAllowed, kAllowed, kAllowed, kAllowed, kDenied, kDenied, kDenied}},
      {"t-operator", {kAllowed, kAllowed, kAllowed, kAllowed, kAllowed, kAllowed, kDenied}},
      {"t-reviewer", {kAllowed, kAllowed, kAllowed, kAllowed, kDenied, kDenied, kAllowed}},
      {"t-both", {kAllowed, kAllowed, kAllowed, kAllowed, kAllowed, kAllowed, kAllowed}},
      {"", std::vector<Want>(7, kUnauthenticated)},
      {"t-nobody", std::vector<Want>(7, kUnauthenticated)},
  };
  for (const Row& row : table) {
    for (size_t i = 0; i < methods.size(); ++i) {
      SCOPED_TRACE(absl::StrCat(row.token.empty() ? "(no token)" : row.token, " ", methods[i]));
      grpc::StatusCode code = Call(methods[i], row.token);
      switch (row.want[i]) {
        case kAllowed:  // past auth: OK, or NOT_FOUND for the unknown run
          EXPECT_TRUE(code == grpc::StatusCode::OK || code == grpc::StatusCode::NOT_FOUND) << code;
          break;
        case kDenied: EXPECT_EQ(code, grpc::StatusCode::PERMISSION_DENIED); break;
        case kUnauthenticated: EXPECT_EQ(code, grpc::StatusCode::UNAUTHENTICATED); break;
      }
    }
  }
}

TEST_F(RouterAuthTest, PrincipalIsRecordedOnStartReviewAndCancel) {
  rein::v1::StartRunRequest start;
  *start.mutable_spec() = Spec(/*pause=*/true);
  rein::v1::Run reviewed, cancelled;
  ASSERT_TRUE(served_.stub->StartRun(Context("t-operator").get(), start, &reviewed).ok());
  ASSERT_TRUE(served_.stub->StartRun(Context("t-both").get(), start, &cancelled).ok());

  rein::v1::Run paused = WaitPaused(reviewed.run_id());
  ASSERT_EQ(paused.state().stage(), rein::v1::PAUSED);
  rein::v1::ResumeRunRequest resume;
  resume.set_run_id(reviewed.run_id());
  resume.set_expected_version(paused.state().version());
  resume.mutable_review()->mutable_approve();
  rein::v1::Run out;
  ASSERT_TRUE(served_.stub->ResumeRun(Context("t-reviewer").get(), resume, &out).ok());

  ASSERT_EQ(WaitPaused(cancelled.run_id()).state().stage(), rein::v1::PAUSED);
  rein::v1::CancelRunRequest cancel;
  cancel.set_run_id(cancelled.run_id());
  ASSERT_TRUE(served_.stub->CancelRun(Context("t-both").get(), cancel, &out).ok());

  std::vector<rein::v1::RunEvent> events = Events(reviewed.run_id());
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.front().principal(), "otto");
  int resumed_by_rita = 0;
  for (const auto& e : events) {
    if (e.has_resumed()) {
      EXPECT_EQ(e.principal(), "rita");
      ++resumed_by_rita;
    }
  }
  EXPECT_EQ(resumed_by_rita, 1);
  EXPECT_EQ(events.back().principal(), "");  // the router's own step

  events = Events(cancelled.run_id());
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.front().principal(), "bo");
  EXPECT_TRUE(events.back().has_finished());
  EXPECT_EQ(events.back().principal(), "bo");  // the cancel ended it
}

// One principal cannot hold every stream, and a revoked token's open streams end.
TEST_F(RouterAuthTest, WatchStreamsAreCappedPerPrincipalAndEndWhenTheTokenIsRevoked) {
  rein::v1::StartRunRequest start;
  *start.mutable_spec() = Spec(/*pause=*/true);
  rein::v1::Run run;
  ASSERT_TRUE(served_.stub->StartRun(Context("t-operator").get(), start, &run).ok());
  ASSERT_EQ(WaitPaused(run.run_id()).state().stage(), rein::v1::PAUSED);  // streams stay open
  rein::v1::WatchRunRequest request;
  request.set_run_id(run.run_id());
  struct Stream {
    std::unique_ptr<grpc::ClientContext> context;
    std::unique_ptr<grpc::ClientReader<rein::v1::RunEvent>> reader;
  };
  auto open = [&](const std::string& token) {
    Stream s{Context(token), nullptr};
    s.reader = served_.stub->WatchRun(s.context.get(), request);
    return s;
  };
  std::vector<Stream> vera;
  for (int i = 0; i < kMaxWatches; ++i) {
    vera.push_back(open("t-viewer"));
    rein::v1::RunEvent first;
    ASSERT_TRUE(vera.back().reader->Read(&first)) << "stream " << i;
  }
  Stream refused = open("t-viewer");
  rein::v1::RunEvent event;
  EXPECT_FALSE(refused.reader->Read(&event));
  grpc::Status status = refused.reader->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(status.error_message().find("--max_watch_streams_per_principal"), std::string::npos);
  Stream rita = open("t-reviewer");  // another principal is not affected
  ASSERT_TRUE(rita.reader->Read(&event));

  // Revoke vera's token: her streams end, rita's does not.
  std::ofstream(served_.tokens_path) << "sha256:" << Sha256Hex("t-reviewer") << " rita reviewer\n";
  for (Stream& s : vera) {
    while (s.reader->Read(&event)) {
    }
    status = s.reader->Finish();
    EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED) << status.error_message();
    EXPECT_NE(status.error_message().find("revoked"), std::string::npos);
  }
  rita.context->TryCancel();
  while (rita.reader->Read(&event)) {
  }
  EXPECT_EQ(rita.reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
}

// A Router RPC whose handler lacks the auth hook would be open to anyone: every method of the
// service, present and future (ForkRun...), must refuse a call without a token.
TEST_F(RouterAuthTest, EveryRouterMethodRefusesACallWithoutAToken) {
  const google::protobuf::ServiceDescriptor* service =
      rein::v1::StartRunRequest::descriptor()->file()->FindServiceByName("Router");
  ASSERT_NE(service, nullptr);
  grpc::GenericStub generic(served_.channel);
  for (int i = 0; i < service->method_count(); ++i) {
    const std::string method = service->method(i)->name();
    SCOPED_TRACE(method);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    grpc::Slice empty("");  // an empty message: every field at its default
    grpc::ByteBuffer request(&empty, 1), response;
    grpc::CompletionQueue cq;
    auto call = generic.PrepareUnaryCall(
        &context, absl::StrCat("/", service->full_name(), "/", method), request, &cq);
    call->StartCall();
    grpc::Status status;
    call->Finish(&response, &status, reinterpret_cast<void*>(1));
    void* tag = nullptr;
    bool ok = false;
    ASSERT_TRUE(cq.Next(&tag, &ok));
    cq.Shutdown();
    while (cq.Next(&tag, &ok)) {
    }
    EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED) << status.error_message();
  }
}

}  // namespace
}  // namespace rein
