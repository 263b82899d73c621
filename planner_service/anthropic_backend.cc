// The anthropic backend: renders the stage prompt, forces the stage tool, validates the reply.
#include "planner_service/anthropic_backend.h"

#include <cmath>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "common/usage_payload.h"
#include "planner_service/chat_content.h"
#include "planner_service/json_extract.h"
#include "planner_service/structured_output.h"
#include "trace/genai.h"
#include "trace/tracer.h"

namespace rein {
namespace {

using json = nlohmann::json;

constexpr size_t kMaxModelNameBytes = 256;

absl::Status InvalidOutput(const std::string& what) {
  return absl::InternalError(absl::StrCat("invalid output: ", what));
}

int64_t UsageField(const json& usage, const char* name) {
  auto it = usage.find(name);
  if (it == usage.end() || !it->is_number_integer()) return 0;
  const int64_t v = it->get<int64_t>();
  return v > 0 ? v : 0;
}

void AddUsage(const json& message, rein::v1::Usage* usage) {
  auto it = message.find("usage");
  if (it == message.end() || !it->is_object()) return;
  usage->set_input_tokens(usage->input_tokens() + UsageField(*it, "input_tokens"));
  usage->set_output_tokens(usage->output_tokens() + UsageField(*it, "output_tokens"));
  usage->set_cache_read_input_tokens(usage->cache_read_input_tokens() +
                                     UsageField(*it, "cache_read_input_tokens"));
  usage->set_cache_creation_input_tokens(usage->cache_creation_input_tokens() +
                                         UsageField(*it, "cache_creation_input_tokens"));
}

std::string Excerpt(const std::string& text) {
  std::string out = text.substr(0, 160);
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  }
  if (text.size() > 160) out.append("...");
  return out;
}

// What a refused reply says: the model's text, then the API's stop_details (category and
// explanation, either of which may be null), or a fixed sentence when there is neither.
std::string RefusalText(const json& message, const std::string& text) {
  std::string category;
  std::string explanation;
  if (auto details = message.find("stop_details");
      details != message.end() && details->is_object()) {
    auto c = details->find("category");
    if (c != details->end() && c->is_string()) category = c->get<std::string>();
    auto e = details->find("explanation");
    if (e != details->end() && e->is_string()) explanation = e->get<std::string>();
  }
  std::string api;
  if (!explanation.empty() || !category.empty()) {
    api = absl::StrCat("declined", category.empty() ? "" : absl::StrCat(" (", category, ")"),
                       explanation.empty() ? "" : absl::StrCat(": ", explanation));
  }
  if (text.empty() && api.empty()) return "the model declined to answer (stop_reason refusal)";
  if (api.empty()) return text;
  if (text.empty()) return api;
  return absl::StrCat(text, "\n", api);
}

const json& Ephemeral() {
  static const json* const kEphemeral = new json{{"type", "ephemeral"}};
  return *kEphemeral;
}

// Tokens as the estimate counts them: a block's JSON bytes / 4.
int64_t EstimatedTokens(const json& block) {
  return (static_cast<int64_t>(block.dump().size()) + 3) / 4;
}

json TextBlock(const std::string& text) { return {{"type", "text"}, {"text", text}}; }

}  // namespace

int64_t MinCacheableTokens(absl::string_view model) {
  for (absl::string_view m : {"opus-4-5", "opus-4-6", "haiku-4-5"}) {
    if (absl::StrContains(model, m)) return 4096;
  }
  for (absl::string_view m : {"sonnet-4-6", "haiku-3", "3-haiku", "3-5-haiku"}) {
    if (absl::StrContains(model, m)) return 2048;
  }
  return 1024;
}

PromptLayout ChooseLayout(const json& stage_tool, const std::string& stage_system,
                          const std::string& context, int64_t min_cacheable_tokens) {
  const int64_t prefix = EstimatedTokens(stage_tool) + EstimatedTokens(TextBlock(stage_system)) +
                         EstimatedTokens(TextBlock(context));
  // prefix >= 1.25 * minimum, in integers.
  return prefix * 4 >= min_cacheable_tokens * 5 ? PromptLayout::kCompact : PromptLayout::kShared;
}

AnthropicBackend::AnthropicBackend(AnthropicBackendOptions options,
                                   std::unique_ptr<AnthropicClient> client,
                                   std::unique_ptr<StagePrompts> prompts)
    : options_(std::move(options)), client_(std::move(client)), prompts_(std::move(prompts)) {}

