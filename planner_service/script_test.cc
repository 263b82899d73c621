// Tests of Script: parsing and validating a scripted planner's script, and rendering replies.
#include "planner_service/script.h"

#include <stdlib.h>

#include <fstream>
#include <iterator>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rein/v1/planner.pb.h"

namespace rein {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// The message of parsing `text` as "t.json", which must fail with INVALID_ARGUMENT.
std::string LoadError(absl::string_view text) {
  absl::StatusOr<Script> script = ParseScript(text, "t.json");
  if (script.ok()) return "<loaded>";
  EXPECT_EQ(script.status().code(), absl::StatusCode::kInvalidArgument) << script.status();
  return std::string(script.status().message());
}

TEST(ParseScriptTest, RulesKeepTheirOrderPathsAndFields) {
  absl::StatusOr<Script> script = ParseScript(R"json({
      "plan": [{"when": {"iteration_at_least": 3, "has_human_input": true},
                "reply": {"reasoning": "late"}},
               {"reply": {"reasoning": "early"}}],
      "decide": [{"when": {"subtask": "down"}, "delay_ms": 250,
                  "error": {"code": "UNAVAILABLE", "message": "busy"}}],
      "evaluate": [{"when": {"tool": "read_file", "action_ok": false,
                             "observation_contains": "KEY="},
                    "reply": {"status": "FAILED"}}]})json");
  ASSERT_TRUE(script.ok()) << script.status();
  ASSERT_EQ(script->plan.size(), 2u);
  EXPECT_EQ(script->plan[0].path, "plan[0]");
  EXPECT_EQ(script->plan[0].when.iteration_at_least, 3);
  EXPECT_EQ(script->plan[0].when.has_human_input, true);
  EXPECT_FALSE(script->plan[0].when.subtask.has_value());
  EXPECT_EQ(script->plan[0].reply["reasoning"], "late");
  EXPECT_EQ(script->plan[0].error_code, absl::StatusCode::kOk);
  EXPECT_EQ(script->plan[1].path, "plan[1]");
  EXPECT_EQ(script->plan[1].delay, absl::ZeroDuration());
  ASSERT_EQ(script->decide.size(), 1u);
  EXPECT_EQ(script->decide[0].when.subtask, "down");
  EXPECT_EQ(script->decide[0].delay, absl::Milliseconds(250));
  EXPECT_EQ(script->decide[0].error_code, absl::StatusCode::kUnavailable);
  EXPECT_EQ(script->decide[0].error_message, "busy");
  ASSERT_EQ(script->evaluate.size(), 1u);
  EXPECT_EQ(script->evaluate[0].when.tool, "read_file");
  EXPECT_EQ(script->evaluate[0].when.action_ok, false);
  EXPECT_EQ(script->evaluate[0].when.observation_contains, "KEY=");
}

TEST(ParseScriptTest, MissingStagesHaveNoRules) {
  absl::StatusOr<Script> script = ParseScript(R"json({"decide": [{"reply": {}}]})json");
  ASSERT_TRUE(script.ok()) << script.status();
  EXPECT_TRUE(script->plan.empty());
  EXPECT_EQ(script->decide.size(), 1u);
  EXPECT_TRUE(script->evaluate.empty());
}

TEST(ParseScriptTest, CommentsAreAllowed) {
  absl::StatusOr<Script> script = ParseScript(R"json({
      // the demo's script
      /* a block comment */
      "comment": "top-level note",
      "plan": [{"comment": "always", "reply": {"reasoning": "ok"}}]})json");
  ASSERT_TRUE(script.ok()) << script.status();
  EXPECT_EQ(script->plan.size(), 1u);
}

TEST(ParseScriptTest, DefaultSourceIsScript) {
  EXPECT_EQ(ParseScript("[]").status().message(),
            "script: (top level): expected an object with plan, decide and evaluate, got array");
}

