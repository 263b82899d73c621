// Service tests of namespaces and quotas over real gRPC (loopback TCP): a caller of one
// namespace against every RPC on another namespace's run, admin across them, request_id and
// forks scoped, events stamped, and quotas refusing and freeing.
#include <stdlib.h>

#include <atomic>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "router_service/auth.h"
#include "router_service/router_grpc.h"
#include "router_service/run_engine.h"
#include "router_service/service/quotas.h"
#include "router_service/testing/fake_clients.h"
#include "router_service/testing/served_router.h"

namespace rein {
namespace {

using rein::testing::FakeExecutorClient;
using rein::testing::FakePlannerClient;
using rein::testing::ServedRouter;
using rein::testing::ServedRouterOptions;

// The fake executor, plus workspace copies (for ForkRun) that record their namespace.
class CopyingExecutor final : public ExecutorClient {
 public:
  explicit CopyingExecutor(FakeExecutorClient* fake) : fake_(fake) {}
  std::shared_ptr<PendingCall> ListTools(const rein::v1::ListToolsRequest& request,
                                         absl::Time deadline,
                                         ReplyCallback<rein::v1::ListToolsResponse> done) override {
    return fake_->ListTools(request, deadline, std::move(done));
  }
  std::shared_ptr<PendingCall> Execute(const rein::v1::ExecuteRequest& request, absl::Time deadline,
                                       ReplyCallback<rein::v1::ExecuteResponse> done) override {
    return fake_->Execute(request, deadline, std::move(done));
  }
  std::shared_ptr<PendingCall> CopyWorkspace(
      const rein::v1::CopyWorkspaceRequest& request, absl::Time /*deadline*/,
      ReplyCallback<rein::v1::CopyWorkspaceResponse> done) override {
    {
      absl::MutexLock lock(&mu_);
      copied_namespaces_.push_back(request.namespace_());
    }
    done(rein::v1::CopyWorkspaceResponse());
    return nullptr;
  }
  std::vector<std::string> copied_namespaces() {
    absl::MutexLock lock(&mu_);
    return copied_namespaces_;
  }

 private:
  FakeExecutorClient* fake_;
  absl::Mutex mu_;
  std::vector<std::string> copied_namespaces_ ABSL_GUARDED_BY(mu_);
};

class RouterNamespaceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string dir = getenv("TEST_TMPDIR") ? getenv("TEST_TMPDIR") : "/tmp";
    const std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    ServedRouterOptions options;
    options.auth.reload_check = absl::Milliseconds(100);
    options.grpc.revalidate = absl::Milliseconds(100);
    tokens_ =
        absl::StrCat("sha256:", Sha256Hex("a-viewer"), " ava viewer namespace=team-a\n",         //
                     "sha256:", Sha256Hex("a-op"), " abe operator namespace=team-a\n",           //
                     "sha256:", Sha256Hex("a-rev"), " amy reviewer namespace=team-a\n",          //
                     "sha256:", Sha256Hex("b-op"), " bob operator,reviewer namespace=team-b\n",  //
                     "sha256:", Sha256Hex("d-op"), " dan operator\n",                            //
                     "sha256:", Sha256Hex("root"), " root admin\n");
    options.tokens = tokens_;
    quotas_path_ = dir + "/ns-quotas-" + name;
    std::ofstream(quotas_path_) << "# quotas\nteam-q max_concurrent_runs=1\n";
    options.quotas = [this](RunStore* store) -> absl::StatusOr<std::unique_ptr<QuotaBook>> {
      QuotaOptions quota_options;
      quota_options.file = quotas_path_;
      quota_options.reload_check = absl::Milliseconds(50);
      auto quotas = std::make_unique<QuotaBook>(quota_options, store, RealClock());
      RETURN_IF_ERROR(quotas->Load());
      return quotas;
    };

    rein::testing::ScriptListFilesRun(&planner_, &executor_);
    executor_.execute = [this](const rein::v1::ExecuteRequest& request) {
      {
        absl::MutexLock lock(&mu_);
        executed_namespaces_.push_back(request.namespace_());
      }
      rein::v1::ExecuteResponse reply;
      reply.set_ok(true);
      return absl::StatusOr<rein::v1::ExecuteResponse>(reply);
    };
    ASSERT_TRUE(served_.Start(options, &planner_, &copying_).ok());
  }

  void TearDown() override { served_.Stop(); }

  std::unique_ptr<grpc::ClientContext> Context(const std::string& token) {
    auto context = std::make_unique<grpc::ClientContext>();
    context->AddMetadata("authorization", "Bearer " + token);
    context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    return context;
  }

  // Starts a run that pauses after its plan, as `token`, and waits for the pause.
  rein::v1::Run StartPaused(const std::string& token, const std::string& request_id = "",
                            const std::string& ns = "") {
    rein::v1::StartRunRequest request;
    request.mutable_spec()->set_goal("list things");
    request.mutable_spec()->add_pause_points(rein::v1::AFTER_PLAN);
    request.mutable_spec()->set_namespace_(ns);
    request.set_request_id(request_id);
    rein::v1::Run run;
    grpc::Status status = served_.stub->StartRun(Context(token).get(), request, &run);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return WaitPaused(token, run.run_id());
  }

