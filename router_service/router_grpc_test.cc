// Service tests of rein.v1.Router: the real RunEngine and SQLite store behind an in-process
// channel, with fake planner and executor clients.
#include "router_service/router_grpc.h"

#include <dirent.h>
#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "common/metrics.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "router_service/run_engine.h"
#include "router_service/store/sqlite_run_store.h"
#include "router_service/store/testing/held_store.h"
#include "router_service/testing/fake_clients.h"

namespace rein {
namespace {

using rein::testing::FakeExecutorClient;
using rein::testing::FakePlannerClient;
using RunMsg = rein::v1::Run;
using Eval = rein::v1::RunEvent::Evaluation;

std::string TempPath(const std::string& name) {
  const char* dir = getenv("TEST_TMPDIR");
  static int counter = 0;
  return absl::StrCat(dir ? dir : "/tmp", "/", name, "-", getpid(), "-", ++counter, ".db");
}

int ThreadCount() {
  int n = 0;
  DIR* dir = opendir("/proc/self/task");
  while (dirent* e = readdir(dir)) n += e->d_name[0] != '.';
  closedir(dir);
  return n;
}

// A planner that plans `subtasks` subtasks, lists files for each, and completes each one; the
// last evaluation achieves the goal.
void ScriptThreeSteps(FakePlannerClient& planner, int subtasks = 3) {
  planner.plan = [subtasks](const rein::v1::PlanRequest&) {
    rein::v1::PlanResponse reply;
    for (int i = 0; i < subtasks; ++i) {
      auto* task = reply.add_subtasks();
      task->set_id(absl::StrCat("s", i));
      task->set_description("step");
    }
    reply.set_backend("fake");
    return absl::StatusOr<rein::v1::PlanResponse>(reply);
  };
  planner.decide = [](const rein::v1::DecideRequest& request) {
    rein::v1::DecideResponse reply;
    reply.mutable_tool_call()->set_tool("list_files");
    reply.mutable_tool_call()->set_args_json(
        absl::StrCat("{\"path\":\"", request.subtask().id(), "\"}"));
    return absl::StatusOr<rein::v1::DecideResponse>(reply);
  };
  planner.evaluate = [subtasks](const rein::v1::EvaluateRequest& request) {
    rein::v1::EvaluateResponse reply;
    reply.set_status(Eval::COMPLETED);
    reply.set_summary(absl::StrCat("done ", request.subtask().id()));
    reply.set_goal_achieved(request.subtask().id() == absl::StrCat("s", subtasks - 1));
    return absl::StatusOr<rein::v1::EvaluateResponse>(reply);
  };
}

// A review approving the run at its version.
rein::v1::ResumeRunRequest Approve(const RunMsg& paused) {
  rein::v1::ResumeRunRequest resume;
  resume.set_run_id(paused.run_id());
  resume.set_expected_version(paused.state().version());
  resume.mutable_review()->mutable_approve();
  return resume;
}

class RouterServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_path_ = TempPath("router");
    rein::v1::ToolSpec list;
    list.set_name("list_files");
    rein::v1::ToolSpec write;
    write.set_name("write_file");
    write.set_mutating(true);
    executor_.tools = {list, write};
    executor_.execute = [](const rein::v1::ExecuteRequest& request) {
      rein::v1::ExecuteResponse reply;
      reply.set_ok(true);
      reply.set_output(absl::StrCat("ran ", request.tool(), " ", request.args_json()));
      return absl::StatusOr<rein::v1::ExecuteResponse>(reply);
    };
    ScriptThreeSteps(planner_);
    Open();
  }

  void TearDown() override { Close(); }

  void Open() {
    auto store = SqliteRunStore::Open(db_path_, {});
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(*store);
    held_ = std::make_unique<rein::testing::HeldStore>(store_.get());
    RunEngineOptions options;
    options.retry_backoff = absl::Milliseconds(1);
    engine_ = std::make_unique<RunEngine>(held_.get(), &planner_, &executor_, clock_, options);
    ASSERT_TRUE(engine_->Start().ok());
    service_ = std::make_unique<RouterGrpcService>(engine_.get());
    grpc::ServerBuilder builder;
    builder.RegisterService(service_.get());
    server_ = builder.BuildAndStart();
    stub_ = rein::v1::Router::NewStub(server_->InProcessChannel(grpc::ChannelArguments()));
  }

