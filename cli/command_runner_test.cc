// Tests of reinctl's command runner against a fake Router service over an in-process channel.
#include "cli/command_runner.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "cli/args.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "rein/v1/router.grpc.pb.h"

namespace rein::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

template <typename Message>
Message Parse(const std::string& text) {
  Message message;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &message)) << text;
  return message;
}

// A Router whose runs, event logs and snapshots are set by the test. GetRun answers with the
// run as it is after the whole log; WatchRun replays the log and then either ends or, with
// `hold_open`, waits until the client goes away (a paused run).
class FakeRouter final : public v1::Router::Service {
 public:
  grpc::Status StartRun(grpc::ServerContext*, const v1::StartRunRequest* request,
                        v1::Run* response) override {
    absl::MutexLock lock(&mu_);
    start_requests.push_back(*request);
    response->set_run_id("run-1");
    *response->mutable_spec() = request->spec();
    response->mutable_state()->set_stage(v1::INITIALIZING);
    return grpc::Status::OK;
  }

  grpc::Status GetRun(grpc::ServerContext*, const v1::GetRunRequest* request,
                      v1::Run* response) override {
    absl::MutexLock lock(&mu_);
    ++get_run_calls;
    auto it = runs.find(request->run_id());
    if (it == runs.end()) {
      return grpc::Status(grpc::StatusCode::NOT_FOUND, "no run " + request->run_id());
    }
    *response = it->second;
    return grpc::Status::OK;
  }

