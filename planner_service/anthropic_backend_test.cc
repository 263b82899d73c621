// Tests of the anthropic backend through a loopback fake of the Messages API, with the real
// prompt files: requests sent, structured output, text fallback, stop reasons, errors, prompt
// growth and secrecy of the key.
#include "planner_service/anthropic_backend.h"

#include <iostream>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/testing/fake_clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "planner_service/testing/fake_messages_server.h"
#include "trace/testing/recording_exporter.h"
#include "trace/tracer.h"

namespace rein {
namespace {

using json = nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kKey[] = "sk-ant-backend-SECRET-9876543210";

rein::v1::ToolSpec Tool(const std::string& name, bool mutating = false) {
  rein::v1::ToolSpec tool;
  tool.set_name(name);
  tool.set_description(absl::StrCat("The ", name, " tool."));
  tool.set_input_schema_json(R"({"type":"object","properties":{"path":{"type":"string"}}})");
  tool.set_mutating(mutating);
  return tool;
}

rein::v1::PlanRequest PlanRequest() {
  rein::v1::PlanRequest r;
  r.set_run_id("run1");
  r.set_goal("Count the lines of README.md");
  *r.add_tools() = Tool("read_file");
  *r.add_tools() = Tool("write_file", /*mutating=*/true);
  r.set_iteration(1);
  return r;
}

rein::v1::DecideRequest DecideRequest() {
  rein::v1::DecideRequest r;
  r.set_run_id("run1");
  r.set_goal("Count the lines of README.md");
  r.mutable_subtask()->set_id("p1-read");
  r.mutable_subtask()->set_description("Read README.md");
  *r.add_tools() = Tool("read_file");
  r.set_iteration(2);
  return r;
}

rein::v1::EvaluateRequest EvaluateRequest() {
  rein::v1::EvaluateRequest r;
  r.set_run_id("run1");
  r.set_goal("Count the lines of README.md");
  r.mutable_subtask()->set_id("p1-read");
  r.mutable_subtask()->set_description("Read README.md");
  r.mutable_action()->set_tool("read_file");
  r.mutable_action()->set_args_json(R"({"path":"README.md"})");
  r.mutable_action()->set_ok(true);
  r.set_observation("line one\nline two\n");
  r.set_iteration(3);
  return r;
}

// The whole first user message: its run-constant block and its per-call block.
std::string UserText(const json& body) {
  std::string text;
  for (const json& block : body["messages"][0]["content"]) text += block["text"].get<std::string>();
  return text;
}

class AnthropicBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(server_.Start().ok());
    UseOptions(AnthropicBackendOptions{});
  }

  // Replaces the backend by one with `options` (and the same fake API).
  void UseOptions(AnthropicBackendOptions options) {
    AnthropicClientOptions client_options;
    client_options.base_url = server_.base_url();
    client_options.api_key = kKey;
    client_options.jitter = [] { return 1.0; };
    auto client = AnthropicClient::Create(client_options, &clock_);
    ASSERT_TRUE(client.ok()) << client.status();
    auto prompts =
        StagePrompts::Load(absl::StrCat(getenv("TEST_SRCDIR"), "/rein/planner_service/prompts"));
    ASSERT_TRUE(prompts.ok()) << prompts.status();
    backend_ = std::make_unique<AnthropicBackend>(std::move(options), *std::move(client),
                                                  *std::move(prompts));
  }

  json SentBody(size_t i) {
    std::vector<FakeRequest> requests = server_.requests();
    EXPECT_GT(requests.size(), i);
    if (requests.size() <= i) return json();
    EXPECT_EQ(requests[i].problem, "");
    return json::parse(requests[i].body);
  }

  FakeMessagesServer server_{kKey};
  FakeClock clock_;
  std::unique_ptr<AnthropicBackend> backend_;
};

const json kPlan = {
    {"reasoning", "read it first"},
    {"subtasks",
     {{{"id", "p1-read"}, {"description", "Read README.md"}, {"allowed_tools", {"read_file"}}},
      {{"id", "p1-count"}, {"description", "Count"}, {"allowed_tools", json::array()}}}},
    {"goal_achieved", false}};

// The replies of the prompt-cache tests: read a file; the subtask needs more work.
const json kReadDecision = {{"reasoning", "read"},
                            {"tool_call", {{"tool", "read_file"}, {"args", {{"path", "a.txt"}}}}}};
const json kNeedsMoreWork = {{"reasoning", "ok"},
                             {"status", "NEEDS_MORE_WORK"},
                             {"summary", "more"},
                             {"goal_achieved", false}};

// At least 80% of the request's run-constant prefix was read from the prompt cache.
void ExpectPrefixMostlyRead(const FakeRequest& r) {
  EXPECT_GE(r.cache_read_input_tokens * 10, r.prefix_tokens * 8)
      << r.cache_read_input_tokens << " of " << r.prefix_tokens << " prefix tokens read";
}