  void Close() {
    if (server_) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
    if (engine_) engine_->Shutdown(absl::Seconds(1));
    server_.reset();
    engine_.reset();
    held_.reset();
    store_.reset();
  }

  rein::v1::RunSpec Spec() {
    rein::v1::RunSpec spec;
    spec.set_goal("list things");
    spec.mutable_limits()->mutable_deadline()->set_seconds(60);
    return spec;
  }

  grpc::Status Start(const rein::v1::RunSpec& spec, RunMsg* run,
                     const std::string& request_id = "") {
    rein::v1::StartRunRequest request;
    *request.mutable_spec() = spec;
    request.set_request_id(request_id);
    grpc::ClientContext context;
    return stub_->StartRun(&context, request, run);
  }

  // A run started with a pause after its plan, once paused there.
  RunMsg StartPaused() {
    rein::v1::RunSpec spec = Spec();
    spec.add_pause_points(rein::v1::AFTER_PLAN);
    RunMsg run;
    EXPECT_TRUE(Start(spec, &run).ok());
    return WaitFor(run.run_id(), rein::v1::PAUSED);
  }

  std::vector<rein::v1::RunEvent> Watch(const std::string& run_id, int64_t after = 0,
                                        grpc::Status* status_out = nullptr) {
    rein::v1::WatchRunRequest request;
    request.set_run_id(run_id);
    request.set_after_seq(after);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    auto reader = stub_->WatchRun(&context, request);
    std::vector<rein::v1::RunEvent> events;
    rein::v1::RunEvent event;
    while (reader->Read(&event)) events.push_back(event);
    grpc::Status status = reader->Finish();
    if (status_out) *status_out = status;
    return events;
  }

  RunMsg WaitFor(const std::string& run_id, rein::v1::Stage stage) {
    RunMsg run;
    for (int i = 0; i < 1000; ++i) {
      rein::v1::GetRunRequest request;
      request.set_run_id(run_id);
      grpc::ClientContext context;
      EXPECT_TRUE(stub_->GetRun(&context, request, &run).ok());
      if (run.state().stage() == stage) break;
      absl::SleepFor(absl::Milliseconds(5));
    }
    return run;
  }

  std::string db_path_;
  Clock* clock_ = RealClock();
  FakePlannerClient planner_;
  FakeExecutorClient executor_;
  std::unique_ptr<SqliteRunStore> store_;
  std::unique_ptr<rein::testing::HeldStore> held_;
  std::unique_ptr<RunEngine> engine_;
  std::unique_ptr<RouterGrpcService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<rein::v1::Router::Stub> stub_;
};

TEST_F(RouterServiceTest, RunFinishesWithGapFreeEvents) {
  RunMsg run;
  ASSERT_TRUE(Start(Spec(), &run).ok());
  EXPECT_EQ(run.state().stage(), rein::v1::INITIALIZING);
  EXPECT_TRUE(absl::StartsWith(run.run_id(), "run-"));
  auto events = Watch(run.run_id());
  ASSERT_FALSE(events.empty());
  for (size_t i = 0; i < events.size(); ++i)
    EXPECT_EQ(events[i].seq(), static_cast<int64_t>(i + 1));
  EXPECT_TRUE(events.back().has_finished());
  EXPECT_EQ(events.back().finished().outcome().reason(), rein::v1::GOAL_ACHIEVED);
  RunMsg done = WaitFor(run.run_id(), rein::v1::FINISHED);
  EXPECT_EQ(done.state().completed_subtasks_size(), 3);
  EXPECT_EQ(done.spec().tools_size(), 0);
  ASSERT_EQ(done.state().tools_size(), 1);  // empty tools = the read-only ones
  EXPECT_EQ(done.state().tools(0).name(), "list_files");
}

TEST_F(RouterServiceTest, StartRunIsIdempotentOnRequestId) {
  RunMsg first, second;
  ASSERT_TRUE(Start(Spec(), &first, "same-key").ok());
  ASSERT_TRUE(Start(Spec(), &second, "same-key").ok());
  EXPECT_EQ(first.run_id(), second.run_id());
}

struct BadStart {
  std::string field;
  std::function<void(rein::v1::StartRunRequest&)> edit;
};

