// Tests of the stage tool schemas and of validating structured answers against them and the
// request.
#include "planner_service/structured_output.h"

#include <string>

#include "gtest/gtest.h"

namespace rein {
namespace {

using json = nlohmann::json;

rein::v1::PlanRequest PlanWithTools() {
  rein::v1::PlanRequest r;
  r.set_goal("g");
  r.add_tools()->set_name("read_file");
  r.add_tools()->set_name("list_files");
  r.add_completed()->set_id("old");
  return r;
}

json Subtask(const std::string& id, json tools = json::array()) {
  return {{"id", id}, {"description", "d"}, {"allowed_tools", std::move(tools)}};
}

TEST(StructuredOutputTest, PlanIsConverted) {
  absl::StatusOr<rein::v1::PlanResponse> plan =
      PlanFromOutput({{"reasoning", "r"},
                      {"subtasks", {Subtask("a", {"read_file"}), Subtask("b")}},
                      {"goal_achieved", false},
                      {"notes", nullptr}},
                     PlanWithTools());
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->subtasks_size(), 2);
  EXPECT_EQ(plan->subtasks(0).allowed_tools(0), "read_file");
  EXPECT_EQ(plan->subtasks(1).status(), rein::v1::SubTask::PENDING);
  EXPECT_EQ(plan->notes(), "");
}

TEST(StructuredOutputTest, DelegateIsOfferedAndReadOnlyWhenTheRunAllowsChildren) {
  rein::v1::PlanRequest request = PlanWithTools();
  auto subtask_schema = [](const rein::v1::PlanRequest& r) {
    return PlanTool(r)["input_schema"]["properties"]["subtasks"]["items"]["properties"];
  };
  EXPECT_FALSE(subtask_schema(request).contains("delegate"));
  json delegated = Subtask("a", {"read_file"});
  delegated["delegate"] = true;
  json output = {{"reasoning", "r"}, {"subtasks", {delegated}}, {"goal_achieved", false}};
  absl::StatusOr<rein::v1::PlanResponse> plan = PlanFromOutput(output, request);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_FALSE(plan->subtasks(0).delegate());

  request.set_allow_delegation(true);
  request.set_max_parallel_children(4);
  request.set_children_left(3);
  EXPECT_EQ(subtask_schema(request)["delegate"]["type"], "boolean");
  plan = PlanFromOutput(output, request);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(plan->subtasks(0).delegate());
}

// A first call is passed on as given, whatever its shape (the router checks it against the
// applied plan and records why it drops a bad one); it never makes the plan invalid.
TEST(StructuredOutputTest, PlanPassesItsFirstToolCallOnAsGiven) {
  struct Case {
    json proposal;
    std::string tool, args;
  };
  for (const Case& c : {
           Case{{{"tool", "read_file"}, {"args", {{"path", "a"}}}}, "read_file", R"({"path":"a"})"},
           Case{{{"tool", "read_file"}, {"args", R"({"path":"a"})"}},
                "read_file",
                R"({"path":"a"})"},
           Case{{{"tool", "rm"}, {"args", json::array({1})}}, "rm", "[1]"},
           Case{{{"tool", 7}, {"args", "x"}}, "7", R"("x")"},
           Case{{{"args", json::object()}}, "", "{}"},
           Case{"read a.txt", "", R"("read a.txt")"},
       }) {
    absl::StatusOr<rein::v1::PlanResponse> plan =
        PlanFromOutput({{"reasoning", "r"},
                        {"subtasks", {Subtask("a", {"read_file"})}},
                        {"goal_achieved", false},
                        {"first_tool_call", c.proposal}},
                       PlanWithTools());
    ASSERT_TRUE(plan.ok()) << plan.status() << " " << c.proposal.dump();
    EXPECT_EQ(plan->subtasks_size(), 1);
    ASSERT_TRUE(plan->has_first_call()) << c.proposal.dump();
    EXPECT_EQ(plan->first_call().tool(), c.tool);
    EXPECT_EQ(plan->first_call().args_json(), c.args);
  }
  absl::StatusOr<rein::v1::PlanResponse> none =
      PlanFromOutput({{"reasoning", "r"}, {"subtasks", {Subtask("a")}}, {"goal_achieved", false}},
                     PlanWithTools());
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_first_call());
}