  rein::v1::Run WaitPaused(const std::string& token, const std::string& run_id) {
    rein::v1::Run run;
    for (int i = 0; i < 1000 && run.state().stage() != rein::v1::PAUSED; ++i) {
      rein::v1::GetRunRequest request;
      request.set_run_id(run_id);
      EXPECT_TRUE(served_.stub->GetRun(Context(token).get(), request, &run).ok());
      absl::SleepFor(absl::Milliseconds(5));
    }
    return run;
  }

  // Every RPC on `run_id` as `token`: each one's status.
  std::vector<std::pair<std::string, grpc::Status>> EveryRpc(const std::string& token,
                                                             const rein::v1::Run& target) {
    std::vector<std::pair<std::string, grpc::Status>> out;
    const std::string& run_id = target.run_id();
    rein::v1::Run run;
    {
      rein::v1::GetRunRequest r;
      r.set_run_id(run_id);
      out.emplace_back("GetRun", served_.stub->GetRun(Context(token).get(), r, &run));
    }
    {
      rein::v1::CancelRunRequest r;
      r.set_run_id(run_id);
      out.emplace_back("CancelRun", served_.stub->CancelRun(Context(token).get(), r, &run));
    }
    {
      rein::v1::ResumeRunRequest r;
      r.set_run_id(run_id);
      r.set_expected_version(target.state().version());
      r.mutable_review()->mutable_approve();
      out.emplace_back("ResumeRun", served_.stub->ResumeRun(Context(token).get(), r, &run));
    }
    {
      rein::v1::ForkRunRequest r;
      r.set_run_id(run_id);
      r.set_seq(1);
      out.emplace_back("ForkRun", served_.stub->ForkRun(Context(token).get(), r, &run));
    }
    {
      auto context = Context(token);
      rein::v1::WatchRunRequest r;
      r.set_run_id(run_id);
      auto reader = served_.stub->WatchRun(context.get(), r);
      rein::v1::RunEvent event;
      int read = 0;
      while (reader->Read(&event)) ++read;
      EXPECT_EQ(read, 0) << "a watch across namespaces must yield no event";
      out.emplace_back("WatchRun", reader->Finish());
    }
    {
      rein::v1::ListRunsRequest r;
      r.set_parent_run_id(run_id);
      rein::v1::ListRunsResponse reply;
      grpc::Status status = served_.stub->ListRuns(Context(token).get(), r, &reply);
      EXPECT_EQ(reply.runs_size(), 0) << "a parent across namespaces must list no child";
      out.emplace_back("ListRuns{parent_run_id}", status);
    }
    {
      auto context = Context(token);
      rein::v1::ExportRunRequest r;
      r.set_run_id(run_id);
      auto reader = served_.stub->ExportRun(context.get(), r);
      rein::v1::RunSnapshot snapshot;
      int read = 0;
      while (reader->Read(&snapshot)) ++read;
      EXPECT_EQ(read, 0) << "an export across namespaces must yield nothing";
      out.emplace_back("ExportRun", reader->Finish());
    }
    return out;
  }

  std::vector<std::string> Listed(const std::string& token, const std::string& ns = "") {
    rein::v1::ListRunsRequest request;
    request.set_namespace_(ns);
    rein::v1::ListRunsResponse reply;
    grpc::Status status = served_.stub->ListRuns(Context(token).get(), request, &reply);
    EXPECT_TRUE(status.ok()) << status.error_message();
    std::vector<std::string> ids;
    for (const auto& run : reply.runs()) ids.push_back(run.run_id());
    return ids;
  }

  // The plan delegates two subtasks (c1, c2, each listing files) when the run may start
  // children; a child, or a parent past its group, plans the one list_files subtask.
  void ScriptDelegation() {
    planner_.plan = [](const rein::v1::PlanRequest& request) {
      rein::v1::PlanResponse reply;
      if (request.allow_delegation()) {
        for (const char* id : {"c1", "c2"}) {
          auto* task = reply.add_subtasks();
          task->set_id(id);
          task->set_description(absl::StrCat("list for ", id));
          task->add_allowed_tools("list_files");
          task->set_delegate(true);
        }
        return absl::StatusOr<rein::v1::PlanResponse>(reply);
      }
      auto* task = reply.add_subtasks();
      task->set_id("s0");
      task->set_description("list");
      return absl::StatusOr<rein::v1::PlanResponse>(reply);
    };
  }

  // A parent that may start two children, as `token`; `pause_after_plan` pauses it before
  // its group opens.
  rein::v1::Run StartParent(const std::string& token, bool pause_after_plan = false) {
    rein::v1::StartRunRequest request;
    request.mutable_spec()->set_goal("list things twice");
    request.mutable_spec()->mutable_limits()->set_max_children(2);
    if (pause_after_plan) request.mutable_spec()->add_pause_points(rein::v1::AFTER_PLAN);
    rein::v1::Run run;
    grpc::Status status = served_.stub->StartRun(Context(token).get(), request, &run);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return run;
  }

  // Polls the run as `token` until it has ended.
  rein::v1::Run WaitEnded(const std::string& token, const std::string& run_id) {
    rein::v1::Run run;
    for (int i = 0; i < 2000; ++i) {
      rein::v1::GetRunRequest request;
      request.set_run_id(run_id);
      EXPECT_TRUE(served_.stub->GetRun(Context(token).get(), request, &run).ok());
      const rein::v1::Stage stage = run.state().stage();
      if (stage == rein::v1::FINISHED || stage == rein::v1::FAILED ||
          stage == rein::v1::CANCELLED) {
        break;
      }
      absl::SleepFor(absl::Milliseconds(5));
    }
    return run;
  }

