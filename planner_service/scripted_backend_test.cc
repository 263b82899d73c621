// Tests of ScriptedBackend: rule matching, substitution, errors and delays (script
// validation is in script_test.cc).
#include "planner_service/scripted_backend.h"

#include <stdlib.h>

#include <fstream>
#include <iterator>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/testing/fake_clock.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "planner_service/script.h"

namespace rein {
namespace {

using ::google::protobuf::util::MessageDifferencer;
using ::rein::v1::DecideRequest;
using ::rein::v1::DecideResponse;
using ::rein::v1::EvaluateRequest;
using ::rein::v1::EvaluateResponse;
using ::rein::v1::PlanRequest;
using ::rein::v1::PlanResponse;
using ::testing::HasSubstr;

const absl::Time kNoDeadline = absl::InfiniteFuture();

class ScriptedBackendTest : public ::testing::Test {
 protected:
  // Loads `text` as "t.json"; fails the test when it does not load.
  std::unique_ptr<ScriptedBackend> Load(absl::string_view text) {
    absl::StatusOr<std::unique_ptr<ScriptedBackend>> backend =
        ScriptedBackend::FromJson(text, "t.json", &clock_);
    EXPECT_TRUE(backend.ok()) << backend.status();
    return backend.ok() ? *std::move(backend) : nullptr;
  }

  // The message of loading `text`, which must fail with INVALID_ARGUMENT.
  std::string LoadError(absl::string_view text) {
    absl::StatusOr<std::unique_ptr<ScriptedBackend>> backend =
        ScriptedBackend::FromJson(text, "t.json", &clock_);
    if (backend.ok()) return "<loaded>";
    EXPECT_EQ(backend.status().code(), absl::StatusCode::kInvalidArgument) << backend.status();
    return std::string(backend.status().message());
  }

  FakeClock clock_;
};

PlanRequest MakePlan(int iteration = 0) {
  PlanRequest request;
  request.set_run_id("run-1");
  request.set_goal("audit the secrets");
  request.set_iteration(iteration);
  return request;
}

DecideRequest MakeDecide(absl::string_view subtask, int iteration = 1) {
  DecideRequest request;
  request.set_run_id("run-1");
  request.set_goal("audit the secrets");
  request.mutable_subtask()->set_id(std::string(subtask));
  request.set_iteration(iteration);
  return request;
}

EvaluateRequest MakeEvaluate(absl::string_view subtask, absl::string_view tool, bool ok,
                             absl::string_view observation) {
  EvaluateRequest request;
  request.set_run_id("run-1");
  request.set_goal("audit the secrets");
  request.mutable_subtask()->set_id(std::string(subtask));
  request.mutable_action()->set_tool(std::string(tool));
  request.mutable_action()->set_ok(ok);
  request.set_observation(std::string(observation));
  request.set_iteration(2);
  return request;
}

TEST_F(ScriptedBackendTest, PlanReplyIsParsedLabelledAndCounted) {
  auto backend = Load(R"json({"plan": [{"reply": {
      "reasoning": "look first",
      "subtasks": [{"id": "list", "description": "list the files",
                    "allowedTools": ["list_files"]}],
      "notes": "n"}}]})json");
  ASSERT_NE(backend, nullptr);
  const PlanRequest request = MakePlan();
  absl::StatusOr<PlanResponse> reply = backend->Plan(request, kNoDeadline);
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(reply->reasoning(), "look first");
  ASSERT_EQ(reply->subtasks_size(), 1);
  EXPECT_EQ(reply->subtasks(0).id(), "list");
  EXPECT_EQ(reply->subtasks(0).description(), "list the files");
  EXPECT_THAT(reply->subtasks(0).allowed_tools(), ::testing::ElementsAre("list_files"));
  EXPECT_EQ(reply->notes(), "n");
  EXPECT_EQ(reply->backend(), "scripted");
  EXPECT_EQ(reply->usage().input_tokens(), static_cast<int64_t>((request.ByteSizeLong() + 3) / 4));
  PlanResponse without_usage = *reply;
  without_usage.clear_usage();
  EXPECT_EQ(reply->usage().output_tokens(),
            static_cast<int64_t>((without_usage.ByteSizeLong() + 3) / 4));
  EXPECT_GT(reply->usage().output_tokens(), 0);
}