// Plan through the backend inside a chat span of a tracer whose capture is `capture`; returns
// the span as ended.
trace::SpanData PlanInChatSpan(AnthropicBackend& backend, FakeMessagesServer& server,
                               bool capture) {
  trace::testing::RecordingExporter exporter;
  trace::Tracer::Options options;
  options.capture_content = capture;
  // The backend reads the process's tracer's options; the span is this test's.
  trace::Tracer::InstallGlobal(std::make_unique<trace::Tracer>(&exporter, options));
  server.Enqueue(ToolUseReply("submit_plan", kPlan));
  {
    trace::Span chat =
        trace::Tracer::Global().StartSpan("chat", trace::SpanContext(), trace::SpanKind::kClient);
    trace::ScopedSpan scope(&chat);
    absl::StatusOr<rein::v1::PlanResponse> plan =
        backend.Plan(PlanRequest(), absl::InfiniteFuture());
    EXPECT_TRUE(plan.ok()) << plan.status();
  }
  trace::Tracer::InstallGlobal(std::make_unique<trace::Tracer>());
  EXPECT_EQ(exporter.spans.size(), 1u);
  return exporter.spans.empty() ? trace::SpanData() : exporter.spans[0];
}

std::string Attribute(const trace::SpanData& span, const std::string& key) {
  for (const auto& [k, v] : span.attributes) {
    if (k == key && std::holds_alternative<std::string>(v)) return std::get<std::string>(v);
  }
  return "";
}

TEST_F(AnthropicBackendTest, ContentIsOnTheChatSpanOnlyWhenCaptureIsOnAndNeverTheKey) {
  const trace::SpanData off = PlanInChatSpan(*backend_, server_, /*capture=*/false);
  EXPECT_EQ(Attribute(off, "gen_ai.input.messages"), "");
  EXPECT_EQ(Attribute(off, "gen_ai.output.messages"), "");
  EXPECT_EQ(Attribute(off, "gen_ai.system_instructions"), "");

  const trace::SpanData on = PlanInChatSpan(*backend_, server_, /*capture=*/true);
  const json input = json::parse(Attribute(on, "gen_ai.input.messages"));
  ASSERT_EQ(input.size(), 1u);
  EXPECT_EQ(input[0]["role"], "user");
  EXPECT_THAT(input.dump(), HasSubstr("Count the lines of README.md"));  // the goal
  const json output = json::parse(Attribute(on, "gen_ai.output.messages"));
  ASSERT_EQ(output.size(), 1u);
  EXPECT_EQ(output[0]["role"], "assistant");
  EXPECT_EQ(output[0]["finish_reason"], "tool_use");
  EXPECT_EQ(output[0]["parts"][0]["type"], "tool_call");
  EXPECT_EQ(output[0]["parts"][0]["name"], "submit_plan");
  EXPECT_EQ(output[0]["parts"][0]["arguments"]["subtasks"][0]["id"], "p1-read");
  EXPECT_FALSE(json::parse(Attribute(on, "gen_ai.system_instructions")).empty());
  for (const auto& [key, value] : on.attributes) {
    if (std::holds_alternative<std::string>(value)) {
      EXPECT_THAT(std::get<std::string>(value), Not(HasSubstr(kKey))) << key;
    }
  }
}