  // Every planner reply reports 10 input tokens.
  void SpendTenTokensPerReply() {
    auto plan = planner_.plan;
    planner_.plan = [plan](const rein::v1::PlanRequest& request) {
      absl::StatusOr<rein::v1::PlanResponse> reply = plan(request);
      if (reply.ok()) reply->mutable_usage()->set_input_tokens(10);
      return reply;
    };
    auto decide = planner_.decide;
    planner_.decide = [decide](const rein::v1::DecideRequest& request) {
      absl::StatusOr<rein::v1::DecideResponse> reply = decide(request);
      if (reply.ok()) reply->mutable_usage()->set_input_tokens(10);
      return reply;
    };
    auto evaluate = planner_.evaluate;
    planner_.evaluate = [evaluate](const rein::v1::EvaluateRequest& request) {
      absl::StatusOr<rein::v1::EvaluateResponse> reply = evaluate(request);
      if (reply.ok()) reply->mutable_usage()->set_input_tokens(10);
      return reply;
    };
  }

  // The quotas file's new content, once the router has read it.
  void SetQuotas(const std::string& lines) {
    std::ofstream(quotas_path_) << lines;
    absl::SleepFor(absl::Milliseconds(100));
  }

  // The quota `name`'s use in `ns`, as an admin reads it.
  double QuotaUsed(const std::string& ns, const std::string& name) {
    rein::v1::GetQuotaRequest get;
    get.set_namespace_(ns);
    rein::v1::QuotaReport report;
    EXPECT_TRUE(served_.stub->GetQuota(Context("root").get(), get, &report).ok());
    for (const rein::v1::QuotaUse& q : report.quotas()) {
      if (q.name() == name) return q.used();
    }
    ADD_FAILURE() << "no quota " << name << " in " << ns;
    return -1;
  }

  rein::v1::Run Resume(const std::string& token, const rein::v1::Run& paused) {
    rein::v1::ResumeRunRequest resume;
    resume.set_run_id(paused.run_id());
    resume.set_expected_version(paused.state().version());
    resume.mutable_review()->mutable_approve();
    rein::v1::Run run;
    grpc::Status status = served_.stub->ResumeRun(Context(token).get(), resume, &run);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return run;
  }

  std::string tokens_;
  std::string quotas_path_;
  FakePlannerClient planner_;
  FakeExecutorClient executor_;
  CopyingExecutor copying_{&executor_};
  absl::Mutex mu_;
  std::vector<std::string> executed_namespaces_ ABSL_GUARDED_BY(mu_);
  ServedRouter served_;
};

TEST_F(RouterNamespaceTest, AnotherNamespacesRunIsNotFoundOnEveryRpcAsAnUnknownId) {
  const rein::v1::Run b_run = StartPaused("b-op");
  ASSERT_EQ(b_run.state().stage(), rein::v1::PAUSED);
  EXPECT_EQ(b_run.spec().namespace_(), "team-b");
  rein::v1::Run unknown = b_run;
  unknown.set_run_id("0123456789abcdef0123456789abcdef");

  // Each of A's tokens: a refusal by role stays PERMISSION_DENIED (it says nothing of the
  // run); every call its roles allow is NOT_FOUND, worded as for an id that does not exist.
  for (const std::string token : {"a-viewer", "a-op", "a-rev", "d-op"}) {
    const auto on_b = EveryRpc(token, b_run);
    const auto on_unknown = EveryRpc(token, unknown);
    ASSERT_EQ(on_b.size(), on_unknown.size());
    for (size_t i = 0; i < on_b.size(); ++i) {
      SCOPED_TRACE(absl::StrCat(token, " ", on_b[i].first));
      const grpc::Status& got = on_b[i].second;
      const grpc::Status& want = on_unknown[i].second;
      EXPECT_NE(got.error_code(), grpc::StatusCode::OK);
      EXPECT_EQ(got.error_code(), want.error_code());
      std::string message = want.error_message();
      if (size_t at = message.find(unknown.run_id()); at != std::string::npos) {
        message.replace(at, unknown.run_id().size(), b_run.run_id());
      }
      EXPECT_EQ(got.error_message(), message);
      EXPECT_TRUE(got.error_code() == grpc::StatusCode::NOT_FOUND ||
                  got.error_code() == grpc::StatusCode::PERMISSION_DENIED)
          << got.error_code();
    }
    EXPECT_TRUE(Listed(token).empty()) << token;
  }
  // B's run is untouched: still paused, not cancelled, nothing forked from it.
  rein::v1::Run after = WaitPaused("b-op", b_run.run_id());
  EXPECT_EQ(after.state().stage(), rein::v1::PAUSED);
  EXPECT_EQ(after.state().version(), b_run.state().version());
  EXPECT_EQ(Listed("b-op").size(), 1u);
}