TEST(ParseScriptTest, InvalidJsonNamesLineAndColumn) {
  absl::StatusOr<Script> script = ParseScript("{\n  \"plan\": [,]\n}", "t.json");
  EXPECT_EQ(script.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(script.status().message()), StartsWith("t.json: not valid JSON: "));
  EXPECT_THAT(std::string(script.status().message()), HasSubstr("line 2, column"));
}

TEST(ParseScriptTest, ArbitraryBytesAreRefusedNotCrashed) {
  const absl::string_view texts[] = {absl::string_view("\0\xff\xfe", 3), "", "null", "\"plan\"",
                                     "{\"plan\": [{\"reply\": {\"x\": \"\xff\"}}]}"};
  for (absl::string_view text : texts) {
    EXPECT_EQ(ParseScript(text).status().code(), absl::StatusCode::kInvalidArgument);
  }
}

struct LoadErrorCase {
  const char* script;
  const char* message_prefix;
};

class ScriptLoadErrorTest : public ::testing::TestWithParam<LoadErrorCase> {};

TEST_P(ScriptLoadErrorTest, BadScriptIsRefusedNamingFileAndPath) {
  EXPECT_THAT(LoadError(GetParam().script), StartsWith(GetParam().message_prefix));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ScriptLoadErrorTest,
    ::testing::Values(
        LoadErrorCase{R"({"plan": [)", "t.json: not valid JSON: "},
        LoadErrorCase{R"([])", "t.json: (top level): expected an object"},
        LoadErrorCase{R"({"plna": []})", "t.json: plna: unknown key (known: plan, decide"},
        LoadErrorCase{R"({"plan": {}})", "t.json: plan: expected an array of rules, got object"},
        LoadErrorCase{R"({"plan": ["x"]})", "t.json: plan[0]: expected a rule object, got string"},
        LoadErrorCase{R"({"decide": [{"replay": {}}]})", "t.json: decide[0].replay: unknown key"},
        LoadErrorCase{R"({"decide": [{"reply": {}, "error": {"code": "INTERNAL"}}]})",
                      "t.json: decide[0]: has both reply and error"},
        LoadErrorCase{R"({"decide": [{"when": {}}]})",
                      "t.json: decide[0]: needs a reply or an error"},
        LoadErrorCase{R"({"decide": [{"when": [], "reply": {}}]})",
                      "t.json: decide[0].when: expected an object of conditions, got array"},
        LoadErrorCase{
            R"({"decide": [{"when": {"subtsk": "a"}, "reply": {}}]})",
            "t.json: decide[0].when.subtsk: unknown condition (decide rules know: subtask,"},
        LoadErrorCase{R"({"plan": [{"when": {"tool": "a"}, "reply": {}}]})",
                      "t.json: plan[0].when.tool: not available in plan rules"},
        LoadErrorCase{R"({"evaluate": [{"when": {"has_human_input": true}, "reply": {}}]})",
                      "t.json: evaluate[0].when.has_human_input: not available in evaluate rules"},
        LoadErrorCase{R"({"evaluate": [{"when": {"action_ok": "yes"}, "reply": {}}]})",
                      "t.json: evaluate[0].when.action_ok: expected true or false, got string"},
        LoadErrorCase{R"({"decide": [{"when": {"subtask": 3}, "reply": {}}]})",
                      "t.json: decide[0].when.subtask: expected a string, got number"},
        LoadErrorCase{R"({"decide": [{"when": {"subtask": ""}, "reply": {}}]})",
                      "t.json: decide[0].when.subtask: must not be empty"},
        LoadErrorCase{R"({"plan": [{"when": {"iteration_at_least": -1}, "reply": {}}]})",
                      "t.json: plan[0].when.iteration_at_least: expected an integer from 0 to "
                      "2147483647, -1"},
        LoadErrorCase{R"({"plan": [{"when": {"iteration_at_least": 1.5}, "reply": {}}]})",
                      "t.json: plan[0].when.iteration_at_least: expected an integer"},
        LoadErrorCase{
            R"({"plan": [{"delay_ms": "10", "reply": {}}]})",
            "t.json: plan[0].delay_ms: expected an integer from 0 to 3600000, got string"},
        LoadErrorCase{R"({"plan": [{"delay_ms": 3600001, "reply": {}}]})",
                      "t.json: plan[0].delay_ms: expected an integer from 0 to 3600000, 3600001"},
        LoadErrorCase{R"({"decide": [{"reply": {}}, {"reply": {}},
                                     {"error": {"code": "UNAVAILBLE", "message": "m"}}]})",
                      "t.json: decide[2].error.code: unknown gRPC code \"UNAVAILBLE\""},
        LoadErrorCase{R"({"decide": [{"error": {"code": "OK"}}]})",
                      "t.json: decide[0].error.code: unknown gRPC code \"OK\""},
        LoadErrorCase{R"({"decide": [{"error": {"message": "m"}}]})",
                      "t.json: decide[0].error: missing \"code\""},
        LoadErrorCase{R"({"decide": [{"error": {"code": "INTERNAL", "msg": "m"}}]})",
                      "t.json: decide[0].error.msg: unknown key (known: code, message)"},
        LoadErrorCase{R"({"decide": [{"error": "UNAVAILABLE"}]})",
                      "t.json: decide[0].error: expected an object"},
        LoadErrorCase{R"({"decide": [{"reply": {}}, {"reply": {}}, {"reply": {"tolCall": {}}}]})",
                      "t.json: decide[2].reply.tolCall: unknown field of DecideResponse (known: "
                      "reasoning, toolCall, humanQuery"},
        LoadErrorCase{R"({"decide": [{"reply": {"toolCall": {"tol": "x"}}}]})",
                      "t.json: decide[0].reply.toolCall.tol: unknown field of ToolCall"},
        LoadErrorCase{R"({"decide": [{"reply": {"toolCall": {"tool": "x", "args": "{}"}}}]})",
                      "t.json: decide[0].reply.toolCall.args: expected an object of tool "
                      "arguments, got string"},
        LoadErrorCase{R"({"decide": [{"reply": {"toolCall": {"args": {}, "argsJson": "{}"}}}]})",
                      "t.json: decide[0].reply.toolCall.args: give args or argsJson, not both"},
        LoadErrorCase{R"({"decide": [{"reply": {"humanQuery": "q", "toolCall": {"tool": "x"}}}]})",
                      "t.json: decide[0].reply.toolCall: conflicts with humanQuery"},
        LoadErrorCase{R"({"decide": [{"reply": "list_files"}]})",
                      "t.json: decide[0].reply: expected an object (DecideResponse), got string"},
        LoadErrorCase{R"({"plan": [{"reply": {"subtasks": {"id": "a"}}}]})",
                      "t.json: plan[0].reply.subtasks: expected an array, got object"},
        LoadErrorCase{R"({"plan": [{"reply": {"subtasks": [{"id": "a"}, {"allowed": []}]}}]})",
                      "t.json: plan[0].reply.subtasks[1].allowed: unknown field of SubTask"},
        LoadErrorCase{R"({"plan": [{"reply": {"goalAchieved": "yes please"}}]})",
                      "t.json: plan[0].reply: not a valid PlanResponse: "},
        LoadErrorCase{R"({"evaluate": [{"reply": {"status": "DONE"}}]})",
                      "t.json: evaluate[0].reply: not a valid EvaluateResponse: "},
        LoadErrorCase{R"({"plan": [{"reply": {"reasoning": "on ${subtask}"}}]})",
                      "t.json: plan[0].reply.reasoning: ${subtask} is not available in plan "
                      "replies"}));

