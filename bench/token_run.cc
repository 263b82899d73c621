// One scripted run through the stage router and the Anthropic backend on the fake Messages API.
#include "bench/token_run.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/clock.h"
#include "common/status_macros.h"
#include "executor_service/tools/tool_registry.h"
#include "nlohmann/json.hpp"
#include "planner_service/anthropic_backend.h"
#include "planner_service/anthropic_client.h"
#include "planner_service/stage_prompts.h"
#include "planner_service/testing/fake_messages_server.h"
#include "router_service/spec.h"
#include "router_service/stage_router.h"

namespace rein {
namespace {

using json = nlohmann::json;

constexpr char kKey[] = "bench-key";

// The executor's read-only tools as ListTools reports them.
absl::StatusOr<std::vector<rein::v1::ToolSpec>> ReadOnlyTools() {
  ToolRegistry registry;
  RETURN_IF_ERROR(RegisterReadOnlyTools(&registry));
  std::vector<rein::v1::ToolSpec> out;
  for (const Tool* tool : registry.tools()) {
    rein::v1::ToolSpec spec;
    spec.set_name(tool->spec().name);
    spec.set_description(tool->spec().description);
    spec.set_input_schema_json(tool->spec().input_schema.dump());
    spec.set_mutating(tool->spec().mutating);
    out.push_back(std::move(spec));
  }
  return out;
}

std::string FileName(int step) { return absl::StrFormat("notes/%02d.txt", step + 1); }

// What a read of `step`'s file returns: numbered lines of text, `bytes` long.
std::string FileText(int step, size_t bytes) {
  std::string text;
  for (int line = 1; text.size() < bytes; ++line) {
    absl::StrAppend(&text, "note ", step + 1, " line ", line,
                    ": the quick brown fox jumps over the lazy dog\n");
  }
  text.resize(bytes);
  return text;
}

// A scripted tool_use reply whose usage counts its input as the fake counts tokens.
FakeReply Reply(const std::string& tool, const json& input, int64_t* output_tokens) {
  FakeReply reply = ToolUseReply(tool, input);
  json message = json::parse(reply.body);
  *output_tokens = (static_cast<int64_t>(input.dump().size()) + 3) / 4;
  message["usage"]["output_tokens"] = *output_tokens;
  reply.body = message.dump();
  return reply;
}

// The fake Messages API with its prompt cache simulated, and the real client pointed at it.
struct FakeApi {
  std::unique_ptr<FakeMessagesServer> server;
  std::unique_ptr<AnthropicClient> client;  // destroyed before the server
};

absl::StatusOr<FakeApi> StartFakeApi(int64_t min_cacheable_tokens) {
  FakeApi api;
  api.server = std::make_unique<FakeMessagesServer>(kKey);
  RETURN_IF_ERROR(api.server->Start());
  api.server->SimulatePromptCache(min_cacheable_tokens);
  AnthropicClientOptions client_options;
  client_options.base_url = api.server->base_url();
  client_options.api_key = kKey;
  client_options.max_retries = 0;
  ASSIGN_OR_RETURN(api.client, AnthropicClient::Create(client_options, RealClock()));
  return api;
}

// Appends the requests the fake received from index `from` on to `result`.
absl::Status Record(FakeMessagesServer& server, size_t from, const std::string& stage,
                    int iteration, int64_t output_tokens, TokenRunResult* result) {
  const std::vector<FakeRequest> requests = server.requests();
  for (size_t i = from; i < requests.size(); ++i) {
    const FakeRequest& r = requests[i];
    if (!r.problem.empty()) return absl::InternalError(absl::StrCat("refused: ", r.problem));
    ModelRequest m;
    m.stage = stage;
    m.iteration = iteration;
    m.body_bytes = static_cast<int64_t>(r.body.size());
    m.input_tokens = r.input_tokens;
    m.cache_read_tokens = r.cache_read_input_tokens;
    m.cache_write_tokens = r.cache_creation_input_tokens;
    m.output_tokens = output_tokens;
    result->requests.push_back(m);
  }
  return absl::OkStatus();
}

std::string Goal(int steps) {
  return absl::StrCat("Read the ", steps,
                      " notes in notes/ (01.txt, 02.txt, ...) one by one and report how many "
                      "lines mention a fox.");
}

}  // namespace

double PricedInput(const ModelRequest& r) {
  return static_cast<double>(r.input_tokens) + 1.25 * static_cast<double>(r.cache_write_tokens) +
         0.1 * static_cast<double>(r.cache_read_tokens);
}

absl::StatusOr<TokenRunResult> RunScriptedTask(const TokenRunOptions& options) {
  if (options.steps < 2 || options.steps % 2 != 0) {
    return absl::InvalidArgumentError("steps: must be an even number >= 2");
  }
  ASSIGN_OR_RETURN(FakeApi api, StartFakeApi(options.min_cacheable_tokens));
  FakeMessagesServer& server = *api.server;
  ASSIGN_OR_RETURN(std::unique_ptr<StagePrompts> prompts, StagePrompts::Load(options.prompts_dir));
  AnthropicBackendOptions backend_options;
  backend_options.min_cacheable_tokens = options.min_cacheable_tokens;  // the fake's
  AnthropicBackend backend(backend_options, std::move(api.client), std::move(prompts));

  ASSIGN_OR_RETURN(std::vector<rein::v1::ToolSpec> tools, ReadOnlyTools());
  rein::v1::RunSpec spec;
  spec.set_goal(Goal(options.steps));
  spec.mutable_limits()->set_max_iterations(100000);
  spec.mutable_limits()->mutable_deadline()->set_seconds(24 * 3600);
  spec.set_combine_evaluate_decide(options.combine_evaluate_decide);
  spec.set_combine_plan_decide(options.combine_plan_decide);
  ASSIGN_OR_RETURN(rein::v1::RunSpec normalized, NormalizeSpec(spec, tools));

  const StageRouter router;
  rein::v1::Run run;
  router.NewRun("bench-run", "", normalized, absl::Now(), &run);
  auto apply = [&run](const Transition& t) { run.mutable_state()->CopyFrom(t.state); };

  TokenRunResult result;
  int step = 0;       // the next file to read
  int evaluated = 0;  // evaluations answered
  const absl::Time give_up = absl::Now() + options.deadline;
  while (true) {
    if (absl::Now() > give_up) return absl::DeadlineExceededError("the run did not end in time");
    const absl::Time now = absl::Now();
    NextStep next = router.Next(run, now);
    if (next.kind == NextStep::Kind::kEnded) break;
    if (next.kind == NextStep::Kind::kCommit) {
      apply(*next.transition);
      continue;
    }
    if (next.kind != NextStep::Kind::kCall) {
      return absl::InternalError(
          absl::StrCat("the run stopped in stage ", rein::v1::Stage_Name(run.state().stage())));
    }
    const Effect& effect = next.effect;
    const size_t sent = server.requests().size();
    std::string stage;
    int iteration = 0;
    int64_t output_tokens = 0;
    switch (effect.kind) {
      case Effect::Kind::kListTools: {
        rein::v1::ListToolsResponse reply;
        for (const rein::v1::ToolSpec& t : tools) *reply.add_tools() = t;
        reply.set_executor_id("bench");
        apply(router.OnTools(run, reply, std::nullopt, now));
        continue;
      }
      case Effect::Kind::kPlan: {
        stage = "plan";
        iteration = effect.plan.iteration();
        // The next `subtasks_per_plan` subtasks of two reads each.
        const bool batched = options.subtasks_per_plan > 1;
        json subtasks = json::array();
        const int last = std::min(options.steps, step + 2 * std::max(1, options.subtasks_per_plan));
        for (int first = step; first < last; first += 2) {
          subtasks.push_back(
              {{"id",
                batched ? absl::StrCat("read-", first + 1) : absl::StrCat("p", iteration, "-read")},
               {"description", absl::StrCat("Read ", FileName(first), " and ", FileName(first + 1),
                                            " and count the lines that mention a fox.")},
               {"allowed_tools", {"read_file"}}});
        }
        json plan = {
            {"reasoning", batched ? "Read the notes two at a time." : "Read the next two notes."},
            {"subtasks", subtasks},
            {"goal_achieved", false}};
        // Asked for the first call (RunSpec.combine_plan_decide): the model gives it.
        if (effect.plan.propose_first_call()) {
          plan["first_tool_call"] = {{"tool", "read_file"}, {"args", {{"path", FileName(step)}}}};
        }
        server.Enqueue(Reply("submit_plan", plan, &output_tokens));
        apply(router.OnPlan(run, backend.Plan(effect.plan, effect.deadline), now));
        break;
      }
      case Effect::Kind::kDecide: {
        stage = "decide";
        iteration = effect.decide.iteration();
        server.Enqueue(
            Reply("submit_decision",
                  {{"reasoning", absl::StrCat("Read ", FileName(step), " next.")},
                   {"tool_call", {{"tool", "read_file"}, {"args", {{"path", FileName(step)}}}}}},
                  &output_tokens));
        apply(router.OnDecide(run, backend.Decide(effect.decide, effect.deadline), now));
        break;
      }
      case Effect::Kind::kExecute: {
        rein::v1::ExecuteResponse reply;
        reply.set_ok(true);
        reply.set_output(FileText(step, options.observation_bytes));
        reply.set_executor_id("bench");
        ++step;
        ++result.tool_calls;
        apply(router.OnExecute(run, reply, now));
        continue;
      }
      case Effect::Kind::kEvaluate: {
        stage = "evaluate";
        iteration = effect.evaluate.iteration();
        const bool second = ++evaluated % 2 == 0;
        const bool last = second && step >= options.steps;
        json verdict = {
            {"reasoning", "The observation shows the file's lines."},
            {"status", second ? "COMPLETED" : "NEEDS_MORE_WORK"},
            {"summary", absl::StrCat("Read ", FileName(step - 1), ": 3 lines mention a fox.")},
            {"goal_achieved", last}};
        // Asked for the next call (RunSpec.combine_evaluate_decide): the model gives it.
        if (!second && effect.evaluate.propose_next()) {
          verdict["next_tool_call"] = {{"tool", "read_file"}, {"args", {{"path", FileName(step)}}}};
        }
        server.Enqueue(Reply("submit_evaluation", verdict, &output_tokens));
        apply(router.OnEvaluate(run, backend.Evaluate(effect.evaluate, effect.deadline), now));
        break;
      }
      default: return absl::InternalError("unexpected effect");
    }
    RETURN_IF_ERROR(Record(server, sent, stage, iteration, output_tokens, &result));
  }
  const rein::v1::RunState& st = run.state();
  result.end = absl::StrCat(rein::v1::Stage_Name(st.stage()));
  if (st.stage() != rein::v1::FINISHED) {
    return absl::InternalError(absl::StrCat("the run ended ", result.end, " after ", step,
                                            " steps: ", st.ShortDebugString().substr(0, 400)));
  }
  if (step != options.steps) {
    return absl::InternalError(absl::StrCat("the run took ", step, " steps, not ", options.steps));
  }
  return result;
}

}  // namespace rein