TEST_F(RouterServiceTest, BadRequestsAreInvalidArgumentNamingTheField) {
  std::vector<BadStart> cases = {
      {"spec: required", [](auto& r) { r.clear_spec(); }},
      {"spec.goal", [](auto& r) { r.mutable_spec()->set_goal(""); }},
      {"spec.goal", [](auto& r) { r.mutable_spec()->set_goal(std::string(17000, 'x')); }},
      {"spec.tools[0]", [](auto& r) { r.mutable_spec()->add_tools("format_disk"); }},
      {"spec.limits.max_iterations",
       [](auto& r) { r.mutable_spec()->mutable_limits()->set_max_iterations(1000000); }},
      {"spec.pause_points[0]",
       [](auto& r) { r.mutable_spec()->add_pause_points(static_cast<rein::v1::PausePoint>(17)); }},
      {"request_id", [](auto& r) { r.set_request_id(std::string(200, 'k')); }},
      {"spec.model.temperature",
       [](auto& r) { r.mutable_spec()->mutable_model()->set_temperature(std::nan("")); }},
      {"spec.model.temperature",
       [](auto& r) { r.mutable_spec()->mutable_model()->set_temperature(-INFINITY); }},
  };
  for (const auto& c : cases) {
    rein::v1::StartRunRequest request;
    *request.mutable_spec() = Spec();
    c.edit(request);
    RunMsg run;
    grpc::ClientContext context;
    grpc::Status status = stub_->StartRun(&context, request, &run);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << c.field;
    EXPECT_NE(status.error_message().find(c.field), std::string::npos)
        << c.field << " vs " << status.error_message();
  }
  rein::v1::ListRunsRequest list;
  list.set_page_token("garbage!");
  rein::v1::ListRunsResponse page;
  grpc::ClientContext context;
  grpc::Status status = stub_->ListRuns(&context, list, &page);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("page_token"), std::string::npos);
  list.clear_page_token();
  list.set_page_size(-3);
  grpc::ClientContext context2;
  EXPECT_EQ(stub_->ListRuns(&context2, list, &page).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(RouterServiceTest, MissingWorkspaceIsFailedPreconditionNamingTheField) {
  rein::v1::ToolSpec file_info;
  file_info.set_name("file_info");
  executor_.tools.push_back(file_info);
  executor_.execute = [](const rein::v1::ExecuteRequest& request) {
    rein::v1::ExecuteResponse reply;
    reply.set_ok(false);
    reply.mutable_error()->set_code("NOT_FOUND");
    reply.mutable_error()->set_message(absl::StrCat("workspace \"", request.workspace(),
                                                    "\" does not exist or is not a directory"));
    return absl::StatusOr<rein::v1::ExecuteResponse>(reply);
  };
  RunMsg run;
  grpc::Status status = Start(Spec(), &run);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << status.error_message();
  EXPECT_NE(status.error_message().find("spec.workspace"), std::string::npos)
      << status.error_message();
  EXPECT_NE(status.error_message().find("\"default\""), std::string::npos)
      << status.error_message();
}

TEST_F(RouterServiceTest, OversizedRunIdIsInvalidArgument) {
  RunMsg run;
  rein::v1::GetRunRequest get;
  get.set_run_id(std::string(1000, 'r'));
  grpc::ClientContext context;
  grpc::Status status = stub_->GetRun(&context, get, &run);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("run_id"), std::string::npos);
}