  grpc::Status ListRuns(grpc::ServerContext*, const v1::ListRunsRequest* request,
                        v1::ListRunsResponse* response) override {
    absl::MutexLock lock(&mu_);
    list_requests.push_back(*request);
    auto it = pages.find(request->page_token());
    if (it == pages.end()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "bad page_token");
    }
    *response = it->second;
    return grpc::Status::OK;
  }

  grpc::Status GetQuota(grpc::ServerContext*, const v1::GetQuotaRequest* request,
                        v1::QuotaReport* response) override {
    absl::MutexLock lock(&mu_);
    quota_requests.push_back(*request);
    response->set_namespace_(request->namespace_().empty() ? "team-a" : request->namespace_());
    auto* runs = response->add_quotas();
    runs->set_name("max_concurrent_runs");
    runs->set_limit(2);
    runs->set_used(1);
    auto* tokens = response->add_quotas();
    tokens->set_name("max_tokens_per_day");
    tokens->set_limit(1000);
    tokens->set_used(1000);
    tokens->mutable_frees_at()->set_seconds(1700006400);
    return grpc::Status::OK;
  }
  grpc::Status ListNotifications(grpc::ServerContext*, const v1::ListNotificationsRequest* request,
                                 v1::ListNotificationsResponse* response) override {
    absl::MutexLock lock(&mu_);
    notification_requests.push_back(*request);
    if (request->namespace_() == "team-z") {
      return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                          "namespace: the caller acts in namespace team-a only, not team-z");
    }
    v1::Notice* notice = response->add_notices();
    notice->set_notice_id("run-1.9");
    notice->set_run_id("run-1");
    notice->set_seq(9);
    notice->set_type("dev.rein.run.finished");
    notice->set_status(v1::NOTICE_FAILED);
    notice->set_attempts(31);
    notice->mutable_committed()->set_seconds(1700000000);
    notice->set_last_error("http://127.0.0.1:9/...: Couldn't connect to server");
    return grpc::Status::OK;
  }
  grpc::Status CancelRun(grpc::ServerContext*, const v1::CancelRunRequest* request,
                         v1::Run* response) override {
    absl::MutexLock lock(&mu_);
    cancel_requests.push_back(*request);
    response->set_run_id(request->run_id());
    response->mutable_state()->set_stage(v1::CANCELLED);
    response->mutable_state()->mutable_outcome()->set_reason(v1::CANCELLED_BY_USER);
    return grpc::Status::OK;
  }

  grpc::Status WatchRun(grpc::ServerContext* context, const v1::WatchRunRequest* request,
                        grpc::ServerWriter<v1::RunEvent>* writer) override {
    std::vector<v1::RunEvent> log;
    bool hold;
    {
      absl::MutexLock lock(&mu_);
      watch_requests.push_back(*request);
      if (runs.find(request->run_id()) == runs.end()) {
        return grpc::Status(grpc::StatusCode::NOT_FOUND, "no run " + request->run_id());
      }
      log = events[request->run_id()];
      hold = hold_open;
    }
    for (const v1::RunEvent& event : log) {
      if (event.seq() > request->after_seq()) writer->Write(event);
    }
    if (hold) {
      while (!context->IsCancelled()) absl::SleepFor(absl::Milliseconds(2));
      return grpc::Status(grpc::StatusCode::CANCELLED, "client went away");
    }
    return grpc::Status::OK;
  }

  grpc::Status ResumeRun(grpc::ServerContext*, const v1::ResumeRunRequest* request,
                         v1::Run* response) override {
    absl::MutexLock lock(&mu_);
    resume_requests.push_back(*request);
    v1::Run& run = runs[request->run_id()];
    if (request->expected_version() != run.state().version()) {
      return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "stale version");
    }
    *response = run;
    response->mutable_state()->set_stage(v1::DECIDING);
    response->mutable_state()->set_version(run.state().version() + 1);
    if (auto it = after_resume.find(request->run_id()); it != after_resume.end()) {
      run = it->second;
    }
    return grpc::Status::OK;
  }

  grpc::Status ExportRun(grpc::ServerContext*, const v1::ExportRunRequest* request,
                         grpc::ServerWriter<v1::RunSnapshot>* writer) override {
    absl::MutexLock lock(&mu_);
    if (runs.find(request->run_id()) == runs.end()) {
      return grpc::Status(grpc::StatusCode::NOT_FOUND, "no run " + request->run_id());
    }
    for (const v1::RunSnapshot& snapshot : snapshots) writer->Write(snapshot);
    return grpc::Status::OK;
  }

  // Set by the test before the command runs; read by the handlers.
  std::map<std::string, v1::Run> runs;
  std::map<std::string, std::vector<v1::RunEvent>> events;
  std::map<std::string, v1::ListRunsResponse> pages;  // by page_token
  std::vector<v1::RunSnapshot> snapshots;
  std::map<std::string, v1::Run> after_resume;  // what GetRun shows once a review is applied
  bool hold_open = false;

  // Recorded by the handlers.
  std::vector<v1::StartRunRequest> start_requests;
  std::vector<v1::ListRunsRequest> list_requests;
  std::vector<v1::CancelRunRequest> cancel_requests;
  std::vector<v1::GetQuotaRequest> quota_requests;
  std::vector<v1::ListNotificationsRequest> notification_requests;
  std::vector<v1::WatchRunRequest> watch_requests;
  std::vector<v1::ResumeRunRequest> resume_requests;
  int get_run_calls = 0;

 private:
  absl::Mutex mu_;
};

class CommandRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    builder.RegisterService(&router_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    stub_ = v1::Router::NewStub(server_->InProcessChannel(grpc::ChannelArguments()));
    tmp_ = std::filesystem::path(::testing::TempDir()) /
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(tmp_);
    std::filesystem::create_directories(tmp_);
  }

  void TearDown() override { server_->Shutdown(); }

  // Parses `args` as reinctl would and runs them; returns the exit code.
  int Run(const std::vector<std::string>& args, bool live_progress = false,
          const std::string& console_url = "") {
    absl::StatusOr<Command> command = ParseArgs(args);
    EXPECT_TRUE(command.ok()) << command.status();
    if (!command.ok()) return -1;
    RunnerOptions options;
    options.live_progress = live_progress;
    options.reviewer = "tester";
    options.paused_idle_grace = absl::Milliseconds(50);
    options.console_url = console_url;
    CommandRunner runner(stub_.get(), out_, err_, options);
    return runner.Run(*command);
  }

  std::string WriteFile(const std::string& name, const std::string& text) {
    std::string path = (tmp_ / name).string();
    std::ofstream(path) << text;
    return path;
  }

  void AddRun(const std::string& text, const std::vector<std::string>& events) {
    v1::Run run = Parse<v1::Run>(text);
    for (const std::string& event : events) {
      router_.events[run.run_id()].push_back(Parse<v1::RunEvent>(event));
    }
    router_.runs[run.run_id()] = run;
  }

  FakeRouter router_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<v1::Router::Stub> stub_;
  std::ostringstream out_;
  std::ostringstream err_;
  std::filesystem::path tmp_;
};