TEST_F(RouterNamespaceTest, GetRunOfAnotherNamespacesRunReadsTheStoreAsAnUnknownIdDoes) {
  // A paused run is held in memory: its owner's GetRun reads no store; another namespace's
  // caller gets the unknown id's answer after the unknown id's one store read. So does a
  // parent, whose owner's GetRun also reads each of its children.
  ScriptDelegation();
  const rein::v1::Run b_parent = WaitEnded("b-op", StartParent("b-op").run_id());
  ASSERT_EQ(b_parent.children_size(), 2);
  const rein::v1::Run b_run = StartPaused("b-op");
  ASSERT_EQ(b_run.state().stage(), rein::v1::PAUSED);
  auto reads_of = [&](const std::string& token, const std::string& run_id, grpc::StatusCode* code) {
    const int64_t before = served_.counted->run_reads();
    rein::v1::GetRunRequest request;
    request.set_run_id(run_id);
    rein::v1::Run run;
    *code = served_.stub->GetRun(Context(token).get(), request, &run).error_code();
    return served_.counted->run_reads() - before;
  };
  grpc::StatusCode code;
  EXPECT_EQ(reads_of("b-op", b_run.run_id(), &code), 0);
  EXPECT_EQ(code, grpc::StatusCode::OK);
  for (const std::string token : {"a-viewer", "a-op", "d-op"}) {
    SCOPED_TRACE(token);
    EXPECT_EQ(reads_of(token, "0123456789abcdef0123456789abcdef", &code), 1);
    EXPECT_EQ(code, grpc::StatusCode::NOT_FOUND);
    EXPECT_EQ(reads_of(token, b_run.run_id(), &code), 1);
    EXPECT_EQ(code, grpc::StatusCode::NOT_FOUND);
    EXPECT_EQ(reads_of(token, b_parent.run_id(), &code), 1);
    EXPECT_EQ(code, grpc::StatusCode::NOT_FOUND);
  }
  EXPECT_EQ(reads_of("b-op", b_parent.run_id(), &code), 3);  // the parent and its two children
  EXPECT_EQ(code, grpc::StatusCode::OK);
}

TEST_F(RouterNamespaceTest, ACallerCannotNameAnotherNamespaceButAdminSpansThemAll) {
  rein::v1::StartRunRequest request;
  request.mutable_spec()->set_goal("list things");
  request.mutable_spec()->set_namespace_("team-b");
  rein::v1::Run run;
  grpc::Status status = served_.stub->StartRun(Context("a-op").get(), request, &run);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_NE(status.error_message().find("spec.namespace"), std::string::npos);
  request.mutable_spec()->set_namespace_("Team B");
  status = served_.stub->StartRun(Context("a-op").get(), request, &run);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  rein::v1::ListRunsRequest list;
  list.set_namespace_("team-b");
  rein::v1::ListRunsResponse reply;
  EXPECT_EQ(served_.stub->ListRuns(Context("a-viewer").get(), list, &reply).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);

  const rein::v1::Run a_run = StartPaused("a-op");
  const rein::v1::Run b_run = StartPaused("b-op");
  const rein::v1::Run admin_run = StartPaused("root", "", "team-b");  // an admin starts in B
  EXPECT_EQ(admin_run.spec().namespace_(), "team-b");
  EXPECT_EQ(Listed("root").size(), 3u);
  EXPECT_EQ(Listed("root", "team-b").size(), 2u);
  EXPECT_EQ(Listed("a-viewer"), std::vector<std::string>{a_run.run_id()});
  EXPECT_EQ(Listed("b-op").size(), 2u);
  rein::v1::CancelRunRequest cancel;
  cancel.set_run_id(b_run.run_id());
  ASSERT_TRUE(served_.stub->CancelRun(Context("root").get(), cancel, &run).ok());
  EXPECT_EQ(run.state().stage(), rein::v1::CANCELLED);
  // A token without a namespace is `default`'s, and sees none of these.
  EXPECT_TRUE(Listed("d-op").empty());
}

// ListNotifications reads the webhook outbox: a pause leaves a notice there in its commit
// (no sender runs in this test, so each stays pending).
TEST_F(RouterNamespaceTest, NotificationsAreListedPerNamespaceAndOnlyToOperators) {
  const rein::v1::Run a_run = StartPaused("a-op");
  const rein::v1::Run b_run = StartPaused("b-op");
  ASSERT_EQ(a_run.state().stage(), rein::v1::PAUSED);
  ASSERT_EQ(b_run.state().stage(), rein::v1::PAUSED);
  auto list = [this](const std::string& token, rein::v1::ListNotificationsRequest request,
                     std::vector<std::string>* runs) {
    rein::v1::ListNotificationsResponse reply;
    grpc::Status status = served_.stub->ListNotifications(Context(token).get(), request, &reply);
    runs->clear();
    for (const rein::v1::Notice& n : reply.notices()) {
      runs->push_back(n.run_id());
      EXPECT_EQ(n.notice_id(), absl::StrCat(n.run_id(), ".", n.seq()));
      EXPECT_EQ(n.type(), "dev.rein.run.paused");
      EXPECT_EQ(n.status(), rein::v1::NOTICE_PENDING);
      EXPECT_TRUE(n.has_committed());
      EXPECT_TRUE(n.has_next_attempt());
    }
    return status.error_code();
  };
  std::vector<std::string> runs;
  rein::v1::ListNotificationsRequest any;
  EXPECT_EQ(list("a-op", any, &runs), grpc::StatusCode::OK);
  EXPECT_EQ(runs, std::vector<std::string>{a_run.run_id()});
  EXPECT_EQ(list("b-op", any, &runs), grpc::StatusCode::OK);
  EXPECT_EQ(runs, std::vector<std::string>{b_run.run_id()});
  // Another namespace's token sees nothing of these, and cannot name theirs.
  EXPECT_EQ(list("d-op", any, &runs), grpc::StatusCode::OK);
  EXPECT_TRUE(runs.empty());
  rein::v1::ListNotificationsRequest in_b;
  in_b.set_namespace_("team-b");
  EXPECT_EQ(list("a-op", in_b, &runs), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_TRUE(runs.empty());
  // Viewers and reviewers may not read the outbox.
  EXPECT_EQ(list("a-viewer", any, &runs), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(list("a-rev", any, &runs), grpc::StatusCode::PERMISSION_DENIED);
  // An admin sees every namespace, or the one named.
  EXPECT_EQ(list("root", any, &runs), grpc::StatusCode::OK);
  EXPECT_EQ(runs.size(), 2u);
  EXPECT_EQ(list("root", in_b, &runs), grpc::StatusCode::OK);
  EXPECT_EQ(runs, std::vector<std::string>{b_run.run_id()});
  // Filters, and bad input named.
  rein::v1::ListNotificationsRequest failed;
  failed.set_status(rein::v1::NOTICE_FAILED);
  EXPECT_EQ(list("a-op", failed, &runs), grpc::StatusCode::OK);
  EXPECT_TRUE(runs.empty());
  rein::v1::ListNotificationsRequest bad;
  bad.set_page_size(1001);
  rein::v1::ListNotificationsResponse reply;
  grpc::Status status = served_.stub->ListNotifications(Context("a-op").get(), bad, &reply);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("page_size"), std::string::npos);
  bad.set_page_size(0);
  bad.set_status(static_cast<rein::v1::NoticeStatus>(9));
  status = served_.stub->ListNotifications(Context("a-op").get(), bad, &reply);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("status"), std::string::npos);
}