TEST_F(ScriptedBackendTest, UsageGivenInReplyIsKept) {
  auto backend = Load(R"json({"plan": [{"reply": {
      "goalAchieved": true, "usage": {"inputTokens": 1000, "outputTokens": 250}}}]})json");
  ASSERT_NE(backend, nullptr);
  absl::StatusOr<PlanResponse> reply = backend->Plan(MakePlan(), kNoDeadline);
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_TRUE(reply->goal_achieved());
  EXPECT_EQ(reply->usage().input_tokens(), 1000);
  EXPECT_EQ(reply->usage().output_tokens(), 250);
}

TEST_F(ScriptedBackendTest, BackendInReplyIsOverwrittenWithScripted) {
  auto backend = Load(R"json({"plan": [{"reply": {"backend": "anthropic:fake"}}]})json");
  ASSERT_NE(backend, nullptr);
  absl::StatusOr<PlanResponse> reply = backend->Plan(MakePlan(), kNoDeadline);
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(reply->backend(), "scripted");
}

TEST_F(ScriptedBackendTest, DecideArgsObjectBecomesArgsJson) {
  auto backend = Load(R"json({"decide": [{"reply": {
      "toolCall": {"tool": "read_file", "args": {"path": "a.txt", "limit": 20}}}}]})json");
  ASSERT_NE(backend, nullptr);
  absl::StatusOr<DecideResponse> reply = backend->Decide(MakeDecide("read"), kNoDeadline);
  ASSERT_TRUE(reply.ok()) << reply.status();
  ASSERT_TRUE(reply->has_tool_call());
  EXPECT_EQ(reply->tool_call().tool(), "read_file");
  EXPECT_EQ(reply->tool_call().args_json(), R"({"limit":20,"path":"a.txt"})");
  EXPECT_EQ(reply->backend(), "scripted");
}

TEST_F(ScriptedBackendTest, DecideArgsJsonIsPassedThroughUnchanged) {
  auto backend = Load(R"json({"decide": [{"reply": {
      "toolCall": {"tool": "list_files", "argsJson": "{not json"}}}]})json");
  ASSERT_NE(backend, nullptr);
  absl::StatusOr<DecideResponse> reply = backend->Decide(MakeDecide("list"), kNoDeadline);
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(reply->tool_call().args_json(), "{not json");
}

TEST_F(ScriptedBackendTest, DecideHumanQueryIsParsed) {
  auto backend = Load(R"json({"decide": [{"reply": {"humanQuery": "which folder?"}}]})json");
  ASSERT_NE(backend, nullptr);
  absl::StatusOr<DecideResponse> reply = backend->Decide(MakeDecide("ask"), kNoDeadline);
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(reply->decision_case(), DecideResponse::kHumanQuery);
  EXPECT_EQ(reply->human_query(), "which folder?");
}

TEST_F(ScriptedBackendTest, EvaluateNextCallIsKeptWhenAskedForAndValid) {
  auto backend = Load(R"json({"evaluate": [{"reply": {
      "status": "NEEDS_MORE_WORK", "summary": "listed",
      "nextCall": {"tool": "read_file", "args": {"path": "a.txt"}}}}]})json");
  ASSERT_NE(backend, nullptr);
  EvaluateRequest request = MakeEvaluate("list", "list_files", true, "a.txt");
  request.mutable_subtask()->add_allowed_tools("read_file");
  request.add_run_tools()->set_name("read_file");
  request.set_propose_next(true);
  absl::StatusOr<EvaluateResponse> reply = backend->Evaluate(request, kNoDeadline);
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(reply->next_call().tool(), "read_file");
  EXPECT_EQ(reply->next_call().args_json(), R"({"path":"a.txt"})");
  // Not asked for (the run opted out): the same script's proposal is dropped.
  request.set_propose_next(false);
  reply = backend->Evaluate(request, kNoDeadline);
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_FALSE(reply->has_next_call());
  EXPECT_EQ(reply->status(), rein::v1::RunEvent::Evaluation::NEEDS_MORE_WORK);
  EXPECT_NE(reply->next_call_dropped().find("not asked for"), std::string::npos);
}

