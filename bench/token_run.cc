// One scripted run through the stage router and the Anthropic backend on the fake Messages API.
#include "bench/token_run.h"

#include <memory>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/clock.h"
#include "common/status_macros.h"
#include "executor_service/tool_registry.h"
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

}  // namespace

double PricedInput(const ModelRequest& r) {
  return static_cast<double>(r.input_tokens) + 1.25 * static_cast<double>(r.cache_write_tokens) +
         0.1 * static_cast<double>(r.cache_read_tokens);
}

absl::StatusOr<TokenRunResult> RunScriptedTask(const TokenRunOptions& options) {
  if (options.steps < 2 || options.steps % 2 != 0) {
    return absl::InvalidArgumentError("steps: must be an even number >= 2");
  }
  FakeMessagesServer server(kKey);
  RETURN_IF_ERROR(server.Start());
  server.SimulatePromptCache(options.min_cacheable_tokens);
  AnthropicClientOptions client_options;
  client_options.base_url = server.base_url();
  client_options.api_key = kKey;
  client_options.max_retries = 0;
  ASSIGN_OR_RETURN(std::unique_ptr<AnthropicClient> client,
                   AnthropicClient::Create(client_options, RealClock()));
  ASSIGN_OR_RETURN(std::unique_ptr<StagePrompts> prompts, StagePrompts::Load(options.prompts_dir));
  AnthropicBackend backend(AnthropicBackendOptions{}, std::move(client), std::move(prompts));

  ASSIGN_OR_RETURN(std::vector<rein::v1::ToolSpec> tools, ReadOnlyTools());
  rein::v1::RunSpec spec;
  spec.set_goal(
      absl::StrCat("Read the ", options.steps,
                   " notes in notes/ (01.txt, 02.txt, ...) one by one and report how many "
                   "lines mention a fox."));
  spec.mutable_limits()->set_max_iterations(100000);
  spec.mutable_limits()->mutable_deadline()->set_seconds(24 * 3600);
  spec.set_combine_evaluate_decide(options.combine_evaluate_decide);
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
        server.Enqueue(Reply(
            "submit_plan",
            {{"reasoning", "Read the next two notes."},
             {"subtasks",
              {{{"id", absl::StrCat("p", iteration, "-read")},
                {"description", absl::StrCat("Read ", FileName(step), " and ", FileName(step + 1),
                                             " and count the lines that mention a fox.")},
                {"allowed_tools", {"read_file"}}}}},
             {"goal_achieved", false}},
            &output_tokens));
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
    const std::vector<FakeRequest> requests = server.requests();
    for (size_t i = sent; i < requests.size(); ++i) {
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
      result.requests.push_back(m);
    }
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