TEST_F(AnthropicBackendTest, FullRunThroughPlanDecideAndEvaluate) {
  server_.Enqueue(ToolUseReply("submit_plan", kPlan));
  server_.Enqueue(
      ToolUseReply("submit_decision",
                   {{"reasoning", "read"},
                    {"tool_call", {{"tool", "read_file"}, {"args", {{"path", "README.md"}}}}}}));
  server_.Enqueue(ToolUseReply("submit_evaluation", {{"reasoning", "two lines shown"},
                                                     {"status", "COMPLETED"},
                                                     {"summary", "README.md has 2 lines"},
                                                     {"goal_achieved", true}}));

  absl::StatusOr<rein::v1::PlanResponse> plan =
      backend_->Plan(PlanRequest(), absl::InfiniteFuture());
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->subtasks_size(), 2);
  EXPECT_EQ(plan->subtasks(0).id(), "p1-read");
  EXPECT_EQ(plan->subtasks(0).allowed_tools(0), "read_file");
  EXPECT_EQ(plan->subtasks(1).allowed_tools_size(), 0);
  EXPECT_FALSE(plan->goal_achieved());
  EXPECT_EQ(plan->backend(), "anthropic:claude-sonnet-5");
  EXPECT_EQ(plan->usage().input_tokens(), 120);
  EXPECT_EQ(plan->usage().output_tokens(), 40);
  EXPECT_EQ(plan->usage().cache_read_input_tokens(), 90);
  EXPECT_EQ(plan->usage().cache_creation_input_tokens(), 10);

  absl::StatusOr<rein::v1::DecideResponse> decision =
      backend_->Decide(DecideRequest(), absl::InfiniteFuture());
  ASSERT_TRUE(decision.ok()) << decision.status();
  ASSERT_TRUE(decision->has_tool_call());
  EXPECT_EQ(decision->tool_call().tool(), "read_file");
  EXPECT_EQ(decision->tool_call().args_json(), R"({"path":"README.md"})");

  absl::StatusOr<rein::v1::EvaluateResponse> verdict =
      backend_->Evaluate(EvaluateRequest(), absl::InfiniteFuture());
  ASSERT_TRUE(verdict.ok()) << verdict.status();
  EXPECT_EQ(verdict->status(), rein::v1::RunEvent::Evaluation::COMPLETED);
  EXPECT_EQ(verdict->summary(), "README.md has 2 lines");
  EXPECT_TRUE(verdict->goal_achieved());
  EXPECT_EQ(verdict->usage().input_tokens(), 120);

  const json body = SentBody(0);
  EXPECT_EQ(body["model"], "claude-sonnet-5");
  EXPECT_EQ(body["max_tokens"], 4096);
  EXPECT_FALSE(body.contains("temperature"));
  EXPECT_EQ(body["system"][0]["type"], "text");
  EXPECT_EQ(body["system"][0]["cache_control"], json({{"type", "ephemeral"}}));
  EXPECT_THAT(body["system"][0]["text"].get<std::string>(), HasSubstr("planner"));
  // The three stage tools, the same for every call of the run; the breakpoint after the last.
  ASSERT_EQ(body["tools"].size(), 3u);
  EXPECT_EQ(body["tools"][0]["name"], "submit_plan");
  EXPECT_EQ(body["tools"][1]["name"], "submit_decision");
  EXPECT_EQ(body["tools"][2]["name"], "submit_evaluation");
  EXPECT_FALSE(body["tools"][0].contains("cache_control"));
  EXPECT_EQ(body["tools"][2]["cache_control"], json({{"type", "ephemeral"}}));
  EXPECT_EQ(body["tools"][0]["input_schema"]["properties"]["subtasks"]["items"]["properties"]
                ["allowed_tools"]["items"]["enum"],
            json({"read_file", "write_file"}));
  EXPECT_EQ(body["tool_choice"],
            json({{"type", "tool"}, {"name", "submit_plan"}, {"disable_parallel_tool_use", true}}));
  ASSERT_EQ(body["messages"].size(), 1u);
  EXPECT_EQ(body["messages"][0]["role"], "user");
  const std::string user = UserText(body);
  EXPECT_THAT(user, HasSubstr("Count the lines of README.md"));
  EXPECT_THAT(user, Not(HasSubstr("{{")));
  EXPECT_EQ(SentBody(1)["tool_choice"]["name"], "submit_decision");
  EXPECT_EQ(
      SentBody(
          1)["tools"][1]["input_schema"]["properties"]["tool_call"]["properties"]["tool"]["enum"],
      json({"read_file"}));
  // Every stage sends the same system prompt (part of the prefix they share in the cache).
  EXPECT_EQ(SentBody(0)["system"], SentBody(1)["system"]);
  EXPECT_EQ(SentBody(0)["system"], SentBody(2)["system"]);
  EXPECT_EQ(SentBody(2)["tool_choice"]["name"], "submit_evaluation");
}

TEST_F(AnthropicBackendTest, ModelOptionsOverrideModelMaxTokensAndSendTemperature) {
  server_.Enqueue(ToolUseReply("submit_plan", kPlan));
  rein::v1::PlanRequest request = PlanRequest();
  request.mutable_model()->set_model("claude-opus-4-1");
  request.mutable_model()->set_max_tokens(777);
  request.mutable_model()->set_temperature(0.25);
  absl::StatusOr<rein::v1::PlanResponse> plan = backend_->Plan(request, absl::InfiniteFuture());
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->backend(), "anthropic:claude-opus-4-1");
  const json body = SentBody(0);
  EXPECT_EQ(body["model"], "claude-opus-4-1");
  EXPECT_EQ(body["max_tokens"], 777);
  EXPECT_EQ(body["temperature"], 0.25);
}

TEST_F(AnthropicBackendTest, BadModelOptionsAreInvalidArgumentWithoutARequest) {
  rein::v1::PlanRequest request = PlanRequest();
  request.mutable_model()->set_temperature(1.5);
  EXPECT_EQ(backend_->Plan(request, absl::InfiniteFuture()).status().code(),
            absl::StatusCode::kInvalidArgument);
  request = PlanRequest();
  request.mutable_model()->set_max_tokens(-1);
  EXPECT_EQ(backend_->Plan(request, absl::InfiniteFuture()).status().message(),
            "model.max_tokens: -1 is negative");
  EXPECT_TRUE(server_.requests().empty());
}

TEST_F(AnthropicBackendTest, TextReplyWithJsonInProseAndFencesIsAccepted) {
  server_.Enqueue(
      TextReply("Sure {thinking}. Here is my verdict:\n```json\n"
                R"({"reasoning": "braces } in \"strings\" are fine", "status": "NEEDS_MORE_WORK",)"
                R"( "summary": "read half", "goal_achieved": false})"
                "\n```\nHope that helps."));
  absl::StatusOr<rein::v1::EvaluateResponse> verdict =
      backend_->Evaluate(EvaluateRequest(), absl::InfiniteFuture());
  ASSERT_TRUE(verdict.ok()) << verdict.status();
  EXPECT_EQ(verdict->status(), rein::v1::RunEvent::Evaluation::NEEDS_MORE_WORK);
  EXPECT_EQ(verdict->reasoning(), "braces } in \"strings\" are fine");
  EXPECT_EQ(verdict->summary(), "read half");
}