TEST_F(ScriptedBackendTest, PlanFirstCallIsPassedOnWithItsArguments) {
  auto backend = Load(R"json({"plan": [{"reply": {
      "subtasks": [{"id": "read", "description": "read a.txt", "allowedTools": ["read_file"]}],
      "firstCall": {"tool": "read_file", "args": {"path": "a.txt"}}}}]})json");
  ASSERT_NE(backend, nullptr);
  absl::StatusOr<rein::v1::PlanResponse> reply =
      backend->Plan(rein::v1::PlanRequest(), kNoDeadline);
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(reply->first_call().tool(), "read_file");
  EXPECT_EQ(reply->first_call().args_json(), R"({"path":"a.txt"})");
}

TEST_F(ScriptedBackendTest, EvaluateStatusIsParsed) {
  auto backend = Load(R"json({"evaluate": [{"reply": {
      "status": "COMPLETED", "summary": "3 files", "goalAchieved": true}}]})json");
  ASSERT_NE(backend, nullptr);
  absl::StatusOr<EvaluateResponse> reply =
      backend->Evaluate(MakeEvaluate("list", "list_files", true, "a b c"), kNoDeadline);
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(reply->status(), rein::v1::RunEvent::Evaluation::COMPLETED);
  EXPECT_EQ(reply->summary(), "3 files");
  EXPECT_TRUE(reply->goal_achieved());
  EXPECT_EQ(reply->backend(), "scripted");
}

TEST_F(ScriptedBackendTest, SnakeCaseFieldNamesAreAccepted) {
  auto backend = Load(R"json({"decide": [{"reply": {
      "tool_call": {"tool": "list_files", "args": {}}}}]})json");
  ASSERT_NE(backend, nullptr);
  absl::StatusOr<DecideResponse> reply = backend->Decide(MakeDecide("list"), kNoDeadline);
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(reply->tool_call().args_json(), "{}");
}

TEST_F(ScriptedBackendTest, SubtaskConditionPicksItsRule) {
  auto backend = Load(R"json({"decide": [
      {"when": {"subtask": "read"}, "reply": {"reasoning": "r"}},
      {"when": {"subtask": "list"}, "reply": {"reasoning": "l"}}]})json");
  ASSERT_NE(backend, nullptr);
  EXPECT_EQ(backend->Decide(MakeDecide("list"), kNoDeadline)->reasoning(), "l");
  EXPECT_EQ(backend->Decide(MakeDecide("read"), kNoDeadline)->reasoning(), "r");
}

TEST_F(ScriptedBackendTest, FirstMatchingRuleWins) {
  auto backend = Load(R"json({"decide": [
      {"when": {"subtask": "list"}, "reply": {"reasoning": "first"}},
      {"when": {"subtask": "list"}, "reply": {"reasoning": "second"}},
      {"reply": {"reasoning": "fallback"}}]})json");
  ASSERT_NE(backend, nullptr);
  EXPECT_EQ(backend->Decide(MakeDecide("list"), kNoDeadline)->reasoning(), "first");
  EXPECT_EQ(backend->Decide(MakeDecide("other"), kNoDeadline)->reasoning(), "fallback");
}