absl::StatusOr<AnthropicBackend::StageAnswer> AnthropicBackend::Ask(
    const rein::v1::ModelOptions& model_options, int default_max_tokens,
    const RenderedPrompt& prompt,
    const google::protobuf::RepeatedPtrField<rein::v1::ToolSpec>& run_tools,
    const std::string& tool_name, absl::Time deadline) {
  StageAnswer answer;
  answer.model = model_options.model().empty() ? options_.model : model_options.model();
  if (answer.model.size() > kMaxModelNameBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("model.model: longer than ", kMaxModelNameBytes, " bytes"));
  }
  for (const char c : answer.model) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) {
      return absl::InvalidArgumentError("model.model: holds whitespace or a control character");
    }
  }
  if (model_options.max_tokens() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("model.max_tokens: ", model_options.max_tokens(), " is negative"));
  }
  const int max_tokens =
      model_options.max_tokens() > 0 ? model_options.max_tokens() : default_max_tokens;
  // The layout, from run-constant inputs only (the model, the run's tools, the goal).
  json tools = StageTools(run_tools);
  json stage_tool;
  for (const json& tool : tools) {
    if (tool["name"] == tool_name) stage_tool = tool;
  }
  const int64_t min_cacheable = options_.min_cacheable_tokens > 0
                                    ? options_.min_cacheable_tokens
                                    : MinCacheableTokens(answer.model);
  const bool compact = ChooseLayout(stage_tool, prompt.stage_system, prompt.context,
                                    min_cacheable) == PromptLayout::kCompact;
  if (compact) tools = json::array({std::move(stage_tool)});
  // Three breakpoints (the API allows four): after the tools and after the system prompt
  // (in the shared layout every stage of the run sends the same ones, and tool_choice, which
  // differs by stage, leaves them cached), and after the stage's run-constant context.
  tools.back()["cache_control"] = Ephemeral();
  json system = TextBlock(compact ? prompt.stage_system : prompt.system);
  system["cache_control"] = Ephemeral();
  json context = TextBlock(prompt.context);
  context["cache_control"] = Ephemeral();

  json body = {
      {"model", answer.model},
      {"max_tokens", max_tokens},
      {"system", json::array({std::move(system)})},
      // The run-constant context ends at a cache breakpoint: with the tools and the system
      // prompt before it, it is the prefix every call of this stage in the run shares.
      {"messages",
       json::array({{{"role", "user"},
                     {"content", json::array({std::move(context), TextBlock(prompt.user)})}}})},
      {"tools", std::move(tools)},
      {"tool_choice", {{"type", "tool"}, {"name", tool_name}, {"disable_parallel_tool_use", true}}},
  };
  if (model_options.has_temperature()) {
    const double t = model_options.temperature();
    if (!std::isfinite(t) || t < 0 || t > 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("model.temperature: ", t, " is outside [0, 1]"));
    }
    body["temperature"] = t;
  }

  // At most one continuation after a pause_turn.
  for (int turn = 0; turn < 2; ++turn) {
    ASSIGN_OR_RETURN(MessagesReply reply,
                     client_->CreateMessage(
                         body.dump(-1, ' ', false, json::error_handler_t::replace), deadline));
    const json& message = reply.message;
    AddUsage(message, &answer.usage);
    auto content = message.find("content");
    if (content == message.end() || !content->is_array()) {
      return absl::UnavailableError(absl::StrCat(
          "Messages API reply has no content array (type ",
          message.contains("type") ? message["type"].dump() : std::string("missing"), ")"));
    }
    const std::string stop_reason =
        message.contains("stop_reason") && message["stop_reason"].is_string()
            ? message["stop_reason"].get<std::string>()
            : std::string();
    if (trace::Span* span = trace::CurrentSpan()) {  // the request's chat span (tracing on)
      span->SetAttribute(trace::genai::kFinishReasons, std::vector<std::string>{stop_reason});
      if (message.contains("id") && message["id"].is_string()) {
        span->SetAttribute(trace::genai::kResponseId, message["id"].get<std::string>());
      }
      if (trace::Tracer::Global().options().capture_content)
        RecordChatContent(*span, body, message);
    }
    std::vector<std::string> texts;
    const json* tool_input = nullptr;
    std::string other_tool;
    for (const json& block : *content) {
      if (!block.is_object()) continue;
      const std::string type = block.contains("type") && block["type"].is_string()
                                   ? block["type"].get<std::string>()
                                   : std::string();
      if (type == "text" && block.contains("text") && block["text"].is_string()) {
        texts.push_back(block["text"].get<std::string>());
      } else if (type == "tool_use") {
        const std::string name = block.contains("name") && block["name"].is_string()
                                     ? block["name"].get<std::string>()
                                     : std::string();
        if (name == tool_name && tool_input == nullptr && block.contains("input")) {
          tool_input = &block["input"];
        } else if (name != tool_name && other_tool.empty()) {
          other_tool = name;
        }
      }
    }
    const std::string text = absl::StrJoin(texts, "\n");

    if (stop_reason == "pause_turn") {
      if (turn == 0) {
        body["messages"].push_back({{"role", "assistant"}, {"content", *content}});
        continue;
      }
      return WithUsage(InvalidOutput("the model paused its turn twice (stop_reason pause_turn)"),
                       answer.usage);
    }
    if (stop_reason == "refusal") {
      answer.refusal = RefusalText(message, text);
      return answer;
    }
    if (stop_reason == "max_tokens") {
      return WithUsage(InvalidOutput(absl::StrCat("the reply was cut off at max_tokens (",
                                                  max_tokens, "); raise model.max_tokens")),
                       answer.usage);
    }
    if (stop_reason == "model_context_window_exceeded") {
      return WithUsage(InvalidOutput("the reply was cut off: it filled the model's context window"),
                       answer.usage);
    }
    if (tool_input != nullptr) {
      if (!tool_input->is_object()) {
        return WithUsage(InvalidOutput(absl::StrCat(tool_name, " input is not a JSON object")),
                         answer.usage);
      }
      answer.output = *tool_input;
      return answer;
    }
    if (!other_tool.empty()) {
      return WithUsage(InvalidOutput(absl::StrCat("the model called \"", Excerpt(other_tool),
                                                  "\" instead of ", tool_name)),
                       answer.usage);
    }
    std::optional<absl::string_view> object = ExtractFirstJsonObject(text);
    if (!object.has_value()) {
      return WithUsage(InvalidOutput(absl::StrCat(
                           "the reply has no ", tool_name, " call and no JSON object in its text",
                           text.empty() ? std::string(" (no text)")
                                        : absl::StrCat(": \"", Excerpt(text), "\""))),
                       answer.usage);
    }
    answer.output = json::parse(object->begin(), object->end(), nullptr,
                                /*allow_exceptions=*/false);
    return answer;
  }
  return WithUsage(InvalidOutput("the model paused its turn twice (stop_reason pause_turn)"),
                   answer.usage);
}