TEST(ParseScriptTest, DeeplyNestedScriptIsRefused) {
  const std::string deep =
      absl::StrCat(R"({"decide": [{"reply": {"toolCall": {"args": )", std::string(100000, '['),
                   std::string(100000, ']'), "}}}]}");
  EXPECT_EQ(LoadError(deep), "t.json: (top level): nested deeper than 64 levels");
}

TEST(LoadScriptFileTest, ErrorsNameTheFile) {
  const std::string path = absl::StrCat(getenv("TEST_TMPDIR"), "/bad.json");
  std::ofstream(path) << R"json({"decide": [{"reply": {"x": 1}}]})json";
  absl::StatusOr<Script> script = LoadScriptFile(path);
  EXPECT_EQ(script.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(script.status().message()),
              StartsWith(absl::StrCat(path, ": decide[0].reply.x: unknown field")));
}

TEST(LoadScriptFileTest, MissingIsNotFound) {
  absl::StatusOr<Script> script = LoadScriptFile("/nonexistent/script.json");
  EXPECT_EQ(script.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(script.status().message()), HasSubstr("/nonexistent/script.json"));
}

TEST(LoadScriptFileTest, DirectoryIsFailedPrecondition) {
  absl::StatusOr<Script> script = LoadScriptFile(getenv("TEST_TMPDIR"));
  EXPECT_EQ(script.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(script.status().message()), HasSubstr("not a regular file"));
}