constexpr char kFinishedRun[] = R"(run_id: "run-1" state { stage: FINISHED version: 9
    iteration: 3 outcome { status: FINISHED reason: GOAL_ACHIEVED message: "done" }
    completed_subtasks { id: "scan" status: COMPLETED summary: "listed 3 files" } })";

const std::vector<std::string>& FinishedLog() {
  static const auto* const kLog = new std::vector<std::string>{
      R"(seq: 1 version: 1 stage_changed { from: INITIALIZING to: PLANNING })",
      R"(seq: 2 version: 2 plan { subtasks { id: "scan" } })",
      R"(seq: 3 version: 3 stage_changed { from: PLANNING to: DECIDING })",
      R"(seq: 4 version: 4 decision { subtask_id: "scan"
             tool_call { tool: "list_files" args_json: "{}" } })",
      R"(seq: 5 version: 5 tool_result { action { tool: "list_files" ok: true
             observation: "a\nb\nc" } })",
      R"(seq: 6 version: 6 evaluation { subtask_id: "scan" status: COMPLETED
             summary: "listed 3 files" goal_achieved: true })",
      R"(seq: 7 version: 9 finished { outcome { status: FINISHED reason: GOAL_ACHIEVED
             message: "done" } })",
  };
  return *kLog;
}

TEST_F(CommandRunnerTest, StartPrintsTheRunIdAndSendsTheSpec) {
  const std::string spec = WriteFile("spec.json", R"({"goal":"old","limits":{"maxIterations":9}})");
  const std::string goal = WriteFile("goal.txt", "tidy the repo\n");
  EXPECT_EQ(Run({"start", "--spec=" + spec, "--goal_file=" + goal, "--deadline=1m",
                 "--request_id=req-7", "--label=a=b"}),
            kExitFinished);
  EXPECT_EQ(out_.str(), "run-1\n");
  ASSERT_EQ(router_.start_requests.size(), 1u);
  const v1::StartRunRequest& request = router_.start_requests[0];
  EXPECT_EQ(request.request_id(), "req-7");
  EXPECT_EQ(request.spec().goal(), "tidy the repo\n");
  EXPECT_EQ(request.spec().limits().max_iterations(), 9);
  EXPECT_EQ(request.spec().limits().deadline().seconds(), 60);
  EXPECT_EQ(request.spec().labels().at("a"), "b");
}

TEST_F(CommandRunnerTest, StartWithMissingGoalFileIsAUsageError) {
  EXPECT_EQ(Run({"start", "--goal_file=" + (tmp_ / "absent.txt").string()}), kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("--goal_file: cannot read"));
  EXPECT_TRUE(router_.start_requests.empty());
}

TEST_F(CommandRunnerTest, StartWithWatchFollowsTheNewRun) {
  AddRun(kFinishedRun, FinishedLog());
  EXPECT_EQ(Run({"start", "--goal=g", "--watch"}), kExitFinished);
  EXPECT_THAT(out_.str(), HasSubstr("run-1\n#1 INITIALIZING -> PLANNING\n"));
  ASSERT_EQ(router_.watch_requests.size(), 1u);
  EXPECT_EQ(router_.watch_requests[0].run_id(), "run-1");
}