TEST_F(ScriptedBackendTest, HasHumanInputConditionTellsWithFromWithout) {
  auto backend = Load(R"json({"plan": [
      {"when": {"has_human_input": true}, "reply": {"reasoning": "with"}},
      {"when": {"has_human_input": false}, "reply": {"reasoning": "without"}}]})json");
  ASSERT_NE(backend, nullptr);
  PlanRequest request = MakePlan();
  EXPECT_EQ(backend->Plan(request, kNoDeadline)->reasoning(), "without");
  request.add_human_inputs()->set_text("use docs/");
  EXPECT_EQ(backend->Plan(request, kNoDeadline)->reasoning(), "with");
}

TEST_F(ScriptedBackendTest, HumanInputContainsLooksAtEveryInput) {
  auto backend = Load(R"json({"decide": [
      {"when": {"human_input_contains": "docs"}, "reply": {"reasoning": "docs"}},
      {"reply": {"reasoning": "other"}}]})json");
  ASSERT_NE(backend, nullptr);
  DecideRequest request = MakeDecide("ask");
  request.add_human_inputs()->set_text("not this one");
  EXPECT_EQ(backend->Decide(request, kNoDeadline)->reasoning(), "other");
  request.add_human_inputs()->set_text("look in docs/ please");
  EXPECT_EQ(backend->Decide(request, kNoDeadline)->reasoning(), "docs");
}

TEST_F(ScriptedBackendTest, ObservationContainsMatchesLatestObservationInPlan) {
  auto backend = Load(R"json({"plan": [
      {"when": {"observation_contains": "secret.txt"}, "reply": {"reasoning": "found"}},
      {"reply": {"reasoning": "none"}}]})json");
  ASSERT_NE(backend, nullptr);
  PlanRequest request = MakePlan();
  request.set_latest_observation("a.txt\nb.txt");
  EXPECT_EQ(backend->Plan(request, kNoDeadline)->reasoning(), "none");
  request.set_latest_observation("a.txt\nsecret.txt");
  EXPECT_EQ(backend->Plan(request, kNoDeadline)->reasoning(), "found");
}

TEST_F(ScriptedBackendTest, ObservationContainsMatchesRequestOrActionObservationInEvaluate) {
  auto backend = Load(R"json({"evaluate": [
      {"when": {"observation_contains": "KEY="}, "reply": {"status": "COMPLETED"}},
      {"reply": {"status": "NEEDS_MORE_WORK"}}]})json");
  ASSERT_NE(backend, nullptr);
  EvaluateRequest request = MakeEvaluate("read", "read_file", true, "nothing here");
  EXPECT_EQ(backend->Evaluate(request, kNoDeadline)->status(),
            rein::v1::RunEvent::Evaluation::NEEDS_MORE_WORK);
  request.set_observation("API_KEY=x");
  EXPECT_EQ(backend->Evaluate(request, kNoDeadline)->status(),
            rein::v1::RunEvent::Evaluation::COMPLETED);
  request.clear_observation();
  request.mutable_action()->set_observation("TOKEN_KEY=y");
  EXPECT_EQ(backend->Evaluate(request, kNoDeadline)->status(),
            rein::v1::RunEvent::Evaluation::COMPLETED);
}

TEST_F(ScriptedBackendTest, ReplanReasonContainsMatchesReplanReason) {
  auto backend = Load(R"json({"plan": [
      {"when": {"replan_reason_contains": "stagnation"}, "reply": {"reasoning": "replan"}},
      {"reply": {"reasoning": "first"}}]})json");
  ASSERT_NE(backend, nullptr);
  PlanRequest request = MakePlan();
  EXPECT_EQ(backend->Plan(request, kNoDeadline)->reasoning(), "first");
  request.set_replan_reason("stagnation: the same call 4 times");
  EXPECT_EQ(backend->Plan(request, kNoDeadline)->reasoning(), "replan");
}