TEST_F(RouterServiceTest, UnknownRunIsNotFoundEverywhere) {
  RunMsg run;
  rein::v1::GetRunRequest get;
  get.set_run_id("run-missing");
  grpc::ClientContext c1;
  EXPECT_EQ(stub_->GetRun(&c1, get, &run).error_code(), grpc::StatusCode::NOT_FOUND);
  rein::v1::CancelRunRequest cancel;
  cancel.set_run_id("run-missing");
  grpc::ClientContext c2;
  EXPECT_EQ(stub_->CancelRun(&c2, cancel, &run).error_code(), grpc::StatusCode::NOT_FOUND);
  rein::v1::ResumeRunRequest resume;
  resume.set_run_id("run-missing");
  resume.mutable_review()->mutable_approve();
  grpc::ClientContext c3;
  EXPECT_EQ(stub_->ResumeRun(&c3, resume, &run).error_code(), grpc::StatusCode::NOT_FOUND);
  grpc::Status watch_status;
  Watch("run-missing", 0, &watch_status);
  EXPECT_EQ(watch_status.error_code(), grpc::StatusCode::NOT_FOUND);
  rein::v1::ExportRunRequest export_request;
  export_request.set_run_id("run-missing");
  grpc::ClientContext c4;
  auto reader = stub_->ExportRun(&c4, export_request);
  rein::v1::RunSnapshot snapshot;
  while (reader->Read(&snapshot)) {
  }
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST_F(RouterServiceTest, ReviewWithStaleVersionIsFailedPrecondition) {
  const RunMsg paused = StartPaused();
  ASSERT_EQ(paused.state().stage(), rein::v1::PAUSED);
  const RunMsg& run = paused;
  const rein::v1::ResumeRunRequest resume = Approve(paused);
  RunMsg first, second;
  grpc::ClientContext c1, c2;
  EXPECT_TRUE(stub_->ResumeRun(&c1, resume, &first).ok());
  // The second reviewer used the same version: it loses.
  grpc::Status status = stub_->ResumeRun(&c2, resume, &second);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(Watch(run.run_id()).back().finished().outcome().reason(), rein::v1::GOAL_ACHIEVED);
}

TEST_F(RouterServiceTest, ListRunsFiltersAndPages) {
  std::vector<std::string> finished, paused;
  for (int i = 0; i < 3; ++i) {
    RunMsg run;
    ASSERT_TRUE(Start(Spec(), &run).ok());
    Watch(run.run_id());
    finished.push_back(run.run_id());
  }
  for (int i = 0; i < 2; ++i) {
    rein::v1::RunSpec spec = Spec();
    spec.add_pause_points(rein::v1::AFTER_PLAN);
    RunMsg run;
    ASSERT_TRUE(Start(spec, &run).ok());
    WaitFor(run.run_id(), rein::v1::PAUSED);
    paused.push_back(run.run_id());
  }
  auto list = [&](rein::v1::ListRunsRequest request) {
    std::vector<std::string> ids;
    do {
      rein::v1::ListRunsResponse page;
      grpc::ClientContext context;
      EXPECT_TRUE(stub_->ListRuns(&context, request, &page).ok());
      for (const auto& run : page.runs()) ids.push_back(run.run_id());
      request.set_page_token(page.next_page_token());
    } while (!request.page_token().empty());
    return ids;
  };
  rein::v1::ListRunsRequest by_stage;
  by_stage.set_stage(rein::v1::PAUSED);
  EXPECT_EQ(list(by_stage).size(), 2u);
  rein::v1::ListRunsRequest by_outcome;
  by_outcome.set_outcome(rein::v1::GOAL_ACHIEVED);
  EXPECT_EQ(list(by_outcome).size(), 3u);
  rein::v1::ListRunsRequest paged;
  paged.set_page_size(2);
  std::vector<std::string> all = list(paged);
  ASSERT_EQ(all.size(), 5u);
  EXPECT_EQ(all.front(), paused.back());  // newest first
}

TEST_F(RouterServiceTest, ManyWatchersSeeTheSameLog) {
  planner_.hold = true;
  RunMsg run;
  ASSERT_TRUE(Start(Spec(), &run).ok());
  std::vector<std::vector<rein::v1::RunEvent>> seen(6);
  std::vector<std::thread> watchers;
  for (int i = 0; i < 6; ++i) {
    watchers.emplace_back([&, i] { seen[i] = Watch(run.run_id(), i == 5 ? 3 : 0); });
  }
  for (int i = 0; i < 200 && planner_.held.size() == 0; ++i) absl::SleepFor(absl::Milliseconds(5));
  planner_.hold = false;
  planner_.held.ReleaseAll();
  for (auto& t : watchers) t.join();
  for (int i = 1; i < 5; ++i) {
    ASSERT_EQ(seen[i].size(), seen[0].size());
    for (size_t k = 0; k < seen[0].size(); ++k) EXPECT_EQ(seen[i][k].seq(), seen[0][k].seq());
  }
  ASSERT_FALSE(seen[5].empty());
  EXPECT_EQ(seen[5].front().seq(), 4);  // replay after after_seq
  EXPECT_EQ(seen[5].size() + 3, seen[0].size());
}

// Waits until the engine holds exactly `n` watch subscriptions (a stream that is idle on a
// live run holds one; one that ended holds none).
bool AwaitSubscriptions(RunEngine* engine, size_t n) {
  for (int i = 0; i < 1000; ++i) {
    if (engine->event_subscriptions() == n) return true;
    absl::SleepFor(absl::Milliseconds(5));
  }
  return engine->event_subscriptions() == n;
}

TEST_F(RouterServiceTest, SlowReaderGetsEveryEventInOrder) {
  ScriptThreeSteps(planner_, 12);  // far more events than the engine keeps in memory
  RunMsg run;
  ASSERT_TRUE(Start(Spec(), &run).ok());
  rein::v1::WatchRunRequest request;
  request.set_run_id(run.run_id());
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  auto reader = stub_->WatchRun(&context, request);
  std::vector<rein::v1::RunEvent> events(1);
  ASSERT_TRUE(reader->Read(&events[0]));
  // The reader stalls until the run has ended: the stream must neither drop nor repeat.
  EXPECT_EQ(WaitFor(run.run_id(), rein::v1::FINISHED).state().stage(), rein::v1::FINISHED);
  rein::v1::RunEvent event;
  while (reader->Read(&event)) {
    events.push_back(event);
    absl::SleepFor(absl::Milliseconds(1));
  }
  EXPECT_TRUE(reader->Finish().ok());
  ASSERT_GT(events.size(), 2 * EventTail::kEvents);
  for (size_t i = 0; i < events.size(); ++i) EXPECT_EQ(events[i].seq(), int64_t(i) + 1);
  EXPECT_TRUE(events.back().has_finished());
  EXPECT_EQ(engine_->event_subscriptions(), 0u);
}

// A WatchRun read on gRPC's callback API (no client thread per stream): keeps every seq.
class WatchCollector final : public grpc::ClientReadReactor<rein::v1::RunEvent> {
 public:
  WatchCollector(rein::v1::Router::Stub* stub, const std::string& run_id, int64_t after) {
    request_.set_run_id(run_id);
    request_.set_after_seq(after);
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    stub->async()->WatchRun(&context, &request_, this);
    StartRead(&event_);
    StartCall();
  }
  void OnReadDone(bool ok) override {
    if (!ok) return;
    seqs.push_back(event_.seq());
    StartRead(&event_);
  }
  void OnDone(const grpc::Status& s) override {
    status = s;
    done.Notify();
  }

  grpc::ClientContext context;
  std::vector<int64_t> seqs;  // read once `done` has been notified
  grpc::Status status;
  absl::Notification done;

 private:
  rein::v1::WatchRunRequest request_;
  rein::v1::RunEvent event_;
};

TEST_F(RouterServiceTest, CancelMidStreamEndsTheWatch) {
  planner_.hold = true;
  RunMsg run;
  ASSERT_TRUE(Start(Spec(), &run).ok());
  planner_.held.AwaitAtLeast(1);
  WatchCollector watch(stub_.get(), run.run_id(), 0);
  ASSERT_TRUE(AwaitSubscriptions(engine_.get(), 1));  // all read; waiting for the next commit
  watch.context.TryCancel();
  watch.done.WaitForNotification();
  EXPECT_EQ(watch.status.error_code(), grpc::StatusCode::CANCELLED);
  EXPECT_FALSE(watch.seqs.empty());
  EXPECT_TRUE(AwaitSubscriptions(engine_.get(), 0));  // nothing left behind
  planner_.hold = false;
  planner_.held.ReleaseAll();
  EXPECT_TRUE(Watch(run.run_id()).back().has_finished());  // the run went on
}

TEST_F(RouterServiceTest, WatchDeadlineEndsAnIdleStream) {
  planner_.hold = true;
  RunMsg run;
  ASSERT_TRUE(Start(Spec(), &run).ok());
  planner_.held.AwaitAtLeast(1);
  rein::v1::WatchRunRequest request;
  request.set_run_id(run.run_id());
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(300));
  auto reader = stub_->WatchRun(&context, request);
  rein::v1::RunEvent event;
  int read = 0;
  while (reader->Read(&event)) ++read;
  EXPECT_GT(read, 0);
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_TRUE(AwaitSubscriptions(engine_.get(), 0));
  planner_.hold = false;
  planner_.held.ReleaseAll();
}