TEST_F(CommandRunnerTest, WatchToFinishedPrintsEventsAndReportAndExitsZero) {
  AddRun(kFinishedRun, FinishedLog());
  EXPECT_EQ(Run({"watch", "run-1"}), kExitFinished);
  EXPECT_EQ(out_.str(),
            "#1 INITIALIZING -> PLANNING\n"
            "#2 plan: 1 subtask [scan]\n"
            "#3 PLANNING -> DECIDING\n"
            "#4 decision: list_files {}  (subtask scan)\n"
            "#5 tool_result ok list_files 0s: a...\n"
            "#6 evaluation scan COMPLETED: listed 3 files  goal achieved\n"
            "#7 finished FINISHED GOAL_ACHIEVED: done\n"
            "run run-1: FINISHED (GOAL_ACHIEVED)\n"
            "message: done\n"
            "iterations 3/50  retries 0/5  tokens 0\n"
            "completed subtasks:\n"
            "  [COMPLETED] scan: listed 3 files\n");
  EXPECT_EQ(err_.str(), "");
}

TEST_F(CommandRunnerTest, WatchWithLiveProgressDrawsAndClearsTheLine) {
  AddRun(kFinishedRun, FinishedLog());
  EXPECT_EQ(Run({"watch", "run-1"}, /*live_progress=*/true), kExitFinished);
  EXPECT_THAT(out_.str(), HasSubstr("#7 finished FINISHED GOAL_ACHIEVED: done\n"));
  // The fake's GetRun already shows the run's end.
  EXPECT_THAT(err_.str(), HasSubstr("\r\033[Kstage FINISHED     iter 3/50  elapsed 0s/10m  "
                                    "retries 0/5  tokens 0"));
  EXPECT_THAT(err_.str(), ::testing::EndsWith("\r\033[K"));
  // One GetRun at the start, one per stage change, one for the report.
  EXPECT_EQ(router_.get_run_calls, 4);
}

TEST_F(CommandRunnerTest, WatchAfterSeqSkipsEarlierEvents) {
  AddRun(kFinishedRun, FinishedLog());
  EXPECT_EQ(Run({"watch", "run-1", "--after_seq=6"}), kExitFinished);
  EXPECT_THAT(out_.str(), ::testing::StartsWith("#7 finished"));
  EXPECT_EQ(router_.watch_requests[0].after_seq(), 6);
}

TEST_F(CommandRunnerTest, WatchJsonPrintsOneEventPerLine) {
  AddRun(kFinishedRun, FinishedLog());
  EXPECT_EQ(Run({"watch", "run-1", "--json"}), kExitFinished);
  std::vector<std::string> lines = absl::StrSplit(out_.str(), '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 7u);
  EXPECT_EQ(lines[0],
            R"({"seq":"1","version":"1","stageChanged":{"from":"INITIALIZING","to":"PLANNING"}})");
  EXPECT_THAT(err_.str(), HasSubstr("run run-1: FINISHED (GOAL_ACHIEVED)"));
}

TEST_F(CommandRunnerTest, WatchEndingInPauseExitsThreeWithReviewHint) {
  AddRun(R"(run_id: "run-1" state { stage: PAUSED version: 3
              pause { reason: PAUSE_POINT point: AFTER_PLAN detail: "1 subtask" } })",
         {R"(seq: 1 version: 1 stage_changed { from: INITIALIZING to: PLANNING })",
          R"(seq: 2 version: 2 plan { subtasks { id: "scan" } })",
          R"(seq: 3 version: 3 paused { pause { reason: PAUSE_POINT point: AFTER_PLAN
                 detail: "1 subtask" } })"});
  router_.hold_open = true;
  EXPECT_EQ(Run({"watch", "run-1"}), kExitPaused);
  EXPECT_THAT(out_.str(), HasSubstr("#3 paused PAUSE_POINT AFTER_PLAN: 1 subtask\n"));
  EXPECT_THAT(out_.str(), HasSubstr("run run-1 is paused (PAUSE_POINT AFTER_PLAN: 1 subtask) at "
                                    "version 3."));
  EXPECT_THAT(out_.str(), HasSubstr("reinctl approve run-1 --version=3\n"));
  EXPECT_THAT(out_.str(), Not(HasSubstr("FINISHED")));
}