TEST_F(ScriptedBackendTest, CompletedContainsNeedsAnExactSubtaskId) {
  auto backend = Load(R"json({"plan": [
      {"when": {"completed_contains": "list"}, "reply": {"goalAchieved": true}},
      {"reply": {"reasoning": "more"}}]})json");
  ASSERT_NE(backend, nullptr);
  PlanRequest request = MakePlan();
  request.add_completed()->set_id("listing");
  EXPECT_FALSE(backend->Plan(request, kNoDeadline)->goal_achieved());
  request.add_completed()->set_id("list");
  EXPECT_TRUE(backend->Plan(request, kNoDeadline)->goal_achieved());
}

TEST_F(ScriptedBackendTest, GoalContainsScriptsEachChildRun) {
  auto backend = Load(R"json({"plan": [
      {"when": {"goal_contains": "audit service b"}, "reply": {"reasoning": "child b"}},
      {"reply": {"reasoning": "parent"}}],
    "decide": [{"when": {"goal_contains": "service b"}, "reply": {"humanQuery": "b?"}}]})json");
  ASSERT_NE(backend, nullptr);
  PlanRequest request = MakePlan();
  request.set_goal("audit three services");
  EXPECT_EQ(backend->Plan(request, kNoDeadline)->reasoning(), "parent");
  request.set_goal("audit service b\n\n(This is one part of a larger goal ...)");
  EXPECT_EQ(backend->Plan(request, kNoDeadline)->reasoning(), "child b");
  rein::v1::DecideRequest decide;
  decide.set_goal("audit service a");
  EXPECT_FALSE(backend->Decide(decide, kNoDeadline).ok());
  decide.set_goal("audit service b");
  EXPECT_EQ(backend->Decide(decide, kNoDeadline)->human_query(), "b?");
}

TEST_F(ScriptedBackendTest, IterationAtLeastIsInclusive) {
  auto backend = Load(R"json({"plan": [
      {"when": {"iteration_at_least": 3}, "reply": {"reasoning": "late"}},
      {"reply": {"reasoning": "early"}}]})json");
  ASSERT_NE(backend, nullptr);
  EXPECT_EQ(backend->Plan(MakePlan(2), kNoDeadline)->reasoning(), "early");
  EXPECT_EQ(backend->Plan(MakePlan(3), kNoDeadline)->reasoning(), "late");
  EXPECT_EQ(backend->Plan(MakePlan(40), kNoDeadline)->reasoning(), "late");
}

TEST_F(ScriptedBackendTest, ToolAndActionOkConditionsMatchTheAction) {
  auto backend = Load(R"json({"evaluate": [
      {"when": {"tool": "read_file", "action_ok": false}, "reply": {"status": "FAILED"}},
      {"when": {"tool": "read_file"}, "reply": {"status": "COMPLETED"}},
      {"reply": {"status": "NEEDS_MORE_WORK"}}]})json");
  ASSERT_NE(backend, nullptr);
  EXPECT_EQ(backend->Evaluate(MakeEvaluate("r", "read_file", false, ""), kNoDeadline)->status(),
            rein::v1::RunEvent::Evaluation::FAILED);
  EXPECT_EQ(backend->Evaluate(MakeEvaluate("r", "read_file", true, ""), kNoDeadline)->status(),
            rein::v1::RunEvent::Evaluation::COMPLETED);
  EXPECT_EQ(backend->Evaluate(MakeEvaluate("r", "list_files", false, ""), kNoDeadline)->status(),
            rein::v1::RunEvent::Evaluation::NEEDS_MORE_WORK);
}