TEST_F(RouterServiceTest, HundredWatchersOfOneRunShareNoThreads) {
  planner_.hold = true;
  RunMsg run;
  ASSERT_TRUE(Start(Spec(), &run).ok());
  planner_.held.AwaitAtLeast(1);
  const int threads_before = ThreadCount();
  constexpr int kWatchers = 100;
  std::vector<std::unique_ptr<WatchCollector>> watches;
  for (int i = 0; i < kWatchers; ++i) {
    // Resumed from different points.
    watches.push_back(std::make_unique<WatchCollector>(stub_.get(), run.run_id(), i % 3));
  }
  // Every stream waits on the run's next commit, none on a thread of its own.
  ASSERT_TRUE(AwaitSubscriptions(engine_.get(), kWatchers));
  EXPECT_LT(ThreadCount(), threads_before + kWatchers / 4);
  planner_.hold = false;
  planner_.held.ReleaseAll();
  for (int i = 0; i < kWatchers; ++i) {
    watches[i]->done.WaitForNotification();
    const std::vector<int64_t>& seqs = watches[i]->seqs;
    EXPECT_TRUE(watches[i]->status.ok()) << watches[i]->status.error_message();
    ASSERT_FALSE(seqs.empty());
    EXPECT_EQ(seqs.front(), i % 3 + 1);
    for (size_t k = 1; k < seqs.size(); ++k) EXPECT_EQ(seqs[k], seqs[k - 1] + 1);
    EXPECT_EQ(seqs.back(), watches[0]->seqs.back());
  }
  EXPECT_EQ(engine_->event_subscriptions(), 0u);
}