TEST(LoadScriptFileTest, ReadsAndParsesTheFile) {
  const std::string path = absl::StrCat(getenv("TEST_TMPDIR"), "/script.json");
  std::ofstream(path) << R"json({"plan": [{"reply": {"reasoning": "from file"}}]})json";
  absl::StatusOr<Script> script = LoadScriptFile(path);
  ASSERT_TRUE(script.ok()) << script.status();
  ASSERT_EQ(script->plan.size(), 1u);
  EXPECT_EQ(script->plan[0].reply["reasoning"], "from file");
}

TEST(LoadScriptFileTest, ExampleInScriptMdParses) {
  std::ifstream in("planner_service/SCRIPT.md");
  ASSERT_TRUE(in) << "SCRIPT.md not in runfiles";
  const std::string doc((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t begin = doc.find("```json\n");
  ASSERT_NE(begin, std::string::npos);
  const size_t end = doc.find("```", begin + 8);
  ASSERT_NE(end, std::string::npos);
  absl::StatusOr<Script> script = ParseScript(doc.substr(begin + 8, end - begin - 8), "SCRIPT.md");
  ASSERT_TRUE(script.ok()) << script.status();
  EXPECT_FALSE(script->plan.empty());
  EXPECT_FALSE(script->decide.empty());
  EXPECT_FALSE(script->evaluate.empty());
}

TEST(SubstitutePlaceholdersTest, ReplacesEveryPlaceholderAndLeavesOthers) {
  PlaceholderValues values;
  values.iteration = 4;
  values.subtask = "read";
  values.observation = "a.txt";
  EXPECT_EQ(
      SubstitutePlaceholders("${subtask}@${iteration}: ${observation} ${HOME} ${subtask}", values),
      "read@4: a.txt ${HOME} read");
}

TEST(RenderReplyTest, SubstitutesAndTurnsArgsIntoArgsJson) {
  absl::StatusOr<Script> script = ParseScript(R"json({"decide": [{"reply": {
      "reasoning": "at ${iteration}",
      "toolCall": {"tool": "read_file", "args": {"path": "${subtask}.txt"}}}}]})json");
  ASSERT_TRUE(script.ok()) << script.status();
  PlaceholderValues values;
  values.iteration = 2;
  values.subtask = "a\"b";
  rein::v1::DecideResponse response;
  ASSERT_TRUE(RenderReply(script->decide[0].reply, values, &response).ok());
  EXPECT_EQ(response.reasoning(), "at 2");
  EXPECT_EQ(response.tool_call().tool(), "read_file");
  EXPECT_EQ(response.tool_call().args_json(), R"({"path":"a\"b.txt"})");
}

TEST(RenderReplyTest, ReplyOfAnotherMessageIsInvalidArgument) {
  rein::v1::EvaluateResponse response;
  absl::Status status =
      RenderReply(nlohmann::json::parse(R"({"subtasks": []})"), PlaceholderValues(), &response);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace rein