TEST_F(ScriptedBackendTest, AllConditionsOfARuleMustHold) {
  auto backend = Load(R"json({"decide": [
      {"when": {"subtask": "list", "iteration_at_least": 5, "has_human_input": true},
       "reply": {"reasoning": "all"}},
      {"reply": {"reasoning": "fallback"}}]})json");
  ASSERT_NE(backend, nullptr);
  DecideRequest request = MakeDecide("list", 5);
  EXPECT_EQ(backend->Decide(request, kNoDeadline)->reasoning(), "fallback");
  request.add_human_inputs()->set_text("go");
  EXPECT_EQ(backend->Decide(request, kNoDeadline)->reasoning(), "all");
  request.set_iteration(4);
  EXPECT_EQ(backend->Decide(request, kNoDeadline)->reasoning(), "fallback");
}

TEST_F(ScriptedBackendTest, NoMatchingRuleIsFailedPreconditionNamingSubtaskAndIteration) {
  auto backend = Load(R"json({"decide": [
      {"when": {"subtask": "list"}, "reply": {"reasoning": "l"}}]})json");
  ASSERT_NE(backend, nullptr);
  absl::StatusOr<DecideResponse> reply = backend->Decide(MakeDecide("read", 7), kNoDeadline);
  EXPECT_EQ(reply.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(reply.status().message(),
            "scripted planner: no decide rule matches (subtask=read, iteration=7)");
  absl::StatusOr<PlanResponse> plan = backend->Plan(MakePlan(2), kNoDeadline);
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(plan.status().message(),
            "scripted planner: no plan rule matches (subtask=(none), iteration=2)");
}

TEST_F(ScriptedBackendTest, PlaceholdersAreSubstitutedInEveryString) {
  auto backend = Load(R"json({"decide": [{"reply": {
      "reasoning": "iteration ${iteration} of ${subtask}",
      "toolCall": {"tool": "write_file",
                   "args": {"path": "${subtask}-${iteration}.txt", "text": "echo ${HOME}"}}}}]})json");
  ASSERT_NE(backend, nullptr);
  absl::StatusOr<DecideResponse> reply = backend->Decide(MakeDecide("notes", 4), kNoDeadline);
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(reply->reasoning(), "iteration 4 of notes");
  EXPECT_EQ(reply->tool_call().args_json(), R"({"path":"notes-4.txt","text":"echo ${HOME}"})");
}

TEST_F(ScriptedBackendTest, SubstitutedSubtaskIsEscapedInsideArgs) {
  auto backend = Load(R"json({"decide": [{"reply": {
      "toolCall": {"tool": "read_file", "args": {"path": "${subtask}"}}}}]})json");
  ASSERT_NE(backend, nullptr);
  absl::StatusOr<DecideResponse> reply = backend->Decide(MakeDecide("a\"b\\c"), kNoDeadline);
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(reply->tool_call().args_json(), R"({"path":"a\"b\\c"})");
}