TEST_F(CommandRunnerTest, WatchOfAWaitingRunPrintsItsConsoleLinkWhenOneIsKnown) {
  AddRun(R"(run_id: "run-1" state { stage: PAUSED version: 3
              pause { reason: NEED_HUMAN question: "Which one?" } })",
         {R"(seq: 1 version: 3 paused { pause { reason: NEED_HUMAN question: "Which one?" } })"});
  router_.hold_open = true;
  EXPECT_EQ(Run({"watch", "run-1"}, false, "http://127.0.0.1:8080"), kExitPaused);
  EXPECT_THAT(out_.str(), HasSubstr("or in the console: http://127.0.0.1:8080/#/run/run-1\n"));
}

TEST_F(CommandRunnerTest, WatchToTheEndPrintsNoConsoleLink) {
  AddRun(kFinishedRun, FinishedLog());
  EXPECT_EQ(Run({"watch", "run-1"}, false, "http://127.0.0.1:8080"), kExitFinished);
  EXPECT_THAT(out_.str(), Not(HasSubstr("console")));
}

TEST_F(CommandRunnerTest, WatchOfAWaitingRunWithNothingNewExitsThree) {
  AddRun(R"(run_id: "run-1" state { stage: PAUSED version: 3
              pause { reason: NEED_HUMAN question: "Which one?" } })",
         {R"(seq: 1 version: 3 paused { pause { reason: NEED_HUMAN question: "Which one?" } })"});
  router_.hold_open = true;
  EXPECT_EQ(Run({"watch", "run-1", "--after_seq=1"}), kExitPaused);
  EXPECT_THAT(out_.str(), HasSubstr("reinctl answer run-1 --version=3 --text=TEXT\n"));
}

TEST_F(CommandRunnerTest, WatchStreamEndingWhilePausedExitsThree) {
  AddRun(R"(run_id: "run-1" state { stage: PAUSED version: 2
              pause { reason: NOTES detail: "the model raised a note" } })",
         {R"(seq: 1 version: 1 stage_changed { from: INITIALIZING to: PLANNING })"});
  EXPECT_EQ(Run({"watch", "run-1"}), kExitPaused);
  EXPECT_THAT(out_.str(), HasSubstr("is paused (NOTES: the model raised a note) at version 2."));
}

TEST_F(CommandRunnerTest, EarlierPauseInTheLogDoesNotStopTheWatch) {
  AddRun(kFinishedRun,
         {R"(seq: 1 version: 2 paused { pause { reason: PAUSE_POINT point: AFTER_PLAN } })",
          R"(seq: 2 version: 3 resumed { to: DECIDING review { approve {} } })",
          R"(seq: 3 version: 9 finished { outcome { status: FINISHED reason: GOAL_ACHIEVED } })"});
  EXPECT_EQ(Run({"watch", "run-1"}), kExitFinished);
  EXPECT_THAT(out_.str(), HasSubstr("#2 resumed approve -> DECIDING\n#3 finished"));
}

TEST_F(CommandRunnerTest, WatchStreamEndingMidRunExitsFourWithResumeHint) {
  AddRun(R"(run_id: "run-1" state { stage: DECIDING version: 3 })",
         {R"(seq: 4 version: 3 stage_changed { from: PLANNING to: DECIDING })"});
  EXPECT_EQ(Run({"watch", "run-1", "--after_seq=3"}), kExitRpcError);
  EXPECT_THAT(err_.str(), HasSubstr("the stream ended while the run is DECIDING; watch again "
                                    "with: reinctl watch run-1 --after_seq=4\n"));
}