TEST_F(RouterNamespaceTest, RequestIdsForksEventsAndExecutorCallsStayInTheirNamespace) {
  const rein::v1::Run a = StartPaused("a-op", "same-key");
  const rein::v1::Run b = StartPaused("b-op", "same-key");
  EXPECT_NE(a.run_id(), b.run_id());
  EXPECT_EQ(StartPaused("b-op", "same-key").run_id(), b.run_id());  // idempotent within B

  rein::v1::ForkRunRequest fork;
  fork.set_run_id(b.run_id());
  fork.set_seq(1);
  rein::v1::Run forked;
  grpc::Status status = served_.stub->ForkRun(Context("b-op").get(), fork, &forked);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(forked.spec().namespace_(), "team-b");
  EXPECT_EQ(copying_.copied_namespaces(), std::vector<std::string>{"team-b"});
  rein::v1::GetRunRequest get;
  get.set_run_id(forked.run_id());
  rein::v1::Run seen;
  EXPECT_EQ(served_.stub->GetRun(Context("a-viewer").get(), get, &seen).error_code(),
            grpc::StatusCode::NOT_FOUND);

  // Approve B's run to its end: its events carry team-b, its tool calls went out as team-b.
  rein::v1::ResumeRunRequest resume;
  resume.set_run_id(b.run_id());
  resume.set_expected_version(b.state().version());
  resume.mutable_review()->mutable_approve();
  rein::v1::Run out;
  status = served_.stub->ResumeRun(Context("b-op").get(), resume, &out);
  ASSERT_TRUE(status.ok()) << status.error_message();
  auto context = Context("b-op");
  rein::v1::WatchRunRequest watch;
  watch.set_run_id(b.run_id());
  auto reader = served_.stub->WatchRun(context.get(), watch);
  rein::v1::RunEvent event;
  int events = 0;
  bool executed = false;
  while (reader->Read(&event)) {
    ++events;
    EXPECT_EQ(event.namespace_(), "team-b") << event.seq();
    executed = executed || event.has_tool_result();
  }
  EXPECT_TRUE(reader->Finish().ok());
  EXPECT_GT(events, 3);
  ASSERT_TRUE(executed);
  absl::MutexLock lock(&mu_);
  for (const std::string& ns : executed_namespaces_) EXPECT_EQ(ns, "team-b");
}

TEST_F(RouterNamespaceTest, ChildRunsAreTheirParentsNamespacesAndCallToolsThere) {
  ScriptDelegation();
  const rein::v1::Run started = StartParent("a-op");
  const rein::v1::Run parent = WaitEnded("a-op", started.run_id());
  ASSERT_EQ(parent.state().stage(), rein::v1::FINISHED) << parent.state().outcome().message();
  ASSERT_EQ(parent.children_size(), 2);
  for (const rein::v1::ChildRun& member : parent.children()) {
    SCOPED_TRACE(member.subtask_id());
    ASSERT_FALSE(member.run_id().empty()) << member.start_error();
    rein::v1::GetRunRequest get;
    get.set_run_id(member.run_id());
    rein::v1::Run child;
    grpc::Status status = served_.stub->GetRun(Context("a-viewer").get(), get, &child);
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(child.spec().namespace_(), "team-a");
    EXPECT_EQ(child.spec().parent().run_id(), parent.run_id());
    EXPECT_EQ(child.state().stage(), rein::v1::FINISHED);
    // Another namespace's caller, `default`'s included, does not see it.
    for (const std::string token : {"d-op", "b-op"}) {
      rein::v1::Run seen;
      status = served_.stub->GetRun(Context(token).get(), get, &seen);
      EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND) << token;
      EXPECT_EQ(status.error_message(), absl::StrCat("run ", member.run_id(), " not found"));
    }
  }
  // Listed in team-a with their parent, in no other namespace.
  EXPECT_EQ(Listed("a-viewer").size(), 3u);
  EXPECT_TRUE(Listed("d-op").empty());
  // Every tool call, the children's included, went out as team-a's.
  absl::MutexLock lock(&mu_);
  EXPECT_EQ(executed_namespaces_.size(), 3u);
  for (const std::string& ns : executed_namespaces_) EXPECT_EQ(ns, "team-a");
}