TEST_F(ScriptedBackendTest, ErrorRuleReturnsItsCodeAndMessage) {
  auto backend = Load(R"json({"decide": [
      {"when": {"subtask": "down"},
       "error": {"code": "UNAVAILABLE", "message": "overloaded at ${iteration} on ${subtask}"}},
      {"when": {"subtask": "key"}, "error": {"code": "UNAUTHENTICATED", "message": "bad key"}}]})json");
  ASSERT_NE(backend, nullptr);
  absl::StatusOr<DecideResponse> down = backend->Decide(MakeDecide("down", 3), kNoDeadline);
  EXPECT_EQ(down.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(down.status().message(), "overloaded at 3 on down");
  absl::StatusOr<DecideResponse> key = backend->Decide(MakeDecide("key"), kNoDeadline);
  EXPECT_EQ(key.status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(key.status().message(), "bad key");
}

TEST_F(ScriptedBackendTest, DelayWithinDeadlineSleepsThenReplies) {
  auto backend = Load(R"json({"plan": [{"delay_ms": 1500, "reply": {"reasoning": "slow"}}]})json");
  ASSERT_NE(backend, nullptr);
  const absl::Time start = clock_.Now();
  absl::StatusOr<PlanResponse> reply = backend->Plan(MakePlan(), start + absl::Seconds(2));
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(reply->reasoning(), "slow");
  EXPECT_THAT(clock_.sleeps(), ::testing::ElementsAre(start + absl::Milliseconds(1500)));
}

TEST_F(ScriptedBackendTest, DelayWithoutDeadlineSleepsThenReplies) {
  auto backend = Load(R"json({"plan": [{"delay_ms": 1500, "reply": {"reasoning": "slow"}}]})json");
  ASSERT_NE(backend, nullptr);
  const absl::Time start = clock_.Now();
  EXPECT_EQ(backend->Plan(MakePlan(), kNoDeadline)->reasoning(), "slow");
  EXPECT_THAT(clock_.sleeps(), ::testing::ElementsAre(start + absl::Milliseconds(1500)));
}

TEST_F(ScriptedBackendTest, DelayPastDeadlineStopsAtDeadlineWithDeadlineExceeded) {
  auto backend =
      Load(R"json({"decide": [{"delay_ms": 5000, "reply": {"reasoning": "slow"}}]})json");
  ASSERT_NE(backend, nullptr);
  const absl::Time deadline = clock_.Now() + absl::Seconds(1);
  absl::StatusOr<DecideResponse> reply = backend->Decide(MakeDecide("list"), deadline);
  EXPECT_EQ(reply.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(reply.status().message(),
            "scripted planner: decide[0] waits 5000ms, past the RPC deadline");
  EXPECT_THAT(clock_.sleeps(), ::testing::ElementsAre(deadline));
}

TEST_F(ScriptedBackendTest, DelayAlsoAppliesToErrorRules) {
  auto backend = Load(R"json({"plan": [{"delay_ms": 200,
      "error": {"code": "INTERNAL", "message": "invalid output: no subtasks"}}]})json");
  ASSERT_NE(backend, nullptr);
  const absl::Time start = clock_.Now();
  absl::StatusOr<PlanResponse> reply = backend->Plan(MakePlan(), kNoDeadline);
  EXPECT_EQ(reply.status().code(), absl::StatusCode::kInternal);
  EXPECT_EQ(reply.status().message(), "invalid output: no subtasks");
  EXPECT_THAT(clock_.sleeps(), ::testing::ElementsAre(start + absl::Milliseconds(200)));
}

TEST_F(ScriptedBackendTest, PassedDeadlineIsDeadlineExceededWithoutSleeping) {
  auto backend = Load(R"json({"plan": [{"reply": {"reasoning": "fast"}}]})json");
  ASSERT_NE(backend, nullptr);
  absl::StatusOr<PlanResponse> reply = backend->Plan(MakePlan(), clock_.Now() - absl::Seconds(1));
  EXPECT_EQ(reply.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_TRUE(clock_.sleeps().empty());
}

TEST_F(ScriptedBackendTest, SameRequestTwiceGetsTheSameReply) {
  auto backend = Load(R"json({
      "plan": [{"reply": {"reasoning": "p${iteration}", "subtasks": [{"id": "a"}]}}],
      "decide": [
        {"when": {"subtask": "a"}, "reply": {"toolCall": {"tool": "list_files", "args": {}}}},
        {"reply": {"humanQuery": "what now?"}}]})json");
  ASSERT_NE(backend, nullptr);
  const DecideRequest request = MakeDecide("a", 3);
  absl::StatusOr<DecideResponse> first = backend->Decide(request, kNoDeadline);
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE(backend->Decide(MakeDecide("b", 4), kNoDeadline).ok());
  ASSERT_TRUE(backend->Plan(MakePlan(5), kNoDeadline).ok());
  absl::StatusOr<DecideResponse> second = backend->Decide(request, kNoDeadline);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_TRUE(MessageDifferencer::Equals(*first, *second))
      << first->DebugString() << " vs " << second->DebugString();
  EXPECT_TRUE(MessageDifferencer::Equals(*backend->Plan(MakePlan(5), kNoDeadline),
                                         *backend->Plan(MakePlan(5), kNoDeadline)));
}