TEST_F(RouterServiceTest, WatchResumesAfterAnySeqOfAnEndedRun) {
  RunMsg run;
  ASSERT_TRUE(Start(Spec(), &run).ok());
  std::vector<rein::v1::RunEvent> all = Watch(run.run_id());
  ASSERT_GT(all.size(), 3u);
  const int64_t last = all.back().seq();
  for (int64_t after : {int64_t{1}, last / 2, last - 1}) {
    std::vector<rein::v1::RunEvent> rest = Watch(run.run_id(), after);
    ASSERT_EQ(rest.size(), size_t(last - after)) << after;
    EXPECT_EQ(rest.front().seq(), after + 1);
    EXPECT_TRUE(rest.back().has_finished());
  }
  grpc::Status status;
  EXPECT_TRUE(Watch(run.run_id(), last, &status).empty());  // nothing follows: ends at once
  EXPECT_TRUE(status.ok());
  Watch(run.run_id(), -1, &status);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(RouterServiceTest, ShutdownEndsOpenWatches) {
  planner_.hold = true;
  RunMsg run;
  ASSERT_TRUE(Start(Spec(), &run).ok());
  planner_.held.AwaitAtLeast(1);
  grpc::Status status;
  std::thread watcher([&] { Watch(run.run_id(), 0, &status); });
  ASSERT_TRUE(AwaitSubscriptions(engine_.get(), 1));
  const absl::Time started = absl::Now();
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(200));
  watcher.join();
  EXPECT_LT(absl::Now() - started, absl::Seconds(10));
  EXPECT_FALSE(status.ok());
  EXPECT_EQ(engine_->event_subscriptions(), 0u);
  planner_.hold = false;
  planner_.held.ReleaseAll();
}

TEST_F(RouterServiceTest, ExportRunStreamsSnapshots) {
  RunMsg run;
  ASSERT_TRUE(Start(Spec(), &run).ok());
  Watch(run.run_id());
  rein::v1::ExportRunRequest request;
  request.set_run_id(run.run_id());
  grpc::ClientContext context;
  auto reader = stub_->ExportRun(&context, request);
  rein::v1::RunSnapshot snapshot;
  std::vector<rein::v1::RunSnapshot> all;
  while (reader->Read(&snapshot)) all.push_back(snapshot);
  ASSERT_TRUE(reader->Finish().ok());
  ASSERT_GE(all.size(), 4u);
  for (size_t i = 1; i < all.size(); ++i) EXPECT_GT(all[i].version(), all[i - 1].version());
  EXPECT_NE(all.back().state_json().find("GOAL_ACHIEVED"), std::string::npos);
}