namespace {

// The stage's response from the model's answer: the parsed output (or the refusal), with the
// usage and the backend label on every reply, and the usage on a parse failure too.
template <typename Response, typename Answer, typename Parse>
absl::StatusOr<Response> ToResponse(const Answer& answer, Parse parse) {
  Response response;
  if (answer.refusal.empty()) {
    absl::StatusOr<Response> parsed = parse(answer.output);
    if (!parsed.ok()) return WithUsage(parsed.status(), answer.usage);
    response = *std::move(parsed);
  } else {
    response.set_refusal(answer.refusal);
  }
  *response.mutable_usage() = answer.usage;
  response.set_backend(absl::StrCat("anthropic:", answer.model));
  return response;
}

}  // namespace

absl::StatusOr<rein::v1::PlanResponse> AnthropicBackend::Plan(const rein::v1::PlanRequest& request,
                                                              absl::Time deadline) {
  ASSIGN_OR_RETURN(RenderedPrompt prompt, prompts_->RenderPlan(request));
  ASSIGN_OR_RETURN(StageAnswer answer, Ask(request.model(), options_.plan_max_tokens, prompt,
                                           request.tools(), kPlanToolName, deadline));
  return ToResponse<rein::v1::PlanResponse>(
      answer, [&](const json& output) { return PlanFromOutput(output, request); });
}

absl::StatusOr<rein::v1::DecideResponse> AnthropicBackend::Decide(
    const rein::v1::DecideRequest& request, absl::Time deadline) {
  ASSIGN_OR_RETURN(RenderedPrompt prompt, prompts_->RenderDecide(request));
  ASSIGN_OR_RETURN(StageAnswer answer,
                   Ask(request.model(), options_.decide_max_tokens, prompt,
                       request.run_tools().empty() ? request.tools() : request.run_tools(),
                       kDecideToolName, deadline));
  return ToResponse<rein::v1::DecideResponse>(
      answer, [&](const json& output) { return DecideFromOutput(output, request); });
}

absl::StatusOr<rein::v1::EvaluateResponse> AnthropicBackend::Evaluate(
    const rein::v1::EvaluateRequest& request, absl::Time deadline) {
  ASSIGN_OR_RETURN(RenderedPrompt prompt, prompts_->RenderEvaluate(request));
  ASSIGN_OR_RETURN(StageAnswer answer, Ask(request.model(), options_.evaluate_max_tokens, prompt,
                                           request.run_tools(), kEvaluateToolName, deadline));
  return ToResponse<rein::v1::EvaluateResponse>(
      answer, [&](const json& output) { return EvaluateFromOutput(output, request); });
}

}  // namespace rein