TEST(StructuredOutputTest, PlanRequestChecksNameTheProblem) {
  const rein::v1::PlanRequest request = PlanWithTools();
  auto message = [&](json subtasks) {
    return std::string(
        PlanFromOutput({{"reasoning", "r"}, {"subtasks", subtasks}, {"goal_achieved", false}},
                       request)
            .status()
            .message());
  };
  EXPECT_EQ(message({Subtask("old")}),
            "invalid output: subtasks[0].id: \"old\" is the id of an ended subtask");
  EXPECT_EQ(message({Subtask("a", {"rm"})}),
            "invalid output: subtasks[0].allowed_tools[0]: \"rm\" is not one of: read_file, "
            "list_files");
  EXPECT_EQ(message({Subtask("a", {"read_file", "read_file"})}),
            "invalid output: subtasks[0].allowed_tools[1]: \"read_file\" is listed twice");
  EXPECT_EQ(message({Subtask("")}), "invalid output: subtasks[0].id: must not be empty");
  EXPECT_EQ(message({{{"id", "a"}, {"allowed_tools", json::array()}}}),
            "invalid output: subtasks[0].description: is required");
}

TEST(StructuredOutputTest, MissingAndMistypedFieldsAreInvalidOutput) {
  EXPECT_EQ(PlanFromOutput({{"subtasks", json::array()}}, PlanWithTools()).status().message(),
            "invalid output: reasoning: is required");
  EXPECT_EQ(PlanFromOutput({{"reasoning", 1}, {"subtasks", json::array()}, {"goal_achieved", true}},
                           PlanWithTools())
                .status()
                .message(),
            "invalid output: reasoning: must be a string, not an integer");
  EXPECT_EQ(EvaluateFromOutput(json::array()).status().message(),
            "invalid output: (top): must be an object, not an array");
}

TEST(StructuredOutputTest, DecisionNeedsExactlyOneOfCallAndQuery) {
  rein::v1::DecideRequest request;
  request.mutable_subtask()->set_id("s");
  request.add_tools()->set_name("read_file");
  EXPECT_EQ(DecideFromOutput({{"reasoning", "r"}}, request).status().message(),
            "invalid output: neither tool_call nor human_query is given; give exactly one");
  EXPECT_EQ(DecideFromOutput({{"reasoning", "r"},
                              {"human_query", "q"},
                              {"tool_call", {{"tool", "read_file"}, {"args", json::object()}}}},
                             request)
                .status()
                .message(),
            "invalid output: both tool_call and human_query are given; give exactly one");
}

TEST(StructuredOutputTest, DecisionArgsGivenAsAStringAreAccepted) {
  rein::v1::DecideRequest request;
  request.mutable_subtask()->set_id("s");
  rein::v1::ToolSpec* tool = request.add_tools();
  tool->set_name("write_file");
  tool->set_mutating(true);
  absl::StatusOr<rein::v1::DecideResponse> decision =
      DecideFromOutput({{"reasoning", "r"},
                        {"human_query", ""},
                        {"tool_call", {{"tool", "write_file"}, {"args", R"({"path": "a"})"}}}},
                       request);
  ASSERT_TRUE(decision.ok()) << decision.status();
  EXPECT_EQ(decision->tool_call().args_json(), R"({"path":"a"})");
  EXPECT_TRUE(decision->tool_call().mutating());
  EXPECT_EQ(
      DecideFromOutput(
          {{"reasoning", "r"}, {"tool_call", {{"tool", "write_file"}, {"args", "[1]"}}}}, request)
          .status()
          .message(),
      "invalid output: tool_call.args: must be an object, not a string");
}

TEST(StructuredOutputTest, DecisionWithNoToolsAllowedNamesTheSubtask) {
  rein::v1::DecideRequest request;
  request.mutable_subtask()->set_id("s");
  EXPECT_EQ(DecideFromOutput({{"reasoning", "r"},
                              {"tool_call", {{"tool", "read_file"}, {"args", json::object()}}}},
                             request)
                .status()
                .message(),
            "invalid output: tool_call.tool: \"read_file\" is not allowed for subtask \"s\" "
            "(allowed: none)");
}

TEST(StructuredOutputTest, EvaluationStatusesMapToTheEventEnum) {
  for (const auto& [word, status] :
       {std::pair<std::string, rein::v1::RunEvent::Evaluation::Status>{
            "COMPLETED", rein::v1::RunEvent::Evaluation::COMPLETED},
        {"FAILED", rein::v1::RunEvent::Evaluation::FAILED},
        {"NEEDS_MORE_WORK", rein::v1::RunEvent::Evaluation::NEEDS_MORE_WORK}}) {
    absl::StatusOr<rein::v1::EvaluateResponse> verdict = EvaluateFromOutput(
        {{"reasoning", "r"}, {"status", word}, {"summary", "s"}, {"goal_achieved", false}});
    ASSERT_TRUE(verdict.ok()) << verdict.status();
    EXPECT_EQ(verdict->status(), status);
  }
}

