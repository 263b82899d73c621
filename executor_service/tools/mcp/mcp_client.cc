// The MCP client's protocol logic.
#include "executor_service/tools/mcp/mcp_client.h"

#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "executor_service/tools/json_schema.h"
#include "trace/span_context.h"
#include "trace/tracer.h"

namespace rein {
namespace {

// The trace context this thread works under (the call's execute_tool span), as the MCP
// community's convention carries it: W3C `traceparent` / `tracestate` in the request's _meta.
void AddTraceContext(nlohmann::json* meta) {
  const trace::SpanContext* context = trace::CurrentContext();
  if (context == nullptr || !context->valid()) return;
  (*meta)["traceparent"] = trace::FormatTraceparent(*context);
  if (!context->tracestate.empty()) (*meta)["tracestate"] = context->tracestate;
}

constexpr int kMethodNotFound = -32601;

// A short, printable excerpt of untrusted text for an error message.
std::string Excerpt(absl::string_view text) {
  std::string out;
  for (char c : text.substr(0, 200)) {
    out.push_back(c >= 0x20 && c < 0x7f ? c : '?');
  }
  if (text.size() > 200) out += "...";
  return out;
}

// A message from the server, parsed within kMaxMcpMessageDepth (its size is the transport's
// cap). INTERNAL naming the bound or the syntax error.
absl::StatusOr<nlohmann::json> ParseMessage(absl::string_view raw) {
  absl::StatusOr<nlohmann::json> parsed = ParseUntrustedJson(
      raw, "the server's message", {std::numeric_limits<size_t>::max(), kMaxMcpMessageDepth});
  if (!parsed.ok()) return absl::InternalError(parsed.status().message());
  return parsed;
}

bool IsSupportedVersion(const std::string& version) {
  for (const char* v : kMcpProtocolVersions) {
    if (version == v) return true;
  }
  return false;
}

std::string StringOr(const nlohmann::json& object, const char* key, std::string fallback) {
  if (object.is_object()) {
    auto it = object.find(key);
    if (it != object.end() && it->is_string()) return it->get<std::string>();
  }
  return fallback;
}

// Appends `piece` to `out` within `cap` bytes; sets `truncated` when something was cut.
void AppendCapped(std::string* out, absl::string_view piece, size_t cap, bool* truncated) {
  if (out->size() >= cap) {
    if (!piece.empty()) *truncated = true;
    return;
  }
  const size_t room = cap - out->size();
  if (piece.size() > room) {
    *truncated = true;
    piece = piece.substr(0, room);
  }
  out->append(piece.data(), piece.size());
}

// One content block as text.
std::string RenderBlock(const nlohmann::json& block) {
  const std::string type = StringOr(block, "type", "");
  if (type == "text") return StringOr(block, "text", "");
  if (type == "image" || type == "audio") {
    const std::string data = StringOr(block, "data", "");
    return absl::StrCat("[", type, ": ", StringOr(block, "mimeType", "unknown type"), ", ",
                        data.size() / 4 * 3, " bytes]");
  }
  if (type == "resource_link") {
    return absl::StrCat("[resource link: ", StringOr(block, "uri", ""), " ",
                        StringOr(block, "name", ""), "]");
  }
  if (type == "resource") {
    const nlohmann::json resource = block.value("resource", nlohmann::json::object());
    auto text = resource.find("text");
    if (text != resource.end() && text->is_string()) return text->get<std::string>();
    return absl::StrCat("[resource: ", StringOr(resource, "uri", ""), " (",
                        StringOr(resource, "mimeType", "binary"), ")]");
  }
  return absl::StrCat("[", type.empty() ? "untyped" : Excerpt(type), " content]");
}

}  // namespace

absl::Status McpClient::Initialize(absl::Time deadline) {
  nlohmann::json params = {
      {"protocolVersion", kMcpProtocolVersions[0]},
      {"capabilities", nlohmann::json::object()},
      {"clientInfo", {{"name", "rein-executor"}, {"version", "1"}}},
  };
  absl::StatusOr<nlohmann::json> result = Request("initialize", std::move(params), deadline);
  if (!result.ok()) {
    return absl::Status(result.status().code(),
                        absl::StrCat("initialize: ", result.status().message()));
  }
  const std::string version = StringOr(*result, "protocolVersion", "");
  if (!IsSupportedVersion(version)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "initialize: the server speaks MCP protocol version \"", Excerpt(version),
        "\"; rein speaks ", kMcpProtocolVersions[0], " and ", kMcpProtocolVersions[1]));
  }
  protocol_version_ = version;
  server_name_ = StringOr(result->value("serverInfo", nlohmann::json::object()), "name", "");
  transport_->SetProtocolVersion(version);
  return Notify("notifications/initialized", nlohmann::json::object(), deadline);
}