namespace rein {
namespace {

// The system prompt of the ReAct loop: a few sentences (about 70 tokens), the size class of the
// prompt a createReactAgent user passes (LangGraph adds none of its own).
constexpr char kReactSystemPrompt[] =
    "You are a helpful assistant that completes the user's task by calling tools. Work step by "
    "step: call one tool, read its result, then decide the next call. Use only the tools you are "
    "given and never guess a file's contents. When the task is done, answer with the result and "
    "a one-line explanation.";

const json& Ephemeral() {
  static const json* const kEphemeral = new json{{"type", "ephemeral"}};
  return *kEphemeral;
}

// `messages` with cache_control on the last content block of each message in `marked`.
json MarkMessages(json messages, const std::vector<size_t>& marked) {
  for (size_t i : marked) {
    json& content = messages.at(i)["content"];
    if (content.is_string()) content = json::array({{{"type", "text"}, {"text", content}}});
    content.back()["cache_control"] = Ephemeral();
  }
  return messages;
}

int CountBreakpoints(const json& body) {
  int n = 0;
  for (const json& tool : body["tools"]) n += tool.contains("cache_control");
  for (const json& block : body["system"]) n += block.contains("cache_control");
  for (const json& m : body["messages"]) {
    for (const json& block : m["content"]) n += block.contains("cache_control");
  }
  return n;
}

}  // namespace

absl::StatusOr<TokenRunResult> RunReactLoop(const TokenRunOptions& options) {
  if (options.steps < 1) return absl::InvalidArgumentError("steps: must be >= 1");
  ASSIGN_OR_RETURN(FakeApi api, StartFakeApi(options.min_cacheable_tokens));
  ASSIGN_OR_RETURN(std::vector<rein::v1::ToolSpec> specs, ReadOnlyTools());
  // The same tools as rein's run, as the Messages API takes them; the last carries a
  // breakpoint (the tools come first in the cached prefix).
  json tools = json::array();
  for (const rein::v1::ToolSpec& spec : specs) {
    tools.push_back({{"name", spec.name()},
                     {"description", spec.description()},
                     {"input_schema", json::parse(spec.input_schema_json())}});
  }
  tools.back()["cache_control"] = Ephemeral();
  const json system = json::array(
      {{{"type", "text"}, {"text", kReactSystemPrompt}, {"cache_control", Ephemeral()}}});
  json messages = json::array(
      {{{"role", "user"},
        {"content", json::array({{{"type", "text"}, {"text", Goal(options.steps)}}})}}});

  TokenRunResult result;
  const absl::Time give_up = absl::Now() + options.deadline;
  for (int turn = 1;; ++turn) {
    if (absl::Now() > give_up) return absl::DeadlineExceededError("the loop did not end in time");
    const int step = result.tool_calls;
    // The model's scripted answer: a read of the next note, or the final answer after the last.
    int64_t output_tokens = 0;
    if (step < options.steps) {
      FakeReply reply = Reply("read_file", {{"path", FileName(step)}}, &output_tokens);
      json message = json::parse(reply.body);
      message["content"][0]["id"] = absl::StrFormat("toolu_01bench%016d", step + 1);
      reply.body = message.dump();
      api.server->Enqueue(std::move(reply));
    } else {
      const std::string answer =
          absl::StrCat("I read all ", options.steps, " notes: 3 lines in each mention a fox, ",
                       3 * options.steps, " in all.");
      output_tokens = (static_cast<int64_t>(answer.size()) + 3) / 4;
      api.server->Enqueue(TextReply(answer));
    }
    // Breakpoints as a ReAct agent with prompt caching sets them (LangChain's Anthropic
    // prompt-caching middleware; Anthropic's multi-turn example): the tools, the system prompt
    // and the last message, so the whole conversation so far is written to the cache. The real
    // API then reads the previous request's prefix by looking back from the last breakpoint; the
    // fake reads only at breakpoints, so the previous request's last message (two messages back)
    // carries the fourth breakpoint, which gives the same reads and writes.
    std::vector<size_t> marked;
    if (messages.size() >= 3) marked.push_back(messages.size() - 3);
    marked.push_back(messages.size() - 1);
    const json body = {{"model", AnthropicBackendOptions{}.model},
                       {"max_tokens", 4096},
                       {"tools", tools},
                       {"system", system},
                       {"messages", MarkMessages(messages, marked)}};
    if (CountBreakpoints(body) > 4) return absl::InternalError("more than 4 cache breakpoints");
    const size_t sent = api.server->requests().size();
    ASSIGN_OR_RETURN(MessagesReply reply,
                     api.client->CreateMessage(body.dump(), absl::Now() + absl::Seconds(30)));
    RETURN_IF_ERROR(Record(*api.server, sent, "react", turn, output_tokens, &result));
    const json content = reply.message.value("content", json::array());
    messages.push_back({{"role", "assistant"}, {"content", content}});
    if (reply.message.value("stop_reason", "") != "tool_use") break;
    if (content.empty() || content.back().value("type", "") != "tool_use") {
      return absl::InternalError("tool_use reply without a tool_use block");
    }
    // The tool's result goes back as the next user message.
    messages.push_back(
        {{"role", "user"},
         {"content", json::array({{{"type", "tool_result"},
                                   {"tool_use_id", content.back()["id"]},
                                   {"content", FileText(step, options.observation_bytes)}}})}});
    ++result.tool_calls;
  }
  if (result.tool_calls != options.steps) {
    return absl::InternalError(
        absl::StrCat("the loop took ", result.tool_calls, " steps, not ", options.steps));
  }
  result.end = "end_turn";
  return result;
}

}  // namespace rein