TEST_F(CommandRunnerTest, WatchToFailedExitsOne) {
  AddRun(R"(run_id: "run-1" state { stage: FAILED iteration: 50
              outcome { status: FAILED reason: MAX_ITERATIONS message: "50 iterations" } })",
         {R"(seq: 1 version: 1 finished { outcome { status: FAILED reason: MAX_ITERATIONS
                 message: "50 iterations" } })"});
  EXPECT_EQ(Run({"watch", "run-1"}), kExitFailed);
  EXPECT_THAT(out_.str(),
              HasSubstr("run run-1: FAILED (MAX_ITERATIONS)\nmessage: 50 iterations\n"));
}

TEST_F(CommandRunnerTest, WatchToCancelledExitsOne) {
  AddRun(R"(run_id: "run-1" state { stage: CANCELLED
              outcome { status: CANCELLED reason: CANCELLED_BY_USER } })",
         {R"(seq: 1 version: 1 finished { outcome { status: CANCELLED
                 reason: CANCELLED_BY_USER } })"});
  EXPECT_EQ(Run({"watch", "run-1"}), kExitFailed);
}

TEST_F(CommandRunnerTest, WatchOfUnknownRunExitsFourWithTheCode) {
  EXPECT_EQ(Run({"watch", "nope"}), kExitRpcError);
  EXPECT_EQ(err_.str(), "reinctl: GetRun: NOT_FOUND: no run nope\n");
}

TEST_F(CommandRunnerTest, ApproveWithoutVersionUsesGetRunsVersion) {
  AddRun(R"(run_id: "run-1" state { stage: PAUSED version: 17 })", {});
  EXPECT_EQ(Run({"approve", "run-1"}), kExitFinished);
  ASSERT_EQ(router_.resume_requests.size(), 1u);
  EXPECT_EQ(router_.resume_requests[0].expected_version(), 17);
  EXPECT_EQ(router_.resume_requests[0].review().kind_case(), v1::Review::kApprove);
  EXPECT_EQ(router_.resume_requests[0].review().reviewer(), "tester");
  EXPECT_EQ(out_.str(), "run run-1: DECIDING (version 18)\n");
}

TEST_F(CommandRunnerTest, ReviewWithStaleVersionExitsFour) {
  AddRun(R"(run_id: "run-1" state { stage: PAUSED version: 17 })", {});
  EXPECT_EQ(Run({"reject", "run-1", "--feedback=no", "--version=16"}), kExitRpcError);
  EXPECT_EQ(router_.get_run_calls, 0);
  EXPECT_EQ(router_.resume_requests[0].review().reject().feedback(), "no");
  EXPECT_THAT(err_.str(), HasSubstr("reinctl: ResumeRun: FAILED_PRECONDITION: stale version"));
}

TEST_F(CommandRunnerTest, EditPlanSendsTheFilesSubtasks) {
  AddRun(R"(run_id: "run-1" state { stage: PAUSED version: 4 })", {});
  const std::string plan =
      WriteFile("plan.json", R"([{"id":"a","description":"first"},{"id":"b"}])");
  EXPECT_EQ(Run({"edit-plan", "run-1", "--plan_file=" + plan, "--version=4"}), kExitFinished);
  ASSERT_EQ(router_.resume_requests.size(), 1u);
  const v1::Review::EditPlan& edit = router_.resume_requests[0].review().edit_plan();
  ASSERT_EQ(edit.subtasks_size(), 2);
  EXPECT_EQ(edit.subtasks(0).description(), "first");
  EXPECT_EQ(edit.subtasks(1).id(), "b");
}

TEST_F(CommandRunnerTest, EditPlanWithBadFileIsAUsageError) {
  AddRun(R"(run_id: "run-1" state { stage: PAUSED version: 4 })", {});
  const std::string plan = WriteFile("plan.json", R"({"id":"a"})");
  EXPECT_EQ(Run({"edit-plan", "run-1", "--plan_file=" + plan}), kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("--plan_file: must be a JSON array"));
  EXPECT_TRUE(router_.resume_requests.empty());
}