TEST_F(RouterNamespaceTest, AChildsRequestIdIsTheRoutersAndAParentAdoptsOnlyItsOwnChild) {
  // A caller may not take the children's key prefix, to start or to fork.
  rein::v1::StartRunRequest start;
  start.mutable_spec()->set_goal("list things");
  start.set_request_id("child:0123456789abcdef0123456789abcdef:1:0");
  rein::v1::Run run;
  grpc::Status status = served_.stub->StartRun(Context("a-op").get(), start, &run);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("request_id"), std::string::npos) << status.error_message();
  const rein::v1::Run source = StartPaused("a-op");
  rein::v1::ForkRunRequest fork;
  fork.set_run_id(source.run_id());
  fork.set_seq(1);
  fork.set_request_id("child:x:1:0");
  status = served_.stub->ForkRun(Context("a-op").get(), fork, &run);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("request_id"), std::string::npos) << status.error_message();

  // A run already under the parent's first child's key (written to the store directly, as
  // a squatter from before the check would be) is not adopted: that child fails, naming it.
  ScriptDelegation();
  const rein::v1::Run parent = StartParent("a-op", /*pause_after_plan=*/true);
  const rein::v1::Run paused = WaitPaused("a-op", parent.run_id());
  ASSERT_EQ(paused.state().stage(), rein::v1::PAUSED);
  rein::v1::Run squatter = source;
  squatter.set_run_id("run-squatter");
  squatter.set_request_id(absl::StrCat("child:", parent.run_id(), ":1:0"));
  squatter.mutable_state()->set_stage(rein::v1::FINISHED);
  squatter.set_owner("");
  ASSERT_TRUE(served_.store->CreateRun(squatter, {}).ok());
  rein::v1::ResumeRunRequest resume;
  resume.set_run_id(parent.run_id());
  resume.set_expected_version(paused.state().version());
  resume.mutable_review()->mutable_approve();
  status = served_.stub->ResumeRun(Context("a-rev").get(), resume, &run);
  ASSERT_TRUE(status.ok()) << status.error_message();
  // The other child pauses after its plan, as its parent does; approved, it ends, the group
  // joins, and the parent pauses after its next plan.
  rein::v1::Run waiting;
  for (int i = 0; i < 1000 && (waiting.children_size() < 2 || waiting.children(1).run_id().empty());
       ++i) {
    rein::v1::GetRunRequest get;
    get.set_run_id(parent.run_id());
    ASSERT_TRUE(served_.stub->GetRun(Context("a-op").get(), get, &waiting).ok());
    absl::SleepFor(absl::Milliseconds(5));
  }
  ASSERT_EQ(waiting.children_size(), 2);
  const rein::v1::Run c2 = WaitPaused("a-op", waiting.children(1).run_id());
  resume.set_run_id(c2.run_id());
  resume.set_expected_version(c2.state().version());
  status = served_.stub->ResumeRun(Context("a-rev").get(), resume, &run);
  ASSERT_TRUE(status.ok()) << status.error_message();
  const rein::v1::Run ended = WaitPaused("a-op", parent.run_id());
  ASSERT_EQ(ended.children_size(), 2);
  EXPECT_EQ(ended.children(0).run_id(), "");
  EXPECT_NE(ended.children(0).start_error().find("not a child of run " + parent.run_id()),
            std::string::npos)
      << ended.children(0).start_error();
  EXPECT_NE(ended.children(1).run_id(), "");
  EXPECT_NE(ended.children(1).run_id(), "run-squatter");
  bool c1_failed = false;
  for (const rein::v1::SubTask& task : ended.state().completed_subtasks()) {
    if (task.id() != "c1") continue;
    c1_failed = task.status() == rein::v1::SubTask::FAILED &&
                task.summary().find("run-squatter") != std::string::npos;
  }
  EXPECT_TRUE(c1_failed) << ended.state().DebugString();
}

TEST_F(RouterNamespaceTest, AStartsRetryGetsItsRunAndParallelStartsCannotPassTheQuota) {
  const rein::v1::Run first = StartPaused("root", "key-1", "team-q");
  ASSERT_EQ(first.state().stage(), rein::v1::PAUSED);
  // The retry of that start: the quota is spent (by that very run); the answer is the run.
  rein::v1::StartRunRequest again;
  again.mutable_spec()->set_goal("list things");
  again.mutable_spec()->set_namespace_("team-q");
  again.set_request_id("key-1");
  rein::v1::Run run;
  grpc::Status status = served_.stub->StartRun(Context("root").get(), again, &run);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(run.run_id(), first.run_id());
  rein::v1::CancelRunRequest cancel;
  cancel.set_run_id(first.run_id());
  ASSERT_TRUE(served_.stub->CancelRun(Context("root").get(), cancel, &run).ok());

  // Sixteen starts at once with distinct keys: one run, fifteen refusals.
  std::atomic<int> started{0}, refused{0};
  std::vector<std::thread> callers;
  for (int i = 0; i < 16; ++i) {
    callers.emplace_back([&, i] {
      rein::v1::StartRunRequest request;
      request.mutable_spec()->set_goal("list things");
      request.mutable_spec()->add_pause_points(rein::v1::AFTER_PLAN);
      request.mutable_spec()->set_namespace_("team-q");
      request.set_request_id(absl::StrCat("parallel-", i));
      rein::v1::Run out;
      grpc::Status s = served_.stub->StartRun(Context("root").get(), request, &out);
      if (s.ok()) ++started;
      if (s.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) ++refused;
    });
  }
  for (std::thread& caller : callers) caller.join();
  EXPECT_EQ(started.load(), 1);
  EXPECT_EQ(refused.load(), 15);
  EXPECT_EQ(Listed("root", "team-q").size(), 2u);  // the cancelled first, and the one admitted
}