TEST_F(RouterServiceTest, CancelWhileCallInFlightEndsRun) {
  planner_.hold = true;
  RunMsg run;
  ASSERT_TRUE(Start(Spec(), &run).ok());
  for (int i = 0; i < 200 && planner_.held.size() == 0; ++i) absl::SleepFor(absl::Milliseconds(5));
  ASSERT_EQ(planner_.held.size(), 1u);
  rein::v1::CancelRunRequest cancel;
  cancel.set_run_id(run.run_id());
  RunMsg cancelled;
  grpc::ClientContext context;
  ASSERT_TRUE(stub_->CancelRun(&context, cancel, &cancelled).ok());
  EXPECT_EQ(cancelled.state().stage(), rein::v1::CANCELLED);
  EXPECT_EQ(cancelled.state().outcome().reason(), rein::v1::CANCELLED_BY_USER);
  auto events = Watch(run.run_id());
  int finished = 0;
  for (const auto& e : events) finished += e.has_finished();
  EXPECT_EQ(finished, 1);
}

TEST_F(RouterServiceTest, RestartContinuesRunFromLastCommit) {
  planner_.hold = true;
  RunMsg run;
  ASSERT_TRUE(Start(Spec(), &run).ok());
  for (int i = 0; i < 200 && planner_.held.size() == 0; ++i) absl::SleepFor(absl::Milliseconds(5));
  Close();  // the held Plan call is abandoned, not charged to the run
  planner_.held.ReleaseAll(/*cancelled=*/true);
  planner_.hold = false;
  Open();
  auto events = Watch(run.run_id());
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().finished().outcome().reason(), rein::v1::GOAL_ACHIEVED);
  for (size_t i = 0; i < events.size(); ++i)
    EXPECT_EQ(events[i].seq(), static_cast<int64_t>(i + 1));
  EXPECT_EQ(WaitFor(run.run_id(), rein::v1::FINISHED).state().retries_used(), 0);
}

TEST_F(RouterServiceTest, MutatingCallInFlightAtRestartIsAskedAgainWithSameCallId) {
  planner_.decide = [](const rein::v1::DecideRequest&) {
    rein::v1::DecideResponse reply;
    reply.mutable_tool_call()->set_tool("write_file");
    reply.mutable_tool_call()->set_args_json(R"({"path":"a.txt","content":"x"})");
    return absl::StatusOr<rein::v1::DecideResponse>(reply);
  };
  // An executor with a journal: a call_id seen before is answered with its recorded reply.
  auto mu = std::make_shared<absl::Mutex>();
  auto call_ids = std::make_shared<std::vector<std::string>>();
  executor_.execute = [mu, call_ids](const rein::v1::ExecuteRequest& request) {
    absl::MutexLock lock(mu.get());
    rein::v1::ExecuteResponse reply;
    reply.set_ok(true);
    reply.set_output("written");
    reply.set_executor_id("exec-a");
    reply.set_replayed(std::find(call_ids->begin(), call_ids->end(), request.call_id()) !=
                       call_ids->end());
    call_ids->push_back(request.call_id());
    return absl::StatusOr<rein::v1::ExecuteResponse>(reply);
  };
  executor_.hold = true;
  rein::v1::RunSpec spec = Spec();
  spec.add_tools("write_file");
  RunMsg run;
  ASSERT_TRUE(Start(spec, &run).ok());
  for (int i = 0; i < 200 && executor_.held.size() == 0; ++i) absl::SleepFor(absl::Milliseconds(5));
  ASSERT_EQ(executor_.held.size(), 1u);
  Close();
  executor_.held.ReleaseAll(/*cancelled=*/true);
  executor_.hold = false;
  Open();
  auto events = Watch(run.run_id());
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().finished().outcome().reason(), rein::v1::GOAL_ACHIEVED);
  int replayed = 0;
  for (const auto& e : events) {
    EXPECT_FALSE(e.has_paused()) << e.DebugString();  // no RECOVERY pause
    if (e.has_call_replayed()) {
      ++replayed;
      EXPECT_EQ(e.call_replayed().call_id(), (*call_ids)[0]);
    }
  }
  EXPECT_EQ(replayed, 1);
  absl::MutexLock lock(mu.get());
  ASSERT_GE(call_ids->size(), 2u);
  EXPECT_EQ((*call_ids)[1], (*call_ids)[0]);  // asked again with the same call_id
}

