// The anthropic planner end to end: the three real binaries, the planner talking to a fake
// Messages API over loopback HTTP. A full run, a refused key, and the key kept secret.
#include <stdlib.h>
#include <sys/stat.h>

#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "planner_service/testing/fake_messages_server.h"
#include "tests/cluster.h"

namespace rein::testing {
namespace {

constexpr char kKey[] = "sk-ant-api03-REIN-E2E-SECRET-7f3a9c1d";

class AnthropicEndToEndTest : public ::testing::Test {
 protected:
  void Boot() {
    ASSERT_TRUE(api_.Start().ok());
    dir_ = absl::StrCat(getenv("TEST_TMPDIR"), "/",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    mkdir(dir_.c_str(), 0755);
    std::ofstream(dir_ + "/key") << kKey << "\n";
    Cluster::Options options;
    options.dir = dir_;
    options.planner_flags = {"--backend=anthropic", absl::StrCat("--api_key_file=", dir_, "/key"),
                             absl::StrCat("--anthropic_base_url=", api_.base_url()),
                             "--model=claude-sonnet-5"};
    cluster_ = std::make_unique<Cluster>(options);
    std::string ws = dir_ + "/workspaces/repo";
    mkdir((dir_ + "/workspaces").c_str(), 0755);
    mkdir(ws.c_str(), 0755);
    std::ofstream(ws + "/README.md") << "# repo\nhello\n";
    ASSERT_TRUE(cluster_->Start()) << cluster_->Logs();
  }

  rein::v1::RunSpec Spec() {
    rein::v1::RunSpec spec;
    spec.set_goal("read the readme");
    spec.set_workspace("repo");
    spec.mutable_limits()->mutable_deadline()->set_seconds(60);
    return spec;
  }

  // Everything the system wrote: logs, the store (events, state, snapshots), exports.
  std::string EverythingWritten(const std::string& run_id) {
    std::string all = cluster_->Logs();
    for (const char* name :
         {"router.log", "planner.log", "executor.log", "rein.db", "rein.db-wal"}) {
      all += ReadFile(dir_ + "/" + name);
    }
    std::vector<rein::v1::RunEvent> events;
    cluster_->Watch(run_id, 0, absl::Seconds(10), &events);
    for (const auto& e : events) all += e.DebugString();
    rein::v1::ExportRunRequest request;
    request.set_run_id(run_id);
    grpc::ClientContext context;
    auto reader = cluster_->router()->ExportRun(&context, request);
    rein::v1::RunSnapshot snapshot;
    while (reader->Read(&snapshot)) all += snapshot.state_json();
    reader->Finish();
    return all;
  }

  FakeMessagesServer api_{kKey};
  std::string dir_;
  std::unique_ptr<Cluster> cluster_;
};

TEST_F(AnthropicEndToEndTest, FullRunOnClaudeKeepsTheKeySecret) {
  Boot();
  api_.Enqueue(ToolUseReply(
      "submit_plan",
      {{"reasoning", "one step"},
       {"subtasks",
        {{{"id", "p1-read"}, {"description", "read README.md"}, {"allowed_tools", {"read_file"}}}}},
       {"goal_achieved", false}}));
  api_.Enqueue(
      ToolUseReply("submit_decision",
                   {{"reasoning", "read it"},
                    {"tool_call", {{"tool", "read_file"}, {"args", {{"path", "README.md"}}}}}}));
  api_.Enqueue(ToolUseReply("submit_evaluation", {{"reasoning", "it says hello"},
                                                  {"status", "COMPLETED"},
                                                  {"summary", "README says hello"},
                                                  {"goal_achieved", true}}));
  absl::StatusOr<rein::v1::Run> run = cluster_->StartRun(Spec());
  ASSERT_TRUE(run.ok()) << run.status();
  std::vector<rein::v1::RunEvent> events;
  ASSERT_TRUE(cluster_->Watch(run->run_id(), 0, absl::Seconds(60), &events).ok());
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().finished().outcome().reason(), rein::v1::GOAL_ACHIEVED)
      << events.back().DebugString() << cluster_->Logs();
  absl::StatusOr<rein::v1::Run> done = cluster_->GetRun(run->run_id());
  ASSERT_TRUE(done.ok());
  EXPECT_TRUE(absl::StartsWith(done->state().planner_backend(), "anthropic:"));
  EXPECT_GT(done->state().tokens_used(), 0);
  std::vector<FakeRequest> requests = api_.requests();
  ASSERT_EQ(requests.size(), 3u);
  for (const auto& r : requests) {
    EXPECT_EQ(r.problem, "");
    EXPECT_EQ(r.headers.at("x-api-key"), kKey);
    EXPECT_EQ(r.headers.at("anthropic-version"), "2023-06-01");
  }
  std::string written = EverythingWritten(run->run_id());
  EXPECT_GT(written.size(), 1000u);
  EXPECT_EQ(written.find(kKey), std::string::npos);
  EXPECT_EQ(written.find("REIN-E2E-SECRET"), std::string::npos);
}

TEST_F(AnthropicEndToEndTest, RefusedKeyFailsRunAtOnceWithTheApiMessage) {
  Boot();
  api_.Enqueue(ErrorReply(401, "authentication_error", "invalid x-api-key"));
  absl::StatusOr<rein::v1::Run> run = cluster_->StartRun(Spec());
  ASSERT_TRUE(run.ok());
  std::vector<rein::v1::RunEvent> events;
  ASSERT_TRUE(cluster_->Watch(run->run_id(), 0, absl::Seconds(60), &events).ok());
  ASSERT_FALSE(events.empty());
  const auto& outcome = events.back().finished().outcome();
  EXPECT_EQ(outcome.reason(), rein::v1::PLANNER_ERROR);
  EXPECT_NE(outcome.message().find("invalid x-api-key"), std::string::npos) << outcome.message();
  EXPECT_EQ(api_.requests().size(), 1u);
  EXPECT_EQ(cluster_->GetRun(run->run_id())->state().retries_used(), 0);
  EXPECT_EQ(EverythingWritten(run->run_id()).find(kKey), std::string::npos);
}

TEST_F(AnthropicEndToEndTest, TokensOfInvalidRepliesCountAgainstTheBudget) {
  Boot();
  for (int i = 0; i < 3; ++i) api_.Enqueue(TextReply("I would rather chat than call a tool."));
  rein::v1::RunSpec spec = Spec();
  spec.mutable_limits()->set_token_budget(1);
  absl::StatusOr<rein::v1::Run> run = cluster_->StartRun(spec);
  ASSERT_TRUE(run.ok());
  std::vector<rein::v1::RunEvent> events;
  ASSERT_TRUE(cluster_->Watch(run->run_id(), 0, absl::Seconds(60), &events).ok());
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().finished().outcome().reason(), rein::v1::TOKEN_BUDGET_EXHAUSTED)
      << events.back().DebugString();
  bool invalid_output_seen = false;
  for (const auto& e : events) {
    invalid_output_seen |=
        e.has_error() && absl::StrContains(e.error().message(), "invalid output");
  }
  EXPECT_TRUE(invalid_output_seen);
  EXPECT_GT(cluster_->GetRun(run->run_id())->state().tokens_used(), 1);
  EXPECT_EQ(api_.requests().size(), 1u);
}

}  // namespace
}  // namespace rein::testing