TEST_F(CommandRunnerTest, ApproveWithWatchPrintsOnlyEventsFromTheResumeOn) {
  AddRun(R"(run_id: "run-1" state { stage: PAUSED version: 2 })",
         {R"(seq: 1 version: 2 paused { pause { reason: PAUSE_POINT point: AFTER_PLAN } })",
          R"(seq: 2 version: 3 resumed { to: DECIDING review { approve {} } })",
          R"(seq: 3 version: 4 finished { outcome { status: FINISHED reason: GOAL_ACHIEVED } })"});
  router_.after_resume["run-1"] = Parse<v1::Run>(kFinishedRun);
  EXPECT_EQ(Run({"approve", "run-1", "--watch"}), kExitFinished);
  EXPECT_EQ(router_.resume_requests[0].expected_version(), 2);
  EXPECT_THAT(out_.str(), ::testing::StartsWith("run run-1: DECIDING (version 3)\n#2 resumed"));
  EXPECT_THAT(out_.str(), Not(HasSubstr("#1 paused")));
  EXPECT_THAT(out_.str(), HasSubstr("#2 resumed approve -> DECIDING\n#3 finished"));
}

TEST_F(CommandRunnerTest, ExportWritesOneFilePerSnapshot) {
  AddRun(kFinishedRun, {});
  for (int i = 1; i <= 3; ++i) {
    v1::RunSnapshot snapshot;
    snapshot.set_run_id("run-1");
    snapshot.set_iteration(i);
    snapshot.set_version(i * 10);
    snapshot.set_state_json(absl::StrCat(R"({"iteration":)", i, "}"));
    router_.snapshots.push_back(snapshot);
  }
  const std::filesystem::path dir = tmp_ / "out" / "nested";
  EXPECT_EQ(Run({"export", "run-1", "--out=" + dir.string()}), kExitFinished);
  EXPECT_EQ(out_.str(), "exported 3 snapshots of run run-1 to " + dir.string() + "\n");
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    (void)entry;
    ++files;
  }
  EXPECT_EQ(files, 3);
  std::ifstream second(dir / "run-1-0002-v20.json");
  std::stringstream text;
  text << second.rdbuf();
  EXPECT_EQ(text.str(), "{\n  \"iteration\": 2\n}\n");
}

TEST_F(CommandRunnerTest, ExportOfUnknownRunExitsFour) {
  EXPECT_EQ(Run({"export", "nope", "--out=" + tmp_.string()}), kExitRpcError);
  EXPECT_THAT(err_.str(), HasSubstr("ExportRun: NOT_FOUND"));
}

TEST_F(CommandRunnerTest, ListAllFollowsPagesAndPassesFilters) {
  router_.pages[""] = Parse<v1::ListRunsResponse>(
      R"(runs { run_id: "r-2" state { stage: PAUSED } spec { goal: "two" } }
         next_page_token: "p2")");
  router_.pages["p2"] = Parse<v1::ListRunsResponse>(
      R"(runs { run_id: "r-1" state { stage: PAUSED } spec { goal: "one" } })");
  EXPECT_EQ(Run({"list", "--stage=paused", "--page_size=1", "--all"}), kExitFinished);
  ASSERT_EQ(router_.list_requests.size(), 2u);
  EXPECT_EQ(router_.list_requests[0].stage(), v1::PAUSED);
  EXPECT_EQ(router_.list_requests[0].page_size(), 1);
  EXPECT_EQ(router_.list_requests[1].page_token(), "p2");
  EXPECT_THAT(out_.str(), HasSubstr("r-2     PAUSED  -       0     -        two\n"
                                    "r-1     PAUSED  -       0     -        one\n"));
}