TEST_F(RouterNamespaceTest, AForkIsAdmittedAsAStartAndAChildPastTheQuotaFailsWithTheReason) {
  const rein::v1::Run source = StartPaused("root", "", "team-q");  // 1 of 1 runs
  rein::v1::ForkRunRequest fork;
  fork.set_run_id(source.run_id());
  fork.set_seq(1);
  rein::v1::Run run;
  grpc::Status status = served_.stub->ForkRun(Context("root").get(), fork, &run);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(status.error_message().find("max_concurrent_runs"), std::string::npos)
      << status.error_message();
  rein::v1::CancelRunRequest cancel;
  cancel.set_run_id(source.run_id());
  ASSERT_TRUE(served_.stub->CancelRun(Context("root").get(), cancel, &run).ok());

  // Two runs at once: a parent and one child; its second child is refused, and fails with
  // the quota's words at the join.
  SetQuotas("team-q max_concurrent_runs=2\n");
  ScriptDelegation();
  rein::v1::StartRunRequest request;
  request.mutable_spec()->set_goal("list things twice");
  request.mutable_spec()->set_namespace_("team-q");
  request.mutable_spec()->mutable_limits()->set_max_children(2);
  request.mutable_spec()->add_pause_points(rein::v1::AFTER_PLAN);
  status = served_.stub->StartRun(Context("root").get(), request, &run);
  ASSERT_TRUE(status.ok()) << status.error_message();
  Resume("root", WaitPaused("root", run.run_id()));
  rein::v1::Run parent;
  for (int i = 0; i < 1000; ++i) {
    rein::v1::GetRunRequest get;
    get.set_run_id(run.run_id());
    ASSERT_TRUE(served_.stub->GetRun(Context("root").get(), get, &parent).ok());
    if (parent.children_size() == 2 && !parent.children(0).run_id().empty() &&
        !parent.children(1).start_error().empty()) {
      break;
    }
    absl::SleepFor(absl::Milliseconds(5));
  }
  ASSERT_EQ(parent.children_size(), 2);
  ASSERT_FALSE(parent.children(0).run_id().empty()) << parent.children(0).start_error();
  EXPECT_NE(parent.children(1).start_error().find("quota max_concurrent_runs is spent"),
            std::string::npos)
      << parent.children(1).start_error();
  // The child that started pauses after its plan, as its parent does; approved, it ends and
  // the group joins.
  Resume("root", WaitPaused("root", parent.children(0).run_id()));
  const rein::v1::Run joined = WaitPaused("root", run.run_id());
  ASSERT_EQ(joined.state().completed_subtasks_size(), 2) << joined.state().DebugString();
  for (const rein::v1::SubTask& task : joined.state().completed_subtasks()) {
    if (task.id() == "c1") {
      EXPECT_EQ(task.status(), rein::v1::SubTask::COMPLETED);
    }
    if (task.id() != "c2") continue;
    EXPECT_EQ(task.status(), rein::v1::SubTask::FAILED);
    EXPECT_NE(task.summary().find("max_concurrent_runs"), std::string::npos) << task.summary();
  }
}

TEST_F(RouterNamespaceTest, ATreesAndAForksTokensCountOnceInTheDaysUsage) {
  SetQuotas("team-u max_tokens_per_day=1000000\n");
  ScriptDelegation();
  SpendTenTokensPerReply();
  rein::v1::StartRunRequest request;
  request.mutable_spec()->set_goal("list things twice");
  request.mutable_spec()->set_namespace_("team-u");
  request.mutable_spec()->mutable_limits()->set_max_children(2);
  rein::v1::Run run;
  grpc::Status status = served_.stub->StartRun(Context("root").get(), request, &run);
  ASSERT_TRUE(status.ok()) << status.error_message();
  const rein::v1::Run parent = WaitEnded("root", run.run_id());
  ASSERT_EQ(parent.state().stage(), rein::v1::FINISHED) << parent.state().outcome().message();
  ASSERT_EQ(parent.children_size(), 2);
  // The parent's tokens hold its children's (the tree's total): counted once.
  int64_t children = 0;
  for (const rein::v1::ChildRun& c : parent.children())
    children += c.outcome().usage().input_tokens();
  EXPECT_GT(children, 0);
  EXPECT_GT(parent.state().tokens_used(), children);
  EXPECT_EQ(QuotaUsed("team-u", "max_tokens_per_day"), parent.state().tokens_used());

  // A fork counts only what it spends after the point: forked at a pause, nothing yet.
  const rein::v1::Run paused = StartPaused("root", "", "team-u");
  ASSERT_GT(paused.state().tokens_used(), 0);
  const double before = QuotaUsed("team-u", "max_tokens_per_day");
  EXPECT_EQ(before, parent.state().tokens_used() + paused.state().tokens_used());
  bool ended = false;
  absl::StatusOr<std::vector<rein::v1::RunEvent>> events =
      served_.engine->ReadEventsNow(paused.run_id(), 0, &ended);
  ASSERT_TRUE(events.ok() && !events->empty());
  rein::v1::ForkRunRequest fork;
  fork.set_run_id(paused.run_id());
  fork.set_seq(events->back().seq());
  rein::v1::Run forked;
  status = served_.stub->ForkRun(Context("root").get(), fork, &forked);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(forked.state().tokens_used(), paused.state().tokens_used());
  EXPECT_EQ(QuotaUsed("team-u", "max_tokens_per_day"), before);
}