TEST_F(RouterServiceTest, EndedRunIsForgottenByTheExecutors) {
  RunMsg run;
  ASSERT_TRUE(Start(Spec(), &run).ok());
  auto events = Watch(run.run_id());
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().finished().outcome().reason(), rein::v1::GOAL_ACHIEVED);
  for (int i = 0; i < 200 && executor_.forgotten().empty(); ++i) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  EXPECT_EQ(executor_.forgotten(), std::vector<std::string>{run.run_id()});
}

TEST_F(RouterServiceTest, ThousandRunsInFlightHoldNoThreadEach) {
  planner_.hold = true;
  int threads_before = ThreadCount();
  for (int i = 0; i < 1000; ++i) {
    RunMsg run;
    ASSERT_TRUE(Start(Spec(), &run).ok());
  }
  // A reply applied on the thread that received it sends the run's next call before its own
  // call is counted out, so the count can read one high for a moment: wait for it to settle.
  for (int i = 0; i < 1000 && (planner_.held.size() < 1000 || engine_->calls_in_flight() != 1000);
       ++i)
    absl::SleepFor(absl::Milliseconds(5));
  EXPECT_EQ(planner_.held.size(), 1000u);
  EXPECT_EQ(engine_->calls_in_flight(), 1000);
  EXPECT_EQ(engine_->active_runs(), 1000);
  EXPECT_LT(ThreadCount() - threads_before, 20);
  planner_.hold = false;
  planner_.held.ReleaseAll();
  for (int i = 0; i < 3000 && engine_->active_runs() > 0; ++i)
    absl::SleepFor(absl::Milliseconds(10));
  EXPECT_EQ(engine_->active_runs(), 0);
}

// How many calls of `method` the service has answered with `code` (its rpcs counter).
double RpcsAnswered(absl::string_view method, absl::string_view code) {
  const std::string rendered = Metrics::Global().Render();
  for (absl::string_view line : absl::StrSplit(rendered, '\n')) {
    if (!absl::StartsWith(line, "rein_router_rpcs_total{") ||
        !absl::StrContains(line, absl::StrCat("method=\"", method, "\"")) ||
        !absl::StrContains(line, absl::StrCat("code=\"", code, "\""))) {
      continue;
    }
    double value = 0;
    if (absl::SimpleAtod(line.substr(line.rfind(' ') + 1), &value)) return value;
  }
  return 0;
}

TEST_F(RouterServiceTest, ReviewReturnsAtItsDeadlineWhileTheStoreHoldsTheRunsCommit) {
  const RunMsg paused = StartPaused();
  ASSERT_EQ(paused.state().stage(), rein::v1::PAUSED);
  const RunMsg& run = paused;
  const double before = RpcsAnswered("ResumeRun", "DEADLINE_EXCEEDED");

  // A cancel with no deadline: its commit is held in the store.
  held_->Hold();
  grpc::Status cancel_status;
  std::thread cancel([&] {
    rein::v1::CancelRunRequest request;
    request.set_run_id(run.run_id());
    RunMsg out;
    grpc::ClientContext context;
    cancel_status = stub_->CancelRun(&context, request, &out);
  });
  held_->AwaitHeld(1);

  const rein::v1::ResumeRunRequest resume = Approve(paused);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(200));
  RunMsg out;
  EXPECT_EQ(stub_->ResumeRun(&context, resume, &out).error_code(),
            grpc::StatusCode::DEADLINE_EXCEEDED);
  // The handler itself returned (the client stops waiting at its deadline in any case), with
  // the store still held: the deadline reached the engine.
  for (int i = 0; i < 2000 && RpcsAnswered("ResumeRun", "DEADLINE_EXCEEDED") <= before; ++i) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  EXPECT_EQ(RpcsAnswered("ResumeRun", "DEADLINE_EXCEEDED"), before + 1);

  held_->Release();
  cancel.join();
  EXPECT_TRUE(cancel_status.ok()) << cancel_status.error_message();
  EXPECT_EQ(WaitFor(run.run_id(), rein::v1::CANCELLED).state().stage(), rein::v1::CANCELLED);
}

}  // namespace
}  // namespace rein
