// Service test over real gRPC: a run's webhook URLs (RunSpec.notify) never leave the router in
// a reply, whatever the caller's role, while the stored run (and so a fork of it) keeps them.
#include <stdlib.h>

#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "router_service/auth.h"
#include "router_service/notify/webhook_config.h"
#include "router_service/testing/fake_clients.h"
#include "router_service/testing/served_router.h"

namespace rein {
namespace {

using rein::testing::FakeExecutorClient;
using rein::testing::FakePlannerClient;
using rein::testing::ServedRouter;
using rein::testing::ServedRouterOptions;

constexpr char kSecretUrl[] = "https://hooks.example/services/T0/B0/s3cretPath?token=s3cretQuery";
constexpr char kShown[] = "https://hooks.example/...";

class RouterNotifyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServedRouterOptions options;
    options.tokens =
        absl::StrCat("sha256:", Sha256Hex("a-viewer"), " ava viewer namespace=team-a\n",
                     "sha256:", Sha256Hex("a-op"), " abe operator namespace=team-a\n",
                     "sha256:", Sha256Hex("root"), " root admin\n");
    options.engine.check_notify = [this](const rein::v1::RunSpec& spec) {
      return webhooks_.CheckRunSpec(spec);
    };
    rein::testing::ScriptListFilesRun(&planner_, &executor_);
    executor_.copies_workspaces = true;
    ASSERT_TRUE(served_.Start(options, &planner_, &executor_).ok());
  }
  void TearDown() override { served_.Stop(); }

  std::unique_ptr<grpc::ClientContext> Context(const std::string& token, int seconds = 10) {
    auto context = std::make_unique<grpc::ClientContext>();
    context->AddMetadata("authorization", "Bearer " + token);
    context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(seconds));
    return context;
  }

  rein::v1::Run Get(const std::string& token, const std::string& run_id) {
    rein::v1::GetRunRequest request;
    request.set_run_id(run_id);
    rein::v1::Run run;
    grpc::Status status = served_.stub->GetRun(Context(token).get(), request, &run);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return run;
  }

  const WebhookConfig webhooks_{{}, {{"https://hooks.example/services", "", {}, "team-a"}}, ""};
  FakePlannerClient planner_;
  FakeExecutorClient executor_;
  ServedRouter served_;
};

TEST_F(RouterNotifyTest, RepliesShowOnlyTheOriginOfNotifyUrlsWhileTheStoreKeepsThem) {
  rein::v1::StartRunRequest start;
  start.mutable_spec()->set_goal("list things");
  start.mutable_spec()->add_pause_points(rein::v1::AFTER_PLAN);
  start.mutable_spec()->add_notify(kSecretUrl);
  rein::v1::Run run;
  grpc::Status status = served_.stub->StartRun(Context("a-op").get(), start, &run);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(run.spec().notify_size(), 1);
  EXPECT_EQ(run.spec().notify(0), kShown);
  for (int i = 0; i < 2000 && run.state().stage() != rein::v1::PAUSED; ++i) {
    absl::SleepFor(absl::Milliseconds(5));
    run = Get("a-viewer", run.run_id());
  }
  ASSERT_EQ(run.state().stage(), rein::v1::PAUSED);
  for (const char* token : {"a-viewer", "a-op", "root"}) {
    EXPECT_EQ(Get(token, run.run_id()).spec().notify(0), kShown) << token;
    rein::v1::ListRunsResponse listed;
    ASSERT_TRUE(
        served_.stub->ListRuns(Context(token).get(), rein::v1::ListRunsRequest(), &listed).ok());
    ASSERT_EQ(listed.runs_size(), 1) << token;
    EXPECT_EQ(listed.runs(0).spec().notify(0), kShown) << token;
  }
  // The stream of events and the export carry no spec; nothing of the URL either.
  {
    auto context = Context("a-viewer", /*seconds=*/2);
    rein::v1::WatchRunRequest request;
    request.set_run_id(run.run_id());
    auto reader = served_.stub->WatchRun(context.get(), request);
    rein::v1::RunEvent event;
    int events = 0;
    while (reader->Read(&event)) {
      ++events;
      EXPECT_FALSE(absl::StrContains(event.SerializeAsString(), "s3cret")) << event.DebugString();
    }
    EXPECT_GT(events, 0);
    reader->Finish();
  }
  {
    auto context = Context("a-viewer");
    rein::v1::ExportRunRequest request;
    request.set_run_id(run.run_id());
    auto reader = served_.stub->ExportRun(context.get(), request);
    rein::v1::RunSnapshot snapshot;
    while (reader->Read(&snapshot)) {
      EXPECT_FALSE(absl::StrContains(snapshot.state_json(), "s3cret"));
    }
    EXPECT_TRUE(reader->Finish().ok());
  }
  // A fork's reply is cut too, but the fork keeps the real URL (its notices go there).
  rein::v1::ForkRunRequest fork_request;
  fork_request.set_run_id(run.run_id());
  fork_request.set_seq(1);
  rein::v1::Run fork;
  status = served_.stub->ForkRun(Context("a-op").get(), fork_request, &fork);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(fork.spec().notify(0), kShown);
  absl::StatusOr<rein::v1::Run> stored_fork = served_.engine->GetRun(fork.run_id());
  ASSERT_TRUE(stored_fork.ok()) << stored_fork.status();
  EXPECT_EQ(stored_fork->spec().notify(0), kSecretUrl);
  absl::StatusOr<rein::v1::Run> stored = served_.engine->GetRun(run.run_id());
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_EQ(stored->spec().notify(0), kSecretUrl);
  // Cancel's and resume's replies are runs too.
  rein::v1::CancelRunRequest cancel;
  cancel.set_run_id(fork.run_id());
  rein::v1::Run cancelled;
  ASSERT_TRUE(served_.stub->CancelRun(Context("a-op").get(), cancel, &cancelled).ok());
  EXPECT_EQ(cancelled.spec().notify(0), kShown);
  rein::v1::ResumeRunRequest resume;
  resume.set_run_id(run.run_id());
  resume.set_expected_version(run.state().version());
  resume.mutable_review()->mutable_approve();
  rein::v1::Run resumed;
  status = served_.stub->ResumeRun(Context("root").get(), resume, &resumed);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(resumed.spec().notify(0), kShown);
}

}  // namespace
}  // namespace rein