TEST_F(CommandRunnerTest, ListOnePageHintsAtTheNextPage) {
  router_.pages[""] =
      Parse<v1::ListRunsResponse>(R"(runs { run_id: "r-2" } next_page_token: "p2")");
  EXPECT_EQ(Run({"list"}), kExitFinished);
  EXPECT_EQ(router_.list_requests.size(), 1u);
  EXPECT_THAT(err_.str(), HasSubstr("list --page_token=p2"));
}

TEST_F(CommandRunnerTest, CancelPrintsTheStage) {
  EXPECT_EQ(Run({"cancel", "run-9", "--reason=enough"}), kExitFinished);
  EXPECT_EQ(router_.cancel_requests[0].reason(), "enough");
  EXPECT_EQ(out_.str(), "run run-9: CANCELLED (CANCELLED_BY_USER)\n");
}

TEST_F(CommandRunnerTest, QuotaShowsUseAgainstEachQuotaAndWhenASpentOneFrees) {
  EXPECT_EQ(Run({"quota", "--namespace=team-b"}), kExitFinished);
  ASSERT_EQ(router_.quota_requests.size(), 1u);
  EXPECT_EQ(router_.quota_requests[0].namespace_(), "team-b");
  EXPECT_EQ(out_.str(),
            "namespace team-b\n"
            "  max_concurrent_runs: 1 of 2\n"
            "  max_tokens_per_day: 1000 of 1000, spent; frees at 2023-11-15 00:00:00 UTC\n");
}

TEST_F(CommandRunnerTest, NotificationsListsTheOutboxWithTheFilterAsked) {
  EXPECT_EQ(Run({"notifications", "--failed", "--namespace=team-b", "--page_size=5"}),
            kExitFinished);
  ASSERT_EQ(router_.notification_requests.size(), 1u);
  EXPECT_EQ(router_.notification_requests[0].status(), v1::NOTICE_FAILED);
  EXPECT_EQ(router_.notification_requests[0].namespace_(), "team-b");
  EXPECT_EQ(router_.notification_requests[0].page_size(), 5);
  EXPECT_EQ(out_.str(),
            "NOTICE   TYPE      STATUS  ATTEMPTS  COMMITTED            NEXT ATTEMPT  "
            "ENDPOINTS TOOK IT  LAST ERROR\n"
            "run-1.9  finished  failed  31        2023-11-14 22:13:20  -             "
            "0                  http://127.0.0.1:9/...: Couldn't connect to server\n");
  out_.str("");
  EXPECT_EQ(Run({"notifications", "--json"}), kExitFinished);
  EXPECT_EQ(router_.notification_requests.back().status(), v1::NOTICE_STATUS_UNSPECIFIED);
  EXPECT_THAT(out_.str(), HasSubstr("\"noticeId\": \"run-1.9\""));
  EXPECT_EQ(Run({"notifications", "--namespace=team-z"}), kExitRpcError);
  EXPECT_THAT(err_.str(), HasSubstr("reinctl: ListNotifications: PERMISSION_DENIED: namespace:"));
  EXPECT_EQ(router_.notification_requests.size(), 3u);
}

TEST_F(CommandRunnerTest, ShowPrintsSummaryOrJson) {
  AddRun(kFinishedRun, {});
  EXPECT_EQ(Run({"show", "run-1"}), kExitFinished);
  EXPECT_THAT(out_.str(), HasSubstr("outcome: FINISHED GOAL_ACHIEVED: done\n"));
  out_.str("");
  EXPECT_EQ(Run({"show", "run-1", "--json"}), kExitFinished);
  EXPECT_THAT(out_.str(), HasSubstr("\"runId\": \"run-1\""));
}

TEST_F(CommandRunnerTest, HelpPrintsUsage) {
  EXPECT_EQ(Run({"help"}), kExitFinished);
  EXPECT_THAT(out_.str(), HasSubstr("edit-call RUN_ID"));
}

}  // namespace
}  // namespace rein::cli
