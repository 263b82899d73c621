// The anthropic planner end to end: the three real binaries, the planner talking to a fake
// Messages API over loopback HTTP. A full run, a refused key, and the key kept secret.
#include <stdlib.h>
#include <sys/stat.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "planner_service/testing/fake_messages_server.h"
#include "tests/cluster.h"

namespace rein::testing {
namespace {

using json = nlohmann::json;

constexpr char kKey[] = "sk-ant-api03-REIN-E2E-SECRET-7f3a9c1d";

// The model's replies for a one-subtask run that reads README.md.
const json kReadmePlan = {
    {"reasoning", "one step"},
    {"subtasks",
     {{{"id", "p1-read"}, {"description", "read README.md"}, {"allowed_tools", {"read_file"}}}}},
    {"goal_achieved", false}};
const json kReadReadme = {
    {"reasoning", "read it"},
    {"tool_call", {{"tool", "read_file"}, {"args", {{"path", "README.md"}}}}}};
const json kReadmeSaysHello = {{"reasoning", "it says hello"},
                               {"status", "COMPLETED"},
                               {"summary", "README says hello"},
                               {"goal_achieved", true}};

class AnthropicEndToEndTest : public ::testing::Test {
 protected:
  void Boot(std::vector<std::string> router_flags = {}) {
    ASSERT_TRUE(api_.Start().ok());
    dir_ = absl::StrCat(getenv("TEST_TMPDIR"), "/",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    mkdir(dir_.c_str(), 0755);
    std::ofstream(dir_ + "/key") << kKey << "\n";
    Cluster::Options options;
    options.dir = dir_;
    options.router_flags = std::move(router_flags);
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
  api_.Enqueue(ToolUseReply("submit_plan", kReadmePlan));
  api_.Enqueue(ToolUseReply("submit_decision", kReadReadme));
  api_.Enqueue(ToolUseReply("submit_evaluation", kReadmeSaysHello));
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

// The same run twice against the same model answers: with RunSpec.combine_evaluate_decide on
// (the default) the first evaluation also carries the next call, so the run makes one Messages
// request fewer and ends the same way, with the same tool calls.
TEST_F(AnthropicEndToEndTest, CombinedEvaluationSavesADecideRequestForTheSameOutcome) {
  Boot();
  const json plan = {{"reasoning", "one subtask"},
                     {"subtasks",
                      {{{"id", "p1-read"},
                        {"description", "read README.md, then NOTES.md"},
                        {"allowed_tools", {"read_file"}}}}},
                     {"goal_achieved", false}};
  const json& first = kReadReadme;
  const json second = {{"reasoning", "then the notes"},
                       {"tool_call", {{"tool", "read_file"}, {"args", {{"path", "NOTES.md"}}}}}};
  const json more = {{"reasoning", "README read; NOTES.md next"},
                     {"status", "NEEDS_MORE_WORK"},
                     {"summary", "README says hello"},
                     {"goal_achieved", false},
                     {"next_tool_call", second["tool_call"]}};
  const json done = {{"reasoning", "both read"},
                     {"status", "COMPLETED"},
                     {"summary", "both files read"},
                     {"goal_achieved", true}};
  struct Result {
    std::vector<std::string> calls;  // tool and args of each tool_result
    int decisions_from_evaluation = 0;
    rein::v1::TerminationReason reason;
    size_t requests = 0;
  };
  auto run_once = [&](bool combine) {
    const size_t before = api_.requests().size();
    api_.Enqueue(ToolUseReply("submit_plan", plan));
    api_.Enqueue(ToolUseReply("submit_decision", first));
    api_.Enqueue(ToolUseReply("submit_evaluation", more));
    // An opted-out run drops the proposal (not asked for) and asks Decide.
    if (!combine) api_.Enqueue(ToolUseReply("submit_decision", second));
    api_.Enqueue(ToolUseReply("submit_evaluation", kReadmeSaysHello));
    rein::v1::RunSpec spec = Spec();
    if (!combine) spec.set_combine_evaluate_decide(false);
    absl::StatusOr<rein::v1::Run> run = cluster_->StartRun(spec);
    EXPECT_TRUE(run.ok()) << run.status();
    Result result;
    if (!run.ok()) return result;
    std::vector<rein::v1::RunEvent> events;
    EXPECT_TRUE(cluster_->Watch(run->run_id(), 0, absl::Seconds(60), &events).ok());
    for (const auto& e : events) {
      if (e.has_tool_result()) {
        result.calls.push_back(
            absl::StrCat(e.tool_result().action().tool(), e.tool_result().action().args_json()));
      }
      if (e.has_decision() && e.decision().from_evaluation()) ++result.decisions_from_evaluation;
    }
    if (!events.empty()) result.reason = events.back().finished().outcome().reason();
    result.requests = api_.requests().size() - before;
    return result;
  };
  {
    std::string ws = dir_ + "/workspaces/repo";
    std::ofstream(ws + "/NOTES.md") << "notes\n";
  }
  Result separate = run_once(/*combine=*/false);
  Result combined = run_once(/*combine=*/true);
  EXPECT_EQ(separate.reason, rein::v1::GOAL_ACHIEVED) << cluster_->Logs();
  EXPECT_EQ(combined.reason, rein::v1::GOAL_ACHIEVED) << cluster_->Logs();
  EXPECT_EQ(combined.calls, separate.calls);
  EXPECT_EQ(combined.calls.size(), 2u);
  EXPECT_EQ(separate.requests, 5u);
  EXPECT_EQ(combined.requests, 4u);
  EXPECT_EQ(separate.decisions_from_evaluation, 0);
  EXPECT_EQ(combined.decisions_from_evaluation, 1);
  // The combined run's evaluate requests asked for a next call; the opted-out run's did not.
  std::vector<FakeRequest> requests = api_.requests();
  ASSERT_EQ(requests.size(), 9u);
  EXPECT_EQ(requests[2].body.find("Tools for next_tool_call: read_file"), std::string::npos);
  EXPECT_NE(requests[2].body.find("Leave next_tool_call out"), std::string::npos);
  EXPECT_NE(requests[7].body.find("Tools for next_tool_call: read_file"), std::string::npos);
  for (const auto& r : requests) EXPECT_EQ(r.problem, "");
}

// With RunSpec.combine_plan_decide (the default) the plan reply also carries its top subtask's
// first call: the run makes no Decide request for it. A malformed first call (a tool the run
// does not have, arguments that are not an object) is dropped with its reason in the plan event
// and Decide is asked; the run ends the same way.
TEST_F(AnthropicEndToEndTest, PlanCarriesTheFirstCallAndABadOneIsDroppedWithItsReason) {
  Boot();
  const json read = kReadReadme["tool_call"];
  auto plan = [](const json& first_call) {
    json reply = kReadmePlan;
    reply["first_tool_call"] = first_call;
    return reply;
  };
  struct Result {
    std::vector<std::string> calls;
    int from_plan = 0;
    std::string dropped;
    size_t requests = 0;
    rein::v1::TerminationReason reason = rein::v1::TERMINATION_REASON_UNSPECIFIED;
  };
  auto run_once = [&](const json& first_call, bool decide_asked) {
    const size_t before = api_.requests().size();
    api_.Enqueue(ToolUseReply("submit_plan", plan(first_call)));
    if (decide_asked) api_.Enqueue(ToolUseReply("submit_decision", kReadReadme));
    api_.Enqueue(ToolUseReply("submit_evaluation", kReadmeSaysHello));
    Result result;
    absl::StatusOr<rein::v1::Run> run = cluster_->StartRun(Spec());
    EXPECT_TRUE(run.ok()) << run.status();
    if (!run.ok()) return result;
    std::vector<rein::v1::RunEvent> events;
    EXPECT_TRUE(cluster_->Watch(run->run_id(), 0, absl::Seconds(60), &events).ok());
    for (const auto& e : events) {
      if (e.has_tool_result()) {
        result.calls.push_back(
            absl::StrCat(e.tool_result().action().tool(), e.tool_result().action().args_json()));
      }
      if (e.has_decision() && e.decision().from_plan()) ++result.from_plan;
      if (e.has_plan()) result.dropped = e.plan().first_call_dropped();
    }
    if (!events.empty()) result.reason = events.back().finished().outcome().reason();
    result.requests = api_.requests().size() - before;
    return result;
  };
  Result combined = run_once(read, /*decide_asked=*/false);
  EXPECT_EQ(combined.reason, rein::v1::GOAL_ACHIEVED) << cluster_->Logs();
  EXPECT_EQ(combined.requests, 2u);
  EXPECT_EQ(combined.from_plan, 1);
  EXPECT_EQ(combined.dropped, "");
  EXPECT_EQ(combined.calls, std::vector<std::string>{R"(read_file{"path":"README.md"})"});
  for (const json& bad :
       {json{{"tool", "rm_rf"}, {"args", json::object()}},
        json{{"tool", "read_file"}, {"args", json::array({1})}}, json("read README.md")}) {
    Result dropped = run_once(bad, /*decide_asked=*/true);
    EXPECT_EQ(dropped.reason, rein::v1::GOAL_ACHIEVED) << bad.dump() << cluster_->Logs();
    EXPECT_EQ(dropped.requests, 3u) << bad.dump();
    EXPECT_EQ(dropped.from_plan, 0);
    EXPECT_NE(dropped.dropped, "") << bad.dump();
    EXPECT_EQ(dropped.calls, combined.calls);
  }
  for (const auto& r : api_.requests()) EXPECT_EQ(r.problem, "");
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

TEST_F(AnthropicEndToEndTest, TinyCostBudgetEndsTheRunWithUsageAndCostInEventShowAndList) {
  // The shipped example table prices claude-sonnet-5 at $2 / $10 / $0.20 / $2.50 per million
  // tokens of input / output / cache read / cache write.
  Boot({absl::StrCat("--price_table=", RunfilePath("examples/price_table.txt"))});
  api_.Enqueue(ToolUseReply("submit_plan", kReadmePlan));
  api_.Enqueue(ToolUseReply("submit_decision", kReadReadme));
  rein::v1::RunSpec spec = Spec();
  // Each fake reply uses 120 input, 40 output, 90 cache read and 10 cache write tokens:
  // $0.000683. The plan stays under $0.001; the decision goes over it.
  spec.mutable_limits()->set_cost_budget_usd(0.001);
  absl::StatusOr<rein::v1::Run> run = cluster_->StartRun(spec);
  ASSERT_TRUE(run.ok()) << run.status();
  std::vector<rein::v1::RunEvent> events;
  ASSERT_TRUE(cluster_->Watch(run->run_id(), 0, absl::Seconds(60), &events).ok());
  ASSERT_FALSE(events.empty());
  const rein::v1::Outcome& outcome = events.back().finished().outcome();
  EXPECT_EQ(outcome.reason(), rein::v1::COST_BUDGET_EXHAUSTED) << events.back().DebugString();
  EXPECT_EQ(outcome.status(), rein::v1::FAILED);
  EXPECT_EQ(outcome.usage().input_tokens(), 240);
  EXPECT_EQ(outcome.usage().output_tokens(), 80);
  EXPECT_EQ(outcome.usage().cache_read_input_tokens(), 180);
  EXPECT_EQ(outcome.usage().cache_creation_input_tokens(), 20);
  EXPECT_NEAR(outcome.cost_usd(), 0.001366, 1e-9);
  EXPECT_EQ(api_.requests().size(), 2u);

  // ListRuns carries the same usage and cost in each run's state.
  grpc::ClientContext context;
  rein::v1::ListRunsRequest list;
  list.set_outcome(rein::v1::COST_BUDGET_EXHAUSTED);
  rein::v1::ListRunsResponse listed;
  ASSERT_TRUE(cluster_->router()->ListRuns(&context, list, &listed).ok());
  ASSERT_EQ(listed.runs_size(), 1);
  EXPECT_EQ(listed.runs(0).state().usage().SerializeAsString(),
            outcome.usage().SerializeAsString());
  EXPECT_NEAR(listed.runs(0).state().cost_used_usd(), 0.001366, 1e-9);
  EXPECT_EQ(listed.runs(0).state().tokens_used(), 520);  // input + output + cache read + write

  // reinctl show and list --usage print them.
  const std::string out = dir_ + "/show.out";
  Process show("reinctl-show",
               {RunfilePath("cli/reinctl"), absl::StrCat("--router=", cluster_->router_target()),
                "show", run->run_id()},
               out);
  ASSERT_TRUE(show.Start());
  EXPECT_EQ(show.Wait(absl::Seconds(30)), 0) << ReadFile(out);
  const std::string shown = ReadFile(out);
  EXPECT_TRUE(absl::StrContains(shown, "cost_budget_usd 0.001000")) << shown;
  EXPECT_TRUE(absl::StrContains(shown,
                                "usage: input 240  output 80  cache read 180  cache write "
                                "20  cost $0.001366/$0.001000\n"))
      << shown;
  EXPECT_TRUE(absl::StrContains(shown,
                                "outcome: FAILED COST_BUDGET_EXHAUSTED: cost $0.001366, "
                                "budget $0.001000"))
      << shown;
  const std::string list_out = dir_ + "/list.out";
  Process listing("reinctl-list",
                  {RunfilePath("cli/reinctl"), absl::StrCat("--router=", cluster_->router_target()),
                   "list", "--usage"},
                  list_out);
  ASSERT_TRUE(listing.Start());
  EXPECT_EQ(listing.Wait(absl::Seconds(30)), 0) << ReadFile(list_out);
  EXPECT_TRUE(absl::StrContains(ReadFile(list_out), "COST USD")) << ReadFile(list_out);
  EXPECT_TRUE(absl::StrContains(ReadFile(list_out), "0.001366")) << ReadFile(list_out);

  // A model the table does not price is refused at StartRun when a cost budget is set.
  spec.mutable_model()->set_model("claude-unpriced-1");
  absl::StatusOr<rein::v1::Run> refused = cluster_->StartRun(spec);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(refused.status().message(), "spec.model.model"))
      << refused.status();
}

TEST(PriceTableFlagTest, ABadPriceTableStopsTheRouterNamingTheLineAndField) {
  const std::string dir = absl::StrCat(getenv("TEST_TMPDIR"), "/bad_price_table");
  mkdir(dir.c_str(), 0755);
  const std::string prices = dir + "/prices.txt";
  std::ofstream(prices) << "# model in out read write\nclaude-sonnet-5 2 ten 0.2 2.5\n";
  Process router(
      "router",
      {RunfilePath("router_service/rein-router"), absl::StrCat("--listen=127.0.0.1:", FreePort()),
       absl::StrCat("--store=sqlite:", dir, "/rein.db"), absl::StrCat("--price_table=", prices)},
      dir + "/router.log");
  ASSERT_TRUE(router.Start());
  EXPECT_EQ(router.Wait(absl::Seconds(30)), 2) << ReadFile(dir + "/router.log");
  EXPECT_TRUE(absl::StrContains(ReadFile(dir + "/router.log"),
                                absl::StrCat("--price_table: ", prices, ":2: output: \"ten\"")))
      << ReadFile(dir + "/router.log");
}

TEST_F(AnthropicEndToEndTest, CostBudgetIsRefusedWithoutAPriceTable) {
  Boot();
  rein::v1::RunSpec spec = Spec();
  spec.mutable_limits()->set_cost_budget_usd(1);
  absl::StatusOr<rein::v1::Run> refused = cluster_->StartRun(spec);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(refused.status().message(), "spec.limits.cost_budget_usd"))
      << refused.status();
  EXPECT_TRUE(api_.requests().empty());
}

}  // namespace
}  // namespace rein::testing