TEST_F(ScriptedBackendTest, CommentsAreAllowed) {
  auto backend = Load(R"json({
      // the demo's script
      "comment": "top-level note",
      "plan": [{"comment": "always", "reply": {"reasoning": "ok"}}]})json");
  ASSERT_NE(backend, nullptr);
  EXPECT_EQ(backend->Plan(MakePlan(), kNoDeadline)->reasoning(), "ok");
}

TEST_F(ScriptedBackendTest, MissingStageHasNoRules) {
  auto backend = Load(R"json({"plan": [{"reply": {}}]})json");
  ASSERT_NE(backend, nullptr);
  EXPECT_EQ(backend->Evaluate(MakeEvaluate("x", "t", true, ""), kNoDeadline).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST_F(ScriptedBackendTest, FromFileLoadsAScript) {
  const std::string path = absl::StrCat(getenv("TEST_TMPDIR"), "/script.json");
  std::ofstream(path) << R"json({"plan": [{"reply": {"reasoning": "from file"}}]})json";
  absl::StatusOr<std::unique_ptr<ScriptedBackend>> backend =
      ScriptedBackend::FromFile(path, &clock_);
  ASSERT_TRUE(backend.ok()) << backend.status();
  EXPECT_EQ((*backend)->Plan(MakePlan(), kNoDeadline)->reasoning(), "from file");
  EXPECT_EQ((*backend)->name(), "scripted");
}

TEST_F(ScriptedBackendTest, FromJsonReturnsTheScriptsLoadError) {
  EXPECT_EQ(LoadError(R"({"plan": {}})"), "t.json: plan: expected an array of rules, got object");
}

TEST_F(ScriptedBackendTest, FromFileMissingIsNotFoundNamingThePath) {
  absl::StatusOr<std::unique_ptr<ScriptedBackend>> backend =
      ScriptedBackend::FromFile("/nonexistent/script.json", &clock_);
  EXPECT_EQ(backend.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(backend.status().message()), HasSubstr("/nonexistent/script.json"));
}

TEST_F(ScriptedBackendTest, BackendBuiltFromAParsedScriptAnswers) {
  absl::StatusOr<Script> script =
      ParseScript(R"json({"decide": [{"reply": {"reasoning": "on ${subtask}"}}]})json");
  ASSERT_TRUE(script.ok()) << script.status();
  ScriptedBackend backend(*std::move(script), &clock_);
  EXPECT_EQ(backend.Decide(MakeDecide("list"), kNoDeadline)->reasoning(), "on list");
}

TEST_F(ScriptedBackendTest, ExampleInScriptMdLoadsAndRuns) {
  std::ifstream in("planner_service/SCRIPT.md");
  ASSERT_TRUE(in) << "SCRIPT.md not in runfiles";
  const std::string doc((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t begin = doc.find("```json\n");
  ASSERT_NE(begin, std::string::npos);
  const size_t end = doc.find("```", begin + 8);
  ASSERT_NE(end, std::string::npos);
  auto backend = Load(doc.substr(begin + 8, end - begin - 8));
  ASSERT_NE(backend, nullptr);
  absl::StatusOr<PlanResponse> plan = backend->Plan(MakePlan(), kNoDeadline);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->subtasks_size(), 2);
  EXPECT_EQ(backend->Decide(MakeDecide("read"), kNoDeadline)->tool_call().args_json(),
            R"({"path":"config.env"})");
  EXPECT_EQ(backend->Evaluate(MakeEvaluate("list", "list_files", true, ""), kNoDeadline)->summary(),
            "list done at 2");
  PlanRequest after = MakePlan(5);
  after.add_completed()->set_id("list");
  after.add_completed()->set_id("read");
  EXPECT_TRUE(backend->Plan(after, kNoDeadline)->goal_achieved());
}

}  // namespace
}  // namespace rein