TEST(StructuredOutputTest, ToolsCarryTheRequestsNamesAsEnums) {
  rein::v1::DecideRequest request;
  request.add_tools()->set_name("read_file");
  const json tool = DecideTool(request);
  EXPECT_EQ(tool["name"], "submit_decision");
  EXPECT_EQ(tool["input_schema"]["type"], "object");
  EXPECT_EQ(tool["input_schema"]["properties"]["tool_call"]["properties"]["tool"]["enum"],
            json({"read_file"}));
  // No tools: no (invalid, empty) enum.
  EXPECT_FALSE(DecideTool(rein::v1::DecideRequest())["input_schema"]["properties"]["tool_call"]
                                                    ["properties"]["tool"]
                                                        .contains("enum"));
  EXPECT_EQ(EvaluateTool()["input_schema"]["required"],
            json({"reasoning", "status", "summary", "goal_achieved"}));
}

rein::v1::EvaluateRequest ProposingRequest() {
  rein::v1::EvaluateRequest request;
  request.set_propose_next(true);
  request.mutable_subtask()->set_id("s1");
  request.mutable_subtask()->add_allowed_tools("read_file");
  request.add_run_tools()->set_name("read_file");
  request.add_run_tools()->set_name("write_file");
  return request;
}

TEST(StructuredOutputTest, EvaluateToolOffersAnOptionalNextToolCallOverTheRunsTools) {
  const json schema = EvaluateTool(ProposingRequest())["input_schema"];
  EXPECT_EQ(schema["properties"]["next_tool_call"]["properties"]["tool"]["enum"],
            json({"read_file", "write_file"}));
  EXPECT_EQ(schema["properties"]["next_tool_call"]["required"], json({"tool", "args"}));
  EXPECT_EQ(schema["required"], json({"reasoning", "status", "summary", "goal_achieved"}));
}

TEST(StructuredOutputTest, EvaluationCarriesAValidNextToolCall) {
  absl::StatusOr<rein::v1::EvaluateResponse> verdict = EvaluateFromOutput(
      {{"reasoning", "r"},
       {"status", "NEEDS_MORE_WORK"},
       {"summary", "s"},
       {"goal_achieved", false},
       {"next_tool_call", {{"tool", "read_file"}, {"args", {{"path", "a.txt"}}}}}},
      ProposingRequest());
  ASSERT_TRUE(verdict.ok()) << verdict.status();
  EXPECT_EQ(verdict->next_call().tool(), "read_file");
  EXPECT_EQ(verdict->next_call().args_json(), R"({"path":"a.txt"})");
  EXPECT_EQ(verdict->next_call_dropped(), "");
}

TEST(StructuredOutputTest, BadNextToolCallIsDroppedAndTheEvaluationStands) {
  const json base = {{"reasoning", "r"},
                     {"status", "NEEDS_MORE_WORK"},
                     {"summary", "s"},
                     {"goal_achieved", false}};
  const std::pair<json, std::string> cases[] = {
      {{{"tool", "write_file"}, {"args", json::object()}}, "is not allowed for subtask"},
      {{{"tool", "rm_rf"}, {"args", json::object()}}, "next_tool_call dropped: tool_call.tool"},
      {{{"tool", "read_file"}, {"args", 3}}, "tool_call.args"},
      {{{"tool", "read_file"}}, "tool_call.args"},
      {"read_file", "tool_call"},
  };
  for (const auto& [proposal, why] : cases) {
    json output = base;
    output["next_tool_call"] = proposal;
    absl::StatusOr<rein::v1::EvaluateResponse> verdict =
        EvaluateFromOutput(output, ProposingRequest());
    ASSERT_TRUE(verdict.ok()) << proposal.dump() << ": " << verdict.status();
    EXPECT_EQ(verdict->status(), rein::v1::RunEvent::Evaluation::NEEDS_MORE_WORK);
    EXPECT_FALSE(verdict->has_next_call()) << proposal.dump();
    EXPECT_NE(verdict->next_call_dropped().find(why), std::string::npos)
        << proposal.dump() << ": " << verdict->next_call_dropped();
  }
  // Not asked for: dropped as well.
  json output = base;
  output["next_tool_call"] = {{"tool", "read_file"}, {"args", json::object()}};
  rein::v1::EvaluateRequest request = ProposingRequest();
  request.set_propose_next(false);
  absl::StatusOr<rein::v1::EvaluateResponse> verdict = EvaluateFromOutput(output, request);
  ASSERT_TRUE(verdict.ok());
  EXPECT_FALSE(verdict->has_next_call());
  EXPECT_NE(verdict->next_call_dropped().find("not asked for"), std::string::npos);
}

}  // namespace
}  // namespace rein