absl::StatusOr<std::vector<McpToolInfo>> McpClient::ListTools(absl::Time deadline) {
  std::vector<McpToolInfo> tools;
  std::string cursor;
  for (int page = 0; page < kMaxListPages; ++page) {
    nlohmann::json params = nlohmann::json::object();
    if (!cursor.empty()) params["cursor"] = cursor;
    absl::StatusOr<nlohmann::json> result = Request("tools/list", std::move(params), deadline);
    if (!result.ok()) {
      return absl::Status(result.status().code(),
                          absl::StrCat("tools/list: ", result.status().message()));
    }
    auto list = result->find("tools");
    if (list == result->end() || !list->is_array()) {
      return absl::InternalError("tools/list: the result has no \"tools\" array");
    }
    for (const nlohmann::json& tool : *list) {
      const std::string name = StringOr(tool, "name", "");
      if (name.empty()) return absl::InternalError("tools/list: a tool has no name");
      McpToolInfo info;
      info.name = name;
      info.description = StringOr(tool, "description", StringOr(tool, "title", ""));
      auto schema = tool.find("inputSchema");
      if (schema == tool.end() || !schema->is_object()) {
        return absl::InternalError(
            absl::StrCat("tools/list: tool \"", Excerpt(name), "\" has no inputSchema object"));
      }
      info.input_schema = *schema;
      const nlohmann::json annotations = tool.value("annotations", nlohmann::json::object());
      if (annotations.is_object()) {
        auto hint = annotations.find("readOnlyHint");
        info.read_only_hint = hint != annotations.end() && hint->is_boolean() && hint->get<bool>();
      }
      tools.push_back(std::move(info));
    }
    cursor = StringOr(*result, "nextCursor", "");
    if (cursor.empty()) return tools;
  }
  return absl::InternalError(
      absl::StrCat("tools/list: more than ", kMaxListPages, " pages; giving up"));
}

absl::StatusOr<McpCallResult> McpClient::CallTool(const std::string& name,
                                                  const nlohmann::json& arguments,
                                                  absl::Time deadline, size_t max_text_bytes) {
  progress_ = 0;
  nlohmann::json params = {{"name", name}, {"arguments", arguments}};
  // A progress token asks the server for notifications/progress while it works.
  params["_meta"] = {{"progressToken", absl::StrCat("rein-", next_id_)}};
  AddTraceContext(&params["_meta"]);
  absl::StatusOr<nlohmann::json> result = Request("tools/call", std::move(params), deadline);
  if (!result.ok()) return result.status();
  McpCallResult out;
  out.progress_notifications = progress_;
  auto is_error = result->find("isError");
  out.is_error = is_error != result->end() && is_error->is_boolean() && is_error->get<bool>();
  auto content = result->find("content");
  if (content != result->end() && content->is_array()) {
    bool first = true;
    for (const nlohmann::json& block : *content) {
      if (!first) AppendCapped(&out.text, "\n", max_text_bytes, &out.truncated);
      first = false;
      AppendCapped(&out.text, RenderBlock(block), max_text_bytes, &out.truncated);
    }
  }
  auto structured = result->find("structuredContent");
  if (structured != result->end() && !structured->is_null()) {
    out.structured = *structured;
    // Older servers put the JSON in a text block too; when they did not, show it.
    if (out.text.empty()) {
      AppendCapped(&out.text, structured->dump(), max_text_bytes, &out.truncated);
    }
  }
  return out;
}

absl::Status McpClient::Notify(const std::string& method, nlohmann::json params,
                               absl::Time deadline) {
  nlohmann::json message = {{"jsonrpc", "2.0"}, {"method", method}};
  if (!params.empty()) message["params"] = std::move(params);
  return transport_->Send(message.dump(), deadline);
}

void McpClient::HandleServerMessage(const nlohmann::json& message, absl::Time deadline) {
  const std::string method = message["method"].get<std::string>();
  auto id = message.find("id");
  if (id == message.end()) {  // a notification
    if (method == "notifications/tools/list_changed") tools_changed_ = true;
    if (method == "notifications/progress") ++progress_;
    return;  // logging, resources and the rest are of no use to a tool call
  }
  nlohmann::json reply = {{"jsonrpc", "2.0"}, {"id", *id}};
  if (method == "ping") {
    reply["result"] = nlohmann::json::object();
  } else {
    reply["error"] = {
        {"code", kMethodNotFound},
        {"message", absl::StrCat("rein's MCP client does not support \"", Excerpt(method),
                                 "\": sampling, elicitation and roots are refused (tools run "
                                 "unattended, under the router's control)")}};
  }
  // A refusal that cannot be delivered changes nothing for our own request.
  transport_->Send(reply.dump(), deadline).IgnoreError();
}

