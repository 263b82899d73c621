// Stage tool schemas and the validation of the model's structured answers.
#include "planner_service/structured_output.h"

#include <algorithm>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "common/status_macros.h"
#include "planner_service/json_extract.h"
#include "planner_service/proposal.h"

namespace rein {
namespace {

using json = nlohmann::json;

constexpr int kMaxSubtasks = 20;
constexpr int kMaxIdChars = 64;

absl::Status Invalid(const std::string& path, const std::string& problem) {
  return absl::InternalError(
      absl::StrCat("invalid output: ", path.empty() ? "" : absl::StrCat(path, ": "), problem));
}

json Text(int max_length, const char* description, int min_length = 0) {
  json s = {{"type", "string"}, {"maxLength", max_length}, {"description", description}};
  if (min_length > 0) s["minLength"] = min_length;
  return s;
}

json NamesEnum(const std::vector<std::string>& names) {
  json s = {{"type", "string"}};
  if (!names.empty()) s["enum"] = names;
  return s;
}

const char* TypeName(const json& v) {
  switch (v.type()) {
    case json::value_t::object: return "an object";
    case json::value_t::array: return "an array";
    case json::value_t::string: return "a string";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::null: return "null";
    case json::value_t::number_float: return "a number";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: return "an integer";
    default: return "a value of another type";
  }
}

bool HasType(const json& v, const std::string& type) {
  if (type == "object") return v.is_object();
  if (type == "array") return v.is_array();
  if (type == "string") return v.is_string();
  if (type == "boolean") return v.is_boolean();
  if (type == "integer") return v.is_number_integer();
  if (type == "number") return v.is_number();
  return false;
}

// Characters (UTF-8 code points) in `s`.
size_t CharCount(const std::string& s) {
  size_t n = 0;
  for (const char c : s) {
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++n;
  }
  return n;
}

std::string Quoted(const std::string& s) {
  std::string cut = s.size() > 80 ? absl::StrCat(s.substr(0, 80), "...") : s;
  return absl::StrCat("\"", cut, "\"");
}

std::vector<std::string> ToolNames(
    const google::protobuf::RepeatedPtrField<rein::v1::ToolSpec>& tools) {
  std::vector<std::string> names;
  for (const rein::v1::ToolSpec& t : tools) names.push_back(t.name());
  return names;
}

std::string Str(const json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

bool Bool(const json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_boolean() && it->get<bool>();
}

// `value` without its top-level null members: a null optional field means "not given".
json WithoutNulls(const json& value) {
  if (!value.is_object()) return value;
  json out = json::object();
  for (auto it = value.begin(); it != value.end(); ++it) {
    if (!it.value().is_null()) out[it.key()] = it.value();
  }
  return out;
}

}  // namespace

absl::Status ValidateAgainstSchema(const json& value, const json& schema, const std::string& path) {
  const std::string at = path.empty() ? "(top)" : path;
  if (auto type = schema.find("type"); type != schema.end() && type->is_string()) {
    if (!HasType(value, type->get<std::string>())) {
      return Invalid(at, absl::StrCat("must be ",
                                      type->get<std::string>() == "object"
                                          ? "an object"
                                          : absl::StrCat("a ", type->get<std::string>()),
                                      ", not ", TypeName(value)));
    }
  }
  if (auto values = schema.find("enum"); values != schema.end() && values->is_array()) {
    bool found = false;
    std::vector<std::string> names;
    for (const json& allowed : *values) {
      if (allowed == value) found = true;
      names.push_back(allowed.is_string() ? allowed.get<std::string>() : allowed.dump());
    }
    if (!found) {
      return Invalid(at, absl::StrCat(value.is_string() ? Quoted(value.get<std::string>())
                                                        : std::string("the value"),
                                      " is not one of: ", absl::StrJoin(names, ", ")));
    }
  }
  if (value.is_string()) {
    const size_t n = CharCount(value.get_ref<const std::string&>());
    if (auto min = schema.find("minLength");
        min != schema.end() && min->is_number_integer() && n < min->get<size_t>()) {
      return Invalid(at, n == 0 ? "must not be empty"
                                : absl::StrCat("shorter than ", min->get<size_t>(), " characters"));
    }
    if (auto max = schema.find("maxLength");
        max != schema.end() && max->is_number_integer() && n > max->get<size_t>()) {
      return Invalid(at, absl::StrCat(n, " characters, more than ", max->get<size_t>()));
    }
  }
  if (value.is_array()) {
    if (auto min = schema.find("minItems");
        min != schema.end() && min->is_number_integer() && value.size() < min->get<size_t>()) {
      return Invalid(at, absl::StrCat("fewer than ", min->get<size_t>(), " items"));
    }
    if (auto max = schema.find("maxItems");
        max != schema.end() && max->is_number_integer() && value.size() > max->get<size_t>()) {
      return Invalid(at, absl::StrCat(value.size(), " items, more than ", max->get<size_t>()));
    }
    if (auto items = schema.find("items"); items != schema.end() && items->is_object()) {
      for (size_t i = 0; i < value.size(); ++i) {
        RETURN_IF_ERROR(ValidateAgainstSchema(value[i], *items, absl::StrCat(path, "[", i, "]")));
      }
    }
  }
  if (value.is_object()) {
    if (auto required = schema.find("required"); required != schema.end()) {
      for (const json& name : *required) {
        if (name.is_string() && !value.contains(name.get<std::string>())) {
          return Invalid(path.empty() ? name.get<std::string>()
                                      : absl::StrCat(path, ".", name.get<std::string>()),
                         "is required");
        }
      }
    }
    if (auto properties = schema.find("properties"); properties != schema.end()) {
      for (auto it = properties->begin(); it != properties->end(); ++it) {
        auto field = value.find(it.key());
        if (field == value.end()) continue;
        RETURN_IF_ERROR(ValidateAgainstSchema(
            *field, it.value(), path.empty() ? it.key() : absl::StrCat(path, ".", it.key())));
      }
    }
  }
  return absl::OkStatus();
}

namespace {

// The schema of a call a reply proposes for another stage (plan: first_tool_call, evaluate:
// next_tool_call): {tool, args}, tool one of `tools`.
json ProposedCall(const char* description,
                  const google::protobuf::RepeatedPtrField<rein::v1::ToolSpec>& tools) {
  return {{"type", "object"},
          {"description", description},
          {"properties",
           {{"tool", NamesEnum(ToolNames(tools))},
            {"args",
             {{"type", "object"},
              {"description", "Arguments matching the tool's arguments schema."}}}}},
          {"required", {"tool", "args"}}};
}

}  // namespace

json PlanTool(const rein::v1::PlanRequest& request) {
  json subtask = {
      {"type", "object"},
      {"properties",
       {{"id", Text(kMaxIdChars, "Short id, unique in the run (never reuse an earlier id).",
                    /*min_length=*/1)},
        {"description", Text(2000, "What to do, concretely.", /*min_length=*/1)},
        {"allowed_tools",
         {{"type", "array"},
          {"items", NamesEnum(ToolNames(request.tools()))},
          {"description", "The run's tools this subtask may use; empty = all of them."}}}}},
      {"required", {"id", "description", "allowed_tools"}}};
  if (request.allow_delegation()) {
    // Offered only when the run may start child runs (Limits.max_children > 0).
    subtask["properties"]["delegate"] = {
        {"type", "boolean"},
        {"description",
         absl::StrCat("True: run this subtask as a child run, in parallel with the consecutive "
                      "delegated subtasks next to it (at most ",
                      request.max_parallel_children(), " in a row, ", request.children_left(),
                      " in all). Delegate independent, read-only work; keep writing subtasks "
                      "undelegated.")}};
  }
  return {
      {"name", kPlanToolName},
      {"description", "Submit the plan: the next subtasks, top of the stack first."},
      {"input_schema",
       {{"type", "object"},
        {"properties",
         {{"reasoning", Text(8000, "Brief reasoning behind the plan.")},
          {"subtasks", {{"type", "array"}, {"maxItems", kMaxSubtasks}, {"items", subtask}}},
          {"goal_achieved",
           {{"type", "boolean"},
            {"description", "True only when the ended subtasks show the goal is done."}}},
          {"notes", Text(2000, "Anything a person should look at; empty when nothing.")},
          {"first_tool_call",
           ProposedCall("Only when the request asks for it: the first call for the top subtask.",
                        request.tools())}}},
        {"required", {"reasoning", "subtasks", "goal_achieved"}}}}};
}

json DecideTool(const rein::v1::DecideRequest& request) {
  return {{"name", kDecideToolName},
          {"description",
           "Submit the next action: either tool_call (one allowed tool and its arguments) or "
           "human_query (a question for a person), not both."},
          {"input_schema",
           {{"type", "object"},
            {"properties",
             {{"reasoning", Text(8000, "Brief reasoning behind the choice.")},
              {"tool_call",
               {{"type", "object"},
                {"properties",
                 {{"tool", NamesEnum(ToolNames(request.run_tools().empty() ? request.tools()
                                                                           : request.run_tools()))},
                  {"args",
                   {{"type", "object"},
                    {"description", "Arguments matching the tool's arguments schema."}}}}},
                {"required", {"tool", "args"}}}},
              {"human_query", Text(2000, "A question for a person, when you cannot go on alone.",
                                   /*min_length=*/1)},
              {"notes", Text(2000, "Anything a person should look at; empty when nothing.")}}},
            {"required", {"reasoning"}}}}};
}

json EvaluateTool(const rein::v1::EvaluateRequest& request) {
  return {{"name", kEvaluateToolName},
          {"description", "Submit the verdict on the action for the current subtask."},
          {"input_schema",
           {{"type", "object"},
            {"properties",
             {{"reasoning", Text(8000, "Brief reasoning, from the observation only.")},
              {"status",
               {{"type", "string"},
                {"enum", {"COMPLETED", "FAILED", "NEEDS_MORE_WORK"}},
                {"description",
                 "COMPLETED: the subtask is done; FAILED: it cannot be done this way; "
                 "NEEDS_MORE_WORK: keep working on it."}}},
              {"summary", Text(2000, "One or two sentences: what was learned or done.")},
              {"goal_achieved",
               {{"type", "boolean"},
                {"description", "True only when this observation shows the whole goal is done."}}},
              {"notes", Text(2000, "Anything a person should look at; empty when nothing.")},
              {"next_tool_call",
               ProposedCall("Only when the request asks for it, with NEEDS_MORE_WORK and "
                            "goal_achieved false: the next call for the same subtask.",
                            request.run_tools())}}},
            {"required", {"reasoning", "status", "summary", "goal_achieved"}}}}};
}

json StageTools(const google::protobuf::RepeatedPtrField<rein::v1::ToolSpec>& run_tools) {
  rein::v1::PlanRequest plan;
  *plan.mutable_tools() = run_tools;
  rein::v1::DecideRequest decide;
  *decide.mutable_run_tools() = run_tools;
  rein::v1::EvaluateRequest evaluate;
  *evaluate.mutable_run_tools() = run_tools;
  return json::array({PlanTool(plan), DecideTool(decide), EvaluateTool(evaluate)});
}

namespace {

constexpr size_t kMaxProposedToolBytes = 256;

// The first call a plan proposes, as the model gave it (the router checks it against the
// applied plan and drops a bad one saying why): a tool name that is not a string and arguments
// that are not an object are kept as their JSON text, a string of arguments holding an object
// as that object.
rein::v1::ToolCall ProposedFirstCall(const json& proposal, const rein::v1::PlanRequest& request) {
  rein::v1::ToolCall call;
  auto text = [](const json& value) {
    return value.dump(-1, ' ', false, json::error_handler_t::replace);
  };
  if (!proposal.is_object()) {
    call.set_args_json(text(proposal));
    return call;
  }
  if (auto tool = proposal.find("tool"); tool != proposal.end()) {
    std::string name = tool->is_string() ? tool->get<std::string>() : text(*tool);
    if (name.size() > kMaxProposedToolBytes) name.resize(kMaxProposedToolBytes);
    call.set_tool(std::move(name));
  }
  if (auto args = proposal.find("args"); args != proposal.end()) {
    json value = *args;
    if (value.is_string() &&
        JsonNestingDepth(value.get_ref<const std::string&>()) <= kMaxJsonNesting) {
      json parsed = json::parse(value.get<std::string>(), nullptr, /*allow_exceptions=*/false);
      if (parsed.is_object()) value = std::move(parsed);
    }
    call.set_args_json(text(value));
  }
  for (const rein::v1::ToolSpec& spec : request.tools()) {
    if (spec.name() == call.tool()) call.set_mutating(spec.mutating());
  }
  return call;
}

}  // namespace

absl::StatusOr<rein::v1::PlanResponse> PlanFromOutput(const json& raw,
                                                      const rein::v1::PlanRequest& request) {
  json output = WithoutNulls(raw);
  // A bad first call is the router's to drop, not a reason to reject the plan: taken out here.
  std::optional<json> proposal;
  if (output.is_object()) {
    if (auto it = output.find("first_tool_call"); it != output.end()) {
      proposal = std::move(*it);
      output.erase(it);
    }
  }
  RETURN_IF_ERROR(ValidateAgainstSchema(output, PlanTool(request)["input_schema"], ""));
  std::set<std::string> ended;
  for (const rein::v1::SubTask& t : request.completed()) ended.insert(t.id());
  std::set<std::string> seen;
  rein::v1::PlanResponse response;
  response.set_reasoning(Str(output, "reasoning"));
  response.set_goal_achieved(Bool(output, "goal_achieved"));
  response.set_notes(Str(output, "notes"));
  const json& subtasks = output["subtasks"];
  for (size_t i = 0; i < subtasks.size(); ++i) {
    const json& in = subtasks[i];
    const std::string at = absl::StrCat("subtasks[", i, "]");
    const std::string id = in["id"].get<std::string>();
    if (!seen.insert(id).second) {
      return Invalid(absl::StrCat(at, ".id"), absl::StrCat(Quoted(id), " is used twice"));
    }
    if (ended.count(id) > 0) {
      return Invalid(absl::StrCat(at, ".id"),
                     absl::StrCat(Quoted(id), " is the id of an ended subtask"));
    }
    rein::v1::SubTask* task = response.add_subtasks();
    task->set_id(id);
    task->set_description(in["description"].get<std::string>());
    std::set<std::string> tools;
    const std::vector<std::string> known = ToolNames(request.tools());
    const json& allowed = in["allowed_tools"];
    for (size_t k = 0; k < allowed.size(); ++k) {
      const std::string name = allowed[k].get<std::string>();
      const std::string tool_at = absl::StrCat(at, ".allowed_tools[", k, "]");
      if (std::find(known.begin(), known.end(), name) == known.end()) {
        return Invalid(tool_at, absl::StrCat(Quoted(name), " is not one of the run's tools"));
      }
      if (!tools.insert(name).second) {
        return Invalid(tool_at, absl::StrCat(Quoted(name), " is listed twice"));
      }
      task->add_allowed_tools(name);
    }
    if (request.allow_delegation() && in.contains("delegate") && in["delegate"].is_boolean()) {
      task->set_delegate(in["delegate"].get<bool>());
    }
    task->set_status(rein::v1::SubTask::PENDING);
  }
  if (proposal) *response.mutable_first_call() = ProposedFirstCall(*proposal, request);
  return response;
}

absl::StatusOr<rein::v1::DecideResponse> DecideFromOutput(const json& output,
                                                          const rein::v1::DecideRequest& request) {
  json normalized = WithoutNulls(output);
  if (normalized.is_object()) {
    // An empty question stands for "no question".
    if (auto q = normalized.find("human_query");
        q != normalized.end() && q->is_string() && q->get_ref<const std::string&>().empty()) {
      normalized.erase(q);
    }
    // Some replies give the arguments as a string holding the object: accept that form.
    auto call = normalized.find("tool_call");
    if (call != normalized.end() && call->is_object()) {
      auto args = call->find("args");
      if (args != call->end() && args->is_string() &&
          JsonNestingDepth(args->get_ref<const std::string&>()) <= kMaxJsonNesting) {
        json parsed = json::parse(args->get<std::string>(), nullptr, /*allow_exceptions=*/false);
        if (parsed.is_object()) *args = std::move(parsed);
      }
    }
  }
  RETURN_IF_ERROR(ValidateAgainstSchema(normalized, DecideTool(request)["input_schema"], ""));
  const bool has_call = normalized.contains("tool_call") && !normalized["tool_call"].is_null();
  const bool has_query = !Str(normalized, "human_query").empty();
  if (has_call == has_query) {
    return Invalid("", has_call ? "both tool_call and human_query are given; give exactly one"
                                : "neither tool_call nor human_query is given; give exactly one");
  }
  rein::v1::DecideResponse response;
  response.set_reasoning(Str(normalized, "reasoning"));
  response.set_notes(Str(normalized, "notes"));
  if (has_query) {
    response.set_human_query(Str(normalized, "human_query"));
    return response;
  }
  const json& call = normalized["tool_call"];
  const std::string tool = call["tool"].get<std::string>();
  const std::vector<std::string> allowed = ToolNames(request.tools());
  if (std::find(allowed.begin(), allowed.end(), tool) == allowed.end()) {
    return Invalid(
        "tool_call.tool",
        absl::StrCat(Quoted(tool), " is not allowed for subtask ", Quoted(request.subtask().id()),
                     " (allowed: ", allowed.empty() ? "none" : absl::StrJoin(allowed, ", "), ")"));
  }
  rein::v1::ToolCall* out = response.mutable_tool_call();
  out->set_tool(tool);
  out->set_args_json(call["args"].dump(-1, ' ', false, json::error_handler_t::replace));
  for (const rein::v1::ToolSpec& spec : request.tools()) {
    if (spec.name() == tool) out->set_mutating(spec.mutating());
  }
  return response;
}

namespace {

// The next call an evaluation proposes, checked as a Decide reply for the same subtask would be;
// a bad one is dropped (next_call_dropped says why), never an error.
void ProposedCallFromOutput(const json& proposal, const rein::v1::EvaluateRequest& request,
                            rein::v1::EvaluateResponse* response) {
  rein::v1::DecideRequest decide;
  *decide.mutable_subtask() = request.subtask();
  *decide.mutable_run_tools() = request.run_tools();
  for (const rein::v1::ToolSpec& tool : request.run_tools()) {
    const auto& allowed = request.subtask().allowed_tools();
    if (std::find(allowed.begin(), allowed.end(), tool.name()) != allowed.end()) {
      *decide.add_tools() = tool;
    }
  }
  absl::StatusOr<rein::v1::DecideResponse> call =
      DecideFromOutput(json{{"reasoning", ""}, {"tool_call", proposal}}, decide);
  if (!call.ok()) {
    absl::string_view why = call.status().message();
    absl::ConsumePrefix(&why, "invalid output: ");  // not an error: the evaluation stands
    response->set_next_call_dropped(absl::StrCat("next_tool_call dropped: ", why));
    return;
  }
  *response->mutable_next_call() = call->tool_call();
  CheckProposedCall(request, response);
}

}  // namespace

absl::StatusOr<rein::v1::EvaluateResponse> EvaluateFromOutput(
    const json& raw, const rein::v1::EvaluateRequest& request) {
  json output = WithoutNulls(raw);
  // A bad proposal is dropped, not the evaluation: it is checked on its own below.
  std::optional<json> proposal;
  if (output.is_object()) {
    if (auto it = output.find("next_tool_call"); it != output.end()) {
      proposal = std::move(*it);
      output.erase(it);
    }
  }
  RETURN_IF_ERROR(ValidateAgainstSchema(output, EvaluateTool(request)["input_schema"], ""));
  rein::v1::EvaluateResponse response;
  response.set_reasoning(Str(output, "reasoning"));
  response.set_summary(Str(output, "summary"));
  response.set_goal_achieved(Bool(output, "goal_achieved"));
  response.set_notes(Str(output, "notes"));
  const std::string status = Str(output, "status");
  if (status == "COMPLETED") {
    response.set_status(rein::v1::RunEvent::Evaluation::COMPLETED);
  } else if (status == "FAILED") {
    response.set_status(rein::v1::RunEvent::Evaluation::FAILED);
  } else {
    response.set_status(rein::v1::RunEvent::Evaluation::NEEDS_MORE_WORK);
  }
  if (proposal) ProposedCallFromOutput(*proposal, request, &response);
  return response;
}

}  // namespace rein
