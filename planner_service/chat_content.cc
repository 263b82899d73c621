// A model request's content on its `chat` span, in the GenAI conventions' attributes.
#include "planner_service/chat_content.h"

#include <string>

#include "trace/genai.h"

namespace rein {
namespace {

using json = nlohmann::json;

std::string StringOr(const json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// A Messages API content block as a conventions' part.
json Part(const json& block) {
  if (block.is_string()) return {{"type", "text"}, {"content", block}};
  if (!block.is_object()) return {{"type", "unknown"}};
  const std::string type = StringOr(block, "type");
  if (type == "text") return {{"type", "text"}, {"content", StringOr(block, "text")}};
  if (type == "tool_use") {
    return {{"type", "tool_call"},
            {"id", StringOr(block, "id")},
            {"name", StringOr(block, "name")},
            {"arguments", block.value("input", json::object())}};
  }
  if (type == "tool_result") {
    return {{"type", "tool_call_response"},
            {"id", StringOr(block, "tool_use_id")},
            {"response", block.value("content", json())}};
  }
  return {{"type", type.empty() ? std::string("unknown") : type}};
}

json Parts(const json& content) {
  json parts = json::array();
  if (content.is_array()) {
    for (const json& block : content) parts.push_back(Part(block));
  } else if (!content.is_null()) {
    parts.push_back(Part(content));
  }
  return parts;
}

std::string Dump(const json& value) {
  std::string out = value.dump(-1, ' ', false, json::error_handler_t::replace);
  if (out.size() > kMaxContentBytes) out.resize(kMaxContentBytes);
  return out;
}

}  // namespace

void RecordChatContent(trace::Span& span, const json& body, const json& message) {
  if (!span.recording()) return;
  if (auto system = body.find("system"); system != body.end()) {
    span.SetAttribute(trace::genai::kSystemInstructions, Dump(Parts(*system)));
  }
  json input = json::array();
  if (auto messages = body.find("messages"); messages != body.end() && messages->is_array()) {
    for (const json& m : *messages) {
      if (!m.is_object()) continue;
      input.push_back(
          {{"role", StringOr(m, "role")}, {"parts", Parts(m.value("content", json()))}});
    }
  }
  span.SetAttribute(trace::genai::kInputMessages, Dump(input));
  json output = {{"role", "assistant"},
                 {"parts", Parts(message.value("content", json()))},
                 {"finish_reason", StringOr(message, "stop_reason")}};
  span.SetAttribute(trace::genai::kOutputMessages, Dump(json::array({output})));
}

}  // namespace rein