absl::StatusOr<std::string> McpClient::Next(absl::Time deadline) {
  if (batched_.empty()) {
    absl::StatusOr<std::string> raw = transport_->Receive(deadline);
    if (!raw.ok()) return raw;
    const size_t first = raw->find_first_not_of(" \t\r\n");
    if (first == std::string::npos || (*raw)[first] != '[') return raw;
    // A batch (allowed by 2025-03-26): its messages are handled one by one.
    absl::StatusOr<nlohmann::json> batch = ParseMessage(*raw);
    if (!batch.ok()) return batch.status();
    if (!batch->is_array() || batch->empty()) return raw;  // reported as malformed below
    for (const nlohmann::json& message : *batch) batched_.push_back(message.dump());
  }
  std::string next = std::move(batched_.front());
  batched_.pop_front();
  return next;
}

absl::StatusOr<nlohmann::json> McpClient::Request(const std::string& method, nlohmann::json params,
                                                  absl::Time deadline) {
  const int64_t id = next_id_++;
  nlohmann::json message = {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}};
  message["params"] = std::move(params);
  auto cancel = [&](absl::string_view reason) {
    // notifications/cancelled gets a moment of its own: our deadline has passed.
    nlohmann::json note = {{"requestId", id}, {"reason", std::string(reason)}};
    Notify("notifications/cancelled", std::move(note), absl::Now() + absl::Seconds(2))
        .IgnoreError();
  };
  absl::Status sent = transport_->Send(message.dump(), deadline);
  if (absl::IsDeadlineExceeded(sent)) {
    cancel("timeout");
    return absl::DeadlineExceededError(
        absl::StrCat(method, " timed out; notifications/cancelled sent"));
  }
  if (!sent.ok()) return sent;
  int others = 0;  // messages that were not the reply
  for (;; ++others) {
    if (others > kMaxMcpMessagesPerRequest) {
      return absl::ResourceExhaustedError(
          absl::StrCat("the server sent more than ", kMaxMcpMessagesPerRequest,
                       " messages without answering ", method, " (the cap per request)"));
    }
    absl::StatusOr<std::string> raw = Next(deadline);
    if (absl::IsDeadlineExceeded(raw.status())) {
      cancel("timeout");
      return absl::DeadlineExceededError(
          absl::StrCat(method, " timed out; notifications/cancelled sent"));
    }
    if (!raw.ok()) return raw.status();
    absl::StatusOr<nlohmann::json> parsed = ParseMessage(*raw);
    if (!parsed.ok()) return parsed.status();
    nlohmann::json& reply = *parsed;
    if (!reply.is_object() || StringOr(reply, "jsonrpc", "") != "2.0") {
      return absl::InternalError(
          absl::StrCat("the server sent a message that is not JSON-RPC 2.0: ", Excerpt(*raw)));
    }
    auto method_field = reply.find("method");
    if (method_field != reply.end()) {
      if (!method_field->is_string()) {
        return absl::InternalError(absl::StrCat(
            "the server sent a message whose method is not a string: ", Excerpt(*raw)));
      }
      HandleServerMessage(reply, deadline);
      continue;
    }
    auto reply_id = reply.find("id");
    if (reply_id == reply.end() || !reply_id->is_number_integer() ||
        reply_id->get<int64_t>() != id) {
      ++unknown_replies_;  // a late reply to a cancelled request, or the server's mistake
      continue;
    }
    auto error = reply.find("error");
    if (error != reply.end()) {
      int64_t code = 0;
      if (error->is_object()) {
        auto code_field = error->find("code");
        if (code_field != error->end() && code_field->is_number_integer()) {
          code = code_field->get<int64_t>();
        }
      }
      return absl::UnknownError(absl::StrCat("the server answered error ", code, ": ",
                                             Excerpt(StringOr(*error, "message", ""))));
    }
    auto result = reply.find("result");
    if (result == reply.end() || !result->is_object()) {
      return absl::InternalError(
          absl::StrCat("the server's reply has no result object: ", Excerpt(*raw)));
    }
    return std::move(*result);
  }
}

}  // namespace rein