TEST_F(RouterNamespaceTest, AWatchEndsWhenItsTokenMovesToAnotherNamespace) {
  const rein::v1::Run b_run = StartPaused("b-op");
  ASSERT_EQ(b_run.state().stage(), rein::v1::PAUSED);  // the stream stays open
  auto context = Context("b-op");
  rein::v1::WatchRunRequest request;
  request.set_run_id(b_run.run_id());
  auto reader = served_.stub->WatchRun(context.get(), request);
  rein::v1::RunEvent event;
  ASSERT_TRUE(reader->Read(&event));
  // The same token now acts in team-a: it may no longer read team-b's run.
  std::string moved = tokens_;
  const std::string line = " bob operator,reviewer namespace=team-b";
  moved.replace(moved.find(line), line.size(), " bob operator,reviewer namespace=team-a");
  std::ofstream(served_.tokens_path) << moved;
  while (reader->Read(&event)) {
  }
  grpc::Status status = reader->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED) << status.error_message();
  EXPECT_NE(status.error_message().find("namespace changed"), std::string::npos);
}

TEST_F(RouterNamespaceTest, AQuotaRefusesNamingItselfAndFreesWhenARunEnds) {
  const rein::v1::Run first = StartPaused("root", "", "team-q");
  rein::v1::StartRunRequest request;
  request.mutable_spec()->set_goal("list things");
  request.mutable_spec()->set_namespace_("team-q");
  rein::v1::Run run;
  grpc::Status status = served_.stub->StartRun(Context("root").get(), request, &run);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(status.error_message().find("quota max_concurrent_runs is spent"), std::string::npos)
      << status.error_message();
  EXPECT_NE(status.error_message().find("frees when one ends"), std::string::npos);

  rein::v1::GetQuotaRequest get;
  get.set_namespace_("team-q");
  rein::v1::QuotaReport report;
  ASSERT_TRUE(served_.stub->GetQuota(Context("root").get(), get, &report).ok());
  ASSERT_EQ(report.quotas_size(), 1);
  EXPECT_EQ(report.quotas(0).name(), "max_concurrent_runs");
  EXPECT_EQ(report.quotas(0).used(), 1);
  EXPECT_EQ(report.quotas(0).limit(), 1);
  // Another namespace's quota is not a viewer's to read.
  EXPECT_EQ(served_.stub->GetQuota(Context("a-viewer").get(), get, &report).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);

  rein::v1::CancelRunRequest cancel;
  cancel.set_run_id(first.run_id());
  ASSERT_TRUE(served_.stub->CancelRun(Context("root").get(), cancel, &run).ok());
  status = served_.stub->StartRun(Context("root").get(), request, &run);
  EXPECT_TRUE(status.ok()) << status.error_message();

  // The quota is raised in the file: read again on the next call.
  std::ofstream(quotas_path_) << "team-q max_concurrent_runs=3\n";
  absl::SleepFor(absl::Milliseconds(100));
  status = served_.stub->StartRun(Context("root").get(), request, &run);
  EXPECT_TRUE(status.ok()) << status.error_message();
}

TEST_F(RouterNamespaceTest, ARunSeesTheToolsOfferedToItsNamespaceOnly) {
  // The executors offer an MCP tool to team-a only (it has credentials for its server).
  rein::v1::ToolSpec whoami;
  whoami.set_name("secret__whoami");
  whoami.set_origin("mcp:secret");
  executor_.tools_by_namespace["team-a"] = {executor_.tools[0], whoami};
  auto names = [](const rein::v1::Run& run) {
    std::vector<std::string> out;
    for (const auto& tool : run.state().tools()) out.push_back(tool.name());
    return out;
  };
  const rein::v1::Run a = StartPaused("a-op");
  EXPECT_EQ(names(a), (std::vector<std::string>{"list_files", "secret__whoami"}));
  // The router's catalog is per namespace: team-b's start, just after, is not served team-a's.
  const rein::v1::Run b = StartPaused("b-op");
  EXPECT_EQ(names(b), (std::vector<std::string>{"list_files"}));
  rein::v1::StartRunRequest request;
  request.mutable_spec()->set_goal("use another team's tool");
  request.mutable_spec()->add_tools("secret__whoami");
  rein::v1::Run run;
  grpc::Status refused = served_.stub->StartRun(Context("b-op").get(), request, &run);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(absl::StrContains(refused.error_message(), "unknown tool \"secret__whoami\""))
      << refused.error_message();
  EXPECT_FALSE(absl::StrContains(refused.error_message(), "mcp:")) << refused.error_message();
  grpc::Status started = served_.stub->StartRun(Context("a-op").get(), request, &run);
  EXPECT_TRUE(started.ok()) << started.error_message();
}

}  // namespace
}  // namespace rein