TEST_F(AnthropicBackendTest, InvalidJsonIsInvalidOutput) {
  server_.Enqueue(TextReply(R"(```json
{"reasoning": "x", "status": "COMPLETED", "summary": oops}
```)"));
  absl::StatusOr<rein::v1::EvaluateResponse> verdict =
      backend_->Evaluate(EvaluateRequest(), absl::InfiniteFuture());
  EXPECT_EQ(verdict.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(std::string(verdict.status().message()),
              HasSubstr("invalid output: the reply has no submit_evaluation call and no JSON "
                        "object in its text"));
}

TEST_F(AnthropicBackendTest, SchemaViolationIsInvalidOutputNamingTheField) {
  server_.Enqueue(ToolUseReply(
      "submit_evaluation",
      {{"reasoning", "r"}, {"status", "DONE"}, {"summary", "s"}, {"goal_achieved", false}}));
  absl::StatusOr<rein::v1::EvaluateResponse> verdict =
      backend_->Evaluate(EvaluateRequest(), absl::InfiniteFuture());
  EXPECT_EQ(verdict.status().code(), absl::StatusCode::kInternal);
  EXPECT_EQ(verdict.status().message(),
            "invalid output: status: \"DONE\" is not one of: COMPLETED, FAILED, NEEDS_MORE_WORK");
}

TEST_F(AnthropicBackendTest, DecisionNamingAToolOutsideTheSubtasksListIsInvalidOutput) {
  server_.Enqueue(ToolUseReply(
      "submit_decision",
      {{"reasoning", "r"}, {"tool_call", {{"tool", "run_command"}, {"args", {{"cmd", "rm"}}}}}}));
  absl::StatusOr<rein::v1::DecideResponse> decision =
      backend_->Decide(DecideRequest(), absl::InfiniteFuture());
  EXPECT_EQ(decision.status().code(), absl::StatusCode::kInternal);
  EXPECT_EQ(decision.status().message(),
            "invalid output: tool_call.tool: \"run_command\" is not one of: read_file");
}

TEST_F(AnthropicBackendTest, DecisionAskingAPersonIsAHumanQuery) {
  server_.Enqueue(ToolUseReply(
      "submit_decision",
      {{"reasoning", "unsure"}, {"tool_call", nullptr}, {"human_query", "Which README?"}}));
  absl::StatusOr<rein::v1::DecideResponse> decision =
      backend_->Decide(DecideRequest(), absl::InfiniteFuture());
  ASSERT_TRUE(decision.ok()) << decision.status();
  EXPECT_EQ(decision->human_query(), "Which README?");
}

TEST_F(AnthropicBackendTest, DuplicateSubtaskIdsAreInvalidOutput) {
  json plan = kPlan;
  plan["subtasks"][1]["id"] = "p1-read";
  server_.Enqueue(ToolUseReply("submit_plan", plan));
  absl::StatusOr<rein::v1::PlanResponse> reply =
      backend_->Plan(PlanRequest(), absl::InfiniteFuture());
  EXPECT_EQ(reply.status().code(), absl::StatusCode::kInternal);
  EXPECT_EQ(reply.status().message(), "invalid output: subtasks[1].id: \"p1-read\" is used twice");
}

TEST_F(AnthropicBackendTest, MaxTokensStopIsInvalidOutput) {
  server_.Enqueue(TextReply(R"({"reasoning": "I was about to)", "max_tokens"));
  absl::StatusOr<rein::v1::PlanResponse> reply =
      backend_->Plan(PlanRequest(), absl::InfiniteFuture());
  EXPECT_EQ(reply.status().code(), absl::StatusCode::kInternal);
  EXPECT_EQ(reply.status().message(),
            "invalid output: the reply was cut off at max_tokens (4096); raise model.max_tokens");
}

TEST_F(AnthropicBackendTest, RefusalStopReturnsTheModelsWords) {
  server_.Enqueue(TextReply("I can't help with that.", "refusal"));
  absl::StatusOr<rein::v1::DecideResponse> decision =
      backend_->Decide(DecideRequest(), absl::InfiniteFuture());
  ASSERT_TRUE(decision.ok()) << decision.status();
  EXPECT_EQ(decision->refusal(), "I can't help with that.");
  EXPECT_FALSE(decision->has_tool_call());
  EXPECT_EQ(decision->usage().output_tokens(), 40);
  EXPECT_EQ(decision->backend(), "anthropic:claude-sonnet-5");
}

TEST_F(AnthropicBackendTest, RefusalOfAForcedToolCallCarriesTheApisExplanation) {
  // A refusal cuts the forced call short: no text, a partial tool_use, and stop_details.
  FakeReply refused = ToolUseReply("submit_decision", json::object(), "refusal");
  json body = json::parse(refused.body);
  body["stop_details"] = {{"type", "refusal"},
                          {"category", "cyber"},
                          {"explanation",
                           "This request was declined because it could enable "
                           "cyber harm."}};
  refused.body = body.dump();
  server_.Enqueue(refused);
  absl::StatusOr<rein::v1::DecideResponse> decision =
      backend_->Decide(DecideRequest(), absl::InfiniteFuture());
  ASSERT_TRUE(decision.ok()) << decision.status();
  EXPECT_EQ(decision->refusal(),
            "declined (cyber): This request was declined because it could enable cyber harm.");

  FakeReply with_text = TextReply("Hello..", "refusal");
  body = json::parse(with_text.body);
  body["stop_details"] = {{"type", "refusal"}, {"category", nullptr}, {"explanation", nullptr}};
  with_text.body = body.dump();
  server_.Enqueue(with_text);
  decision = backend_->Decide(DecideRequest(), absl::InfiniteFuture());
  ASSERT_TRUE(decision.ok()) << decision.status();
  EXPECT_EQ(decision->refusal(), "Hello..");
}

TEST_F(AnthropicBackendTest, PauseTurnSendsTheContentBackOnceAndSumsUsage) {
  server_.Enqueue(TextReply("Let me think...", "pause_turn"));
  server_.Enqueue(ToolUseReply("submit_plan", kPlan));
  absl::StatusOr<rein::v1::PlanResponse> plan =
      backend_->Plan(PlanRequest(), absl::InfiniteFuture());
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->usage().input_tokens(), 240);
  const json second = SentBody(1);
  ASSERT_EQ(second["messages"].size(), 2u);
  EXPECT_EQ(second["messages"][1]["role"], "assistant");
  EXPECT_EQ(second["messages"][1]["content"][0]["text"], "Let me think...");
}

TEST_F(AnthropicBackendTest, PauseTurnTwiceIsInvalidOutput) {
  server_.Enqueue(TextReply("a", "pause_turn"));
  server_.Enqueue(TextReply("b", "pause_turn"));
  absl::StatusOr<rein::v1::PlanResponse> plan =
      backend_->Plan(PlanRequest(), absl::InfiniteFuture());
  EXPECT_EQ(plan.status().message(),
            "invalid output: the model paused its turn twice (stop_reason pause_turn)");
  EXPECT_EQ(server_.requests().size(), 2u);
}

TEST_F(AnthropicBackendTest, WrongToolCalledIsInvalidOutput) {
  server_.Enqueue(ToolUseReply("submit_plan", kPlan));
  absl::StatusOr<rein::v1::EvaluateResponse> verdict =
      backend_->Evaluate(EvaluateRequest(), absl::InfiniteFuture());
  EXPECT_EQ(verdict.status().message(),
            "invalid output: the model called \"submit_plan\" instead of submit_evaluation");
}

TEST_F(AnthropicBackendTest, ApiErrorsAreOneRequestWithTheMappedCode) {
  server_.Enqueue(ErrorReply(400, "invalid_request_error", "model: unknown model"));
  absl::StatusOr<rein::v1::PlanResponse> plan =
      backend_->Plan(PlanRequest(), absl::InfiniteFuture());
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(plan.status().message()), HasSubstr("model: unknown model"));
  EXPECT_EQ(server_.requests().size(), 1u);
  server_.Enqueue(ErrorReply(401, "authentication_error", "invalid x-api-key"));
  plan = backend_->Plan(PlanRequest(), absl::InfiniteFuture());
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(server_.requests().size(), 2u);
}

TEST_F(AnthropicBackendTest, PromptAtIterationFiftyIsAtMostOneAndAHalfTimesIterationTwo) {
  // Iteration 2: one ended subtask, a fresh observation, one answer from a person.
  rein::v1::PlanRequest early = PlanRequest();
  early.set_iteration(2);
  rein::v1::SubTask* done = early.add_completed();
  done->set_id("p0-look");
  done->set_description("Read README.md and note its sections");
  done->set_status(rein::v1::SubTask::COMPLETED);
  done->set_summary("README.md has 40 lines in 3 sections: intro, build, usage.");
  early.set_latest_observation(std::string(1500, 'o'));
  rein::v1::HumanInput* answer = early.add_human_inputs();
  answer->set_kind(rein::v1::HumanInput::ANSWER);
  answer->set_question("Which file?");
  answer->set_text("README.md at the root");
  // Iteration 50: 48 ended subtasks with long texts, a huge observation, many inputs.
  rein::v1::PlanRequest late = PlanRequest();
  late.set_iteration(50);
  for (int i = 0; i < 48; ++i) {
    rein::v1::SubTask* task = late.add_completed();
    task->set_id(absl::StrCat("p", i, "-step"));
    task->set_description(std::string(1000, 'd'));
    task->set_status(i % 2 ? rein::v1::SubTask::COMPLETED : rein::v1::SubTask::FAILED);
    task->set_summary(std::string(3000, 's'));
  }
  late.set_latest_observation(std::string(8192, 'o'));
  for (int i = 0; i < 20; ++i) {
    rein::v1::HumanInput* input = late.add_human_inputs();
    input->set_kind(rein::v1::HumanInput::FEEDBACK);
    input->set_text(std::string(4000, 'h'));
  }
  late.set_replan_reason(std::string(4000, 'r'));
  server_.Enqueue(ToolUseReply("submit_plan", kPlan));
  server_.Enqueue(ToolUseReply("submit_plan", kPlan));
  ASSERT_TRUE(backend_->Plan(early, absl::InfiniteFuture()).ok());
  ASSERT_TRUE(backend_->Plan(late, absl::InfiniteFuture()).ok());
  const size_t early_size = server_.requests()[0].body.size();
  const size_t late_size = server_.requests()[1].body.size();
  EXPECT_LE(late_size * 2, early_size * 3) << early_size << " -> " << late_size;
}

TEST_F(AnthropicBackendTest, DecidePromptShowsOnlyTheLastThreeActions) {
  rein::v1::DecideRequest early = DecideRequest();
  rein::v1::Action* first = early.add_recent_actions();
  first->set_tool("read_file");
  first->set_args_json(R"({"path":"README.md"})");
  first->set_ok(true);
  first->set_observation(std::string(8192, 'o'));  // read_file output, as the router caps it
  rein::v1::DecideRequest late = DecideRequest();
  late.set_iteration(50);
  for (int i = 0; i < 20; ++i) {
    rein::v1::Action* a = late.add_recent_actions();
    a->set_iteration(30 + i);
    a->set_tool("read_file");
    a->set_args_json(absl::StrCat(R"({"path":")", std::string(2000, 'p'), i, R"("})"));
    a->set_ok(false);
    a->set_error(std::string(2000, 'e'));
    a->set_observation(absl::StrCat("observation number ", i, std::string(8000, 'o')));
  }
  server_.Enqueue(ToolUseReply("submit_decision", {{"reasoning", "r"}, {"human_query", "?"}}));
  server_.Enqueue(ToolUseReply("submit_decision", {{"reasoning", "r"}, {"human_query", "?"}}));
  ASSERT_TRUE(backend_->Decide(early, absl::InfiniteFuture()).ok());
  ASSERT_TRUE(backend_->Decide(late, absl::InfiniteFuture()).ok());
  const std::string user = UserText(SentBody(1));
  // The three newest actions, and only the newest one's observation.
  EXPECT_THAT(user, HasSubstr("observation number 19"));
  EXPECT_THAT(user, HasSubstr("(iteration 47,"));
  EXPECT_THAT(user, Not(HasSubstr("(iteration 46,")));
  EXPECT_THAT(user, Not(HasSubstr("observation number 18")));
  EXPECT_LE(server_.requests()[1].body.size() * 2, server_.requests()[0].body.size() * 3);
}

TEST_F(AnthropicBackendTest, EvaluatePromptNeverShowsEarlierSubtasks) {
  server_.Enqueue(ToolUseReply(
      "submit_evaluation",
      {{"reasoning", "r"}, {"status", "FAILED"}, {"summary", "s"}, {"goal_achieved", false}}));
  rein::v1::EvaluateRequest request = EvaluateRequest();
  request.mutable_subtask()->set_summary("EARLIER SUCCESS");
  ASSERT_TRUE(backend_->Evaluate(request, absl::InfiniteFuture()).ok());
  const std::string user = UserText(SentBody(0));
  EXPECT_THAT(user, Not(HasSubstr("EARLIER SUCCESS")));
  EXPECT_THAT(user, HasSubstr("line two"));
}

TEST_F(AnthropicBackendTest, GoalThatLooksLikeAPlaceholderIsNeutralized) {
  server_.Enqueue(ToolUseReply("submit_plan", kPlan));
  rein::v1::PlanRequest request = PlanRequest();
  request.set_goal("Fill the {{goal_text}} template and {{{x}}}");
  ASSERT_TRUE(backend_->Plan(request, absl::InfiniteFuture()).ok());
  const std::string user = UserText(SentBody(0));
  EXPECT_THAT(user, HasSubstr("Fill the { {goal_text}} template"));
  EXPECT_THAT(user, Not(HasSubstr("{{")));
}

TEST_F(AnthropicBackendTest, KeyNeverAppearsInLogsOrErrors) {
  ::testing::internal::CaptureStderr();
  std::vector<std::string> messages;
  for (int i = 0; i < 3; ++i) server_.Enqueue(ErrorReply(529, "overloaded_error", kKey));
  messages.push_back(
      std::string(backend_->Plan(PlanRequest(), absl::InfiniteFuture()).status().message()));
  server_.Enqueue(ErrorReply(401, "authentication_error", absl::StrCat("bad key ", kKey)));
  messages.push_back(
      std::string(backend_->Decide(DecideRequest(), absl::InfiniteFuture()).status().message()));
  FakeReply closed;
  closed.close_without_reply = true;
  for (int i = 0; i < 3; ++i) server_.Enqueue(closed);
  messages.push_back(std::string(
      backend_->Evaluate(EvaluateRequest(), absl::InfiniteFuture()).status().message()));
  server_.Enqueue(TextReply(absl::StrCat("my key is ", kKey), "refusal"));
  absl::StatusOr<rein::v1::PlanResponse> refused =
      backend_->Plan(PlanRequest(), absl::InfiniteFuture());
  const std::string logs = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(logs, HasSubstr("retrying"));
  EXPECT_THAT(logs, Not(HasSubstr(kKey)));
  for (const std::string& m : messages) {
    EXPECT_FALSE(m.empty());
    EXPECT_THAT(m, Not(HasSubstr(kKey)));
  }
  // A key the model repeats is its own words, not ours; but no request or reply of ours
  // other than the x-api-key header carries the key.
  for (const FakeRequest& r : server_.requests()) {
    EXPECT_THAT(r.body, Not(HasSubstr(kKey)));
    for (const auto& [name, value] : r.headers) {
      if (name != "x-api-key") {
        EXPECT_THAT(value, Not(HasSubstr(kKey))) << name;
      }
    }
  }
}

// Each stage's run-constant prefix (its tool, the system prompt, the goal and the run's tools)
// ends at a cache breakpoint: with the cache minimum lowered to what these small prompts reach,
// every call after the first of each stage reads at least 80% of that prefix from the cache.
TEST_F(AnthropicBackendTest, RunConstantPrefixIsReadFromThePromptCacheFromTheSecondCallOn) {
  server_.SimulatePromptCache(/*min_cacheable_tokens=*/256);
  rein::v1::PlanRequest plan = PlanRequest();
  rein::v1::DecideRequest decide = DecideRequest();
  for (const char* name : {"list_files", "search_text", "file_info"}) {
    *decide.add_run_tools() = Tool(name);
  }
  *decide.add_run_tools() = Tool("read_file");
  rein::v1::EvaluateRequest evaluate = EvaluateRequest();
  for (int i = 0; i < 4; ++i) {
    server_.Enqueue(ToolUseReply("submit_plan", kPlan));
    server_.Enqueue(ToolUseReply("submit_decision", kReadDecision));
    server_.Enqueue(ToolUseReply("submit_evaluation", kNeedsMoreWork));
    // What changes from call to call: the iteration, the actions, the observation.
    plan.set_iteration(1 + 3 * i);
    plan.set_latest_observation(absl::StrCat("observation ", i, std::string(200 * i, 'x')));
    decide.set_iteration(2 + 3 * i);
    rein::v1::Action* action = decide.add_recent_actions();
    action->set_tool("read_file");
    action->set_args_json(absl::StrCat(R"({"path":"file)", i, R"(.txt"})"));
    action->set_ok(true);
    action->set_observation(std::string(300, 'a' + i));
    evaluate.set_iteration(3 + 3 * i);
    evaluate.set_observation(absl::StrCat("lines of file ", i, std::string(500, 'o')));
    ASSERT_TRUE(backend_->Plan(plan, absl::InfiniteFuture()).ok());
    absl::StatusOr<rein::v1::DecideResponse> d = backend_->Decide(decide, absl::InfiniteFuture());
    ASSERT_TRUE(d.ok()) << d.status();
    absl::StatusOr<rein::v1::EvaluateResponse> e =
        backend_->Evaluate(evaluate, absl::InfiniteFuture());
    ASSERT_TRUE(e.ok()) << e.status();
    // The backend reports the usage the API answered, cache figures included.
    EXPECT_EQ(d->usage().cache_read_input_tokens(),
              server_.requests()[3 * i + 1].cache_read_input_tokens);
    EXPECT_EQ(d->usage().cache_creation_input_tokens(),
              server_.requests()[3 * i + 1].cache_creation_input_tokens);
  }
  const std::vector<FakeRequest> requests = server_.requests();
  ASSERT_EQ(requests.size(), 12u);
  for (size_t i = 0; i < requests.size(); ++i) {
    const FakeRequest& r = requests[i];
    SCOPED_TRACE(absl::StrCat("request ", i, " (",
                              json::parse(r.body)["tool_choice"]["name"].get<std::string>(), ")"));
    ASSERT_EQ(r.problem, "");
    std::cerr << "request " << i << ": prefix " << r.prefix_tokens << " tokens, read "
              << r.cache_read_input_tokens << ", written " << r.cache_creation_input_tokens
              << ", uncached " << r.input_tokens << "\n";
    EXPECT_GE(r.prefix_tokens, 256) << "the run-constant prefix should reach the lowered minimum";
    if (i < 3) {
      EXPECT_EQ(r.cache_read_input_tokens, 0);
      EXPECT_GT(r.cache_creation_input_tokens, 0) << "the first call of each stage writes it";
    } else {
      ExpectPrefixMostlyRead(r);
    }
  }
}

// With the API's real minimum (1,024 tokens for most models) and the smallest run there is (a
// short goal, one tool with a one-field schema), the prefix the three stages share (their tools
// and the system prompt) is cacheable by itself: the first call of the run writes it, every
// later call of any stage reads it, and from the second call of each stage on at least 80% of
// the prefix up to the stage's context is read from the cache.
TEST_F(AnthropicBackendTest, SmallestRunIsCachedAtTheRealMinimum) {
  server_.SimulatePromptCache(/*min_cacheable_tokens=*/1024);
  const rein::v1::ToolSpec read_file = Tool("read_file");
  rein::v1::PlanRequest plan = PlanRequest();
  plan.set_goal("Count the lines");
  plan.clear_tools();
  *plan.add_tools() = read_file;
  rein::v1::DecideRequest decide = DecideRequest();
  decide.set_goal(plan.goal());
  *decide.add_run_tools() = read_file;
  rein::v1::EvaluateRequest evaluate = EvaluateRequest();
  evaluate.set_goal(plan.goal());
  *evaluate.add_run_tools() = read_file;
  for (int i = 0; i < 3; ++i) {
    server_.Enqueue(ToolUseReply("submit_plan", kPlan));
    server_.Enqueue(ToolUseReply("submit_decision", kReadDecision));
    server_.Enqueue(ToolUseReply("submit_evaluation", kNeedsMoreWork));
    plan.set_iteration(1 + 3 * i);
    plan.set_latest_observation(absl::StrCat("observation ", i));
    decide.set_iteration(2 + 3 * i);
    evaluate.set_iteration(3 + 3 * i);
    evaluate.set_observation(absl::StrCat("line ", i));
    ASSERT_TRUE(backend_->Plan(plan, absl::InfiniteFuture()).ok());
    ASSERT_TRUE(backend_->Decide(decide, absl::InfiniteFuture()).ok());
    ASSERT_TRUE(backend_->Evaluate(evaluate, absl::InfiniteFuture()).ok());
  }
  const std::vector<FakeRequest> requests = server_.requests();
  ASSERT_EQ(requests.size(), 9u);
  for (size_t i = 0; i < requests.size(); ++i) {
    const FakeRequest& r = requests[i];
    SCOPED_TRACE(absl::StrCat("request ", i));
    ASSERT_EQ(r.problem, "");
    std::cerr << "request " << i << ": prefix " << r.prefix_tokens << " tokens, read "
              << r.cache_read_input_tokens << ", written " << r.cache_creation_input_tokens
              << ", uncached " << r.input_tokens << "\n";
    if (i == 0) {
      EXPECT_EQ(r.cache_read_input_tokens, 0);
      EXPECT_EQ(r.cache_creation_input_tokens, r.prefix_tokens);
    } else {
      EXPECT_GE(r.cache_read_input_tokens, 1024) << "the shared tools and system prompt";
    }
    if (i >= 3) ExpectPrefixMostlyRead(r);
  }
}

// The layout is compact exactly from an estimated prefix of 1.25 times the cache minimum: with
// a minimum of 100 tokens, a tool of 1 token ("{}") and an empty system block (25 bytes, 7
// tokens), a context of 440 bytes (465 bytes as a block, 117 tokens) makes 125 tokens, one
// byte less 124.
TEST(ChooseLayoutTest, CompactFromOneAndAQuarterTimesTheCacheMinimum) {
  EXPECT_EQ(ChooseLayout(json::object(), "", std::string(440, 'x'), 100), PromptLayout::kCompact);
  EXPECT_EQ(ChooseLayout(json::object(), "", std::string(439, 'x'), 100), PromptLayout::kShared);
  EXPECT_EQ(ChooseLayout(json::object(), "", std::string(440, 'x'), 101), PromptLayout::kShared);
}

TEST(ChooseLayoutTest, CacheMinimumFollowsTheModel) {
  EXPECT_EQ(MinCacheableTokens("claude-sonnet-5"), 1024);
  EXPECT_EQ(MinCacheableTokens("claude-sonnet-4-5"), 1024);
  EXPECT_EQ(MinCacheableTokens("claude-haiku-4-5"), 4096);
  EXPECT_EQ(MinCacheableTokens("claude-3-haiku-20240307"), 2048);
  EXPECT_EQ(MinCacheableTokens("claude-3-5-haiku-latest"), 2048);
  EXPECT_EQ(MinCacheableTokens("claude-haiku-3-5"), 2048);
  EXPECT_EQ(MinCacheableTokens("claude-opus-4-6"), 4096);
}

// When the backend knows the lowered minimum, each stage's prefix (its own tool, its own system
// section and the run's context) is big enough alone: every request sends only its stage's
// tool, the first of each stage writes the prefix and every later one reads >= 80% of it.
TEST_F(AnthropicBackendTest, CompactLayoutSendsOneToolAndIsReadFromTheSecondCallOfEachStage) {
  server_.SimulatePromptCache(/*min_cacheable_tokens=*/256);
  AnthropicBackendOptions options;
  options.min_cacheable_tokens = 256;
  UseOptions(options);
  rein::v1::PlanRequest plan = PlanRequest();
  rein::v1::DecideRequest decide = DecideRequest();
  *decide.add_run_tools() = Tool("read_file");
  *decide.add_run_tools() = Tool("list_files");
  rein::v1::EvaluateRequest evaluate = EvaluateRequest();
  *evaluate.mutable_run_tools() = decide.run_tools();
  for (int i = 0; i < 3; ++i) {
    server_.Enqueue(ToolUseReply("submit_plan", kPlan));
    server_.Enqueue(ToolUseReply("submit_decision", kReadDecision));
    server_.Enqueue(ToolUseReply("submit_evaluation", kNeedsMoreWork));
    plan.set_iteration(1 + 3 * i);
    decide.set_iteration(2 + 3 * i);
    evaluate.set_iteration(3 + 3 * i);
    evaluate.set_observation(absl::StrCat("lines of file ", i, std::string(100 * i, 'o')));
    ASSERT_TRUE(backend_->Plan(plan, absl::InfiniteFuture()).ok());
    ASSERT_TRUE(backend_->Decide(decide, absl::InfiniteFuture()).ok());
    ASSERT_TRUE(backend_->Evaluate(evaluate, absl::InfiniteFuture()).ok());
  }
  const std::vector<FakeRequest> requests = server_.requests();
  ASSERT_EQ(requests.size(), 9u);
  for (size_t i = 0; i < requests.size(); ++i) {
    const FakeRequest& r = requests[i];
    const json body = json::parse(r.body);
    const std::string stage = body["tool_choice"]["name"];
    SCOPED_TRACE(absl::StrCat("request ", i, " (", stage, ")"));
    ASSERT_EQ(body["tools"].size(), 1u);
    EXPECT_EQ(body["tools"][0]["name"], stage);
    EXPECT_THAT(body["system"][0]["text"].get<std::string>(), Not(HasSubstr("## When asked")));
    if (i < 3) {
      EXPECT_EQ(r.cache_read_input_tokens, 0);
      EXPECT_GE(r.cache_creation_input_tokens, 256);
    } else {
      ExpectPrefixMostlyRead(r);
    }
  }
}

}  // namespace
}  // namespace rein
