// MCP servers' tools as executor tools.
#include "executor_service/tools/mcp/mcp_tool.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/limits.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "executor_service/tools/json_schema.h"

namespace rein {
namespace {

// A reply may be this much larger than the output cap (JSON escaping, other fields) before
// it is dropped unread.
constexpr size_t kMessageOverhead = 64 << 10;

size_t MaxMessageBytes(size_t max_output_bytes) { return 2 * max_output_bytes + kMessageOverhead; }

bool ValidToolName(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') return false;
  }
  return true;
}

// The server's description, with what the server claims about the tool and what rein makes
// of it, for the model and the reviewer.
std::string Describe(const McpServerConfig& config, const McpToolInfo& info, bool mutating) {
  std::string out = absl::StrCat("[MCP server ", config.name, "] ", info.description);
  if (info.read_only_hint) {
    absl::StrAppend(&out, mutating
                              ? " [the server hints read-only (readOnlyHint); treated as "
                                "mutating: not trusted by the executor's config]"
                              : " [read-only (readOnlyHint, trusted by the executor's config)]");
  }
  return out;
}

// The tools `server` lists with the credentials of `namespace_name` (a session of its own).
absl::StatusOr<std::vector<McpToolInfo>> ListServerTools(const McpServer& server,
                                                         const Workspace& workspace,
                                                         const std::string& namespace_name) {
  const McpServerConfig& config = server.config();
  const absl::Time deadline = absl::Now() + config.startup_timeout;
  absl::StatusOr<std::unique_ptr<McpSession>> session =
      server.Open(workspace, namespace_name, deadline, MaxMessageBytes(kHardMaxOutputBytes));
  // Which credentials failed, when the server has one set per namespace.
  const std::string with =
      config.namespaces.empty()
          ? ""
          : absl::StrCat(" (with namespace ", namespace_name, "'s credentials)");
  if (!session.ok()) {
    return absl::Status(session.status().code(), absl::StrCat(session.status().message(), with));
  }
  absl::StatusOr<std::vector<McpToolInfo>> tools = (*session)->client().ListTools(deadline);
  const std::string why = (*session)->Close();
  if (!tools.ok()) {
    return absl::Status(
        tools.status().code(),
        RedactSecrets(config,
                      absl::StrCat("MCP server \"", config.name, "\": ", tools.status().message(),
                                   why.empty() ? "" : " (", why, why.empty() ? "" : ")", with)));
  }
  LogInfo("mcp server listed", {{"server", config.name},
                                {"namespace", namespace_name.empty() ? "*" : namespace_name},
                                {"protocol", (*session)->client().protocol_version()},
                                {"tools", absl::StrCat(tools->size())}});
  return tools;
}

// Two listings of one tool offer the same thing: one registered tool may serve both.
bool SameTool(const McpToolInfo& a, const McpToolInfo& b) {
  return a.description == b.description && a.read_only_hint == b.read_only_hint &&
         SchemaHash(a.input_schema) == SchemaHash(b.input_schema);
}

// Lists `server`'s tools (once per namespace when it has credentials per namespace) and
// registers them, each offered to the namespaces whose listing holds it.
absl::Status RegisterServerTools(const std::shared_ptr<const McpServer>& server,
                                 const Workspace& workspace, ToolRegistry* registry) {
  const McpServerConfig& config = server->config();
  std::vector<std::string> listings;
  for (const auto& [ns, unused] : config.namespaces) listings.push_back(ns);
  if (listings.empty()) listings.push_back("");  // one listing for every namespace
  struct Listed {
    McpToolInfo info;
    std::set<std::string> namespaces;
    std::string first;  // the namespace whose listing held it first
  };
  std::map<std::string, Listed> listed;  // by the server's tool name
  for (const std::string& ns : listings) {
    ASSIGN_OR_RETURN(std::vector<McpToolInfo> tools, ListServerTools(*server, workspace, ns));
    for (McpToolInfo& info : tools) {
      const std::string unsupported = UnsupportedSchemaFeature(info.input_schema);
      if (!unsupported.empty()) {
        LogWarning("mcp tool refused", {{"server", config.name},
                                        {"tool", info.name.substr(0, 128)},
                                        {"reason", unsupported.substr(0, 256)}});
        continue;
      }
      auto [it, fresh] = listed.try_emplace(info.name, Listed{info, {}, ns});
      if (!fresh && !SameTool(it->second.info, info)) {
        return absl::FailedPreconditionError(absl::StrCat(
            "MCP server \"", config.name, "\": tool \"", info.name.substr(0, 128),
            "\" is listed differently with namespace ", it->second.first, "'s and ", ns,
            "'s credentials (description, schema or readOnlyHint); one tool is offered alike to "
            "every namespace: give these namespaces servers of their own"));
      }
      if (!ns.empty()) it->second.namespaces.insert(ns);
    }
  }
  for (auto& [name, tool] : listed) {
    absl::Status added =
        registry->Add(std::make_unique<McpTool>(server, tool.info, std::move(tool.namespaces)));
    if (!added.ok()) {
      return absl::Status(added.code(),
                          absl::StrCat("MCP server \"", config.name, "\": ", added.message()));
    }
  }
  return absl::OkStatus();
}

}  // namespace

std::string McpToolName(const std::string& server, const std::string& tool) {
  const std::string full = absl::StrCat(server, "__", tool);
  if (ValidToolName(full)) return full;
  std::string name;
  for (char c : full) {
    name.push_back(absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '-' ? c : '_');
  }
  name = name.substr(0, 55);
  // SchemaHash is "sha256:<hex>"; its first 8 hex digits tell apart names cut alike.
  absl::StrAppend(&name, "_", SchemaHash(nlohmann::json(full)).substr(7, 8));
  return name;
}

McpTool::McpTool(std::shared_ptr<const McpServer> server, const McpToolInfo& info,
                 std::set<std::string> namespaces)
    : server_(std::move(server)), remote_name_(info.name), namespaces_(std::move(namespaces)) {
  const McpServerConfig& config = server_->config();
  spec_.name = McpToolName(config.name, info.name);
  // Mutating unless the operator says otherwise: by name, or by trusting the server's hint.
  auto override_it = config.mutating.find(info.name);
  spec_.mutating = override_it != config.mutating.end() ? override_it->second
                   : config.trust_read_only_hint        ? !info.read_only_hint
                                                        : true;
  // What the server says about its tools is shown to models and people: no secret in it.
  spec_.description = RedactSecrets(config, Describe(config, info, spec_.mutating));
  spec_.input_schema = info.input_schema;
  const std::string schema_text = info.input_schema.dump();
  const std::string redacted = RedactSecrets(config, schema_text);
  if (redacted != schema_text) {
    // A secret that was not inside a string leaves text that is no schema: nothing validates.
    spec_.input_schema =
        ParseUntrustedJson(redacted, "inputSchema", {redacted.size(), kMaxMcpMessageDepth})
            .value_or(nlohmann::json(nlohmann::json::value_t::discarded));
  }
  spec_.default_timeout = config.timeout;
  spec_.spawns_process = config.transport == McpServerConfig::Transport::kStdio;
  spec_.origin = absl::StrCat("mcp:", config.name);
  registered_hash_ = SchemaHash(info.input_schema);
}

bool McpTool::OfferedTo(absl::string_view namespace_name) const {
  return namespaces_.empty() ||
         namespaces_.count(std::string(NamespaceOrDefault(namespace_name))) > 0;
}

ToolResult McpTool::Execute(const ToolContext& context, const nlohmann::json& args) const {
  const McpServerConfig& config = server_->config();
  const absl::Time start = context.clock->Now();
  auto redact = [&](std::string text) { return RedactSecrets(config, std::move(text)); };
  auto failure = [&](const std::string& code, const std::string& message) {
    return ToolResult::Failure(
        code, redact(absl::StrCat(spec_.name, ": MCP server \"", config.name, "\": ", message)));
  };
  // The executor answers another namespace's call as an unknown tool before it gets here.
  if (!OfferedTo(context.namespace_name)) {
    return ToolResult::Failure("NOT_FOUND", absl::StrCat(spec_.name, ": no such tool"));
  }
  absl::StatusOr<std::unique_ptr<McpSession>> session =
      server_->Open(*context.workspace, context.namespace_name, context.deadline,
                    MaxMessageBytes(context.max_output_bytes));
  if (!session.ok()) {
    if (absl::IsDeadlineExceeded(session.status())) {
      ToolResult result = failure("TIMEOUT", std::string(session.status().message()));
      result.timed_out = true;
      return result;
    }
    return failure(absl::StatusCodeToString(session.status().code()),
                   std::string(session.status().message()));
  }
  McpClient& client = (*session)->client();
  auto gone = [&](const absl::Status& status) {
    const std::string why = (*session)->Close();
    return failure(absl::IsResourceExhausted(status) ? "OUTPUT_TOO_LARGE"
                   : absl::IsInternal(status)        ? "MCP_PROTOCOL_ERROR"
                                                     : "UNAVAILABLE",
                   absl::StrCat(status.message(), why.empty() ? "" : " (the server ended: ", why,
                                why.empty() ? "" : ")"));
  };

  // The tool set is pinned: a schema that changed since the executor listed it is refused.
  absl::StatusOr<std::vector<McpToolInfo>> listed = client.ListTools(context.deadline);
  if (!listed.ok()) {
    if (absl::IsDeadlineExceeded(listed.status())) {
      (*session)->Close();
      ToolResult result = failure("TIMEOUT", std::string(listed.status().message()));
      result.timed_out = true;
      return result;
    }
    return gone(listed.status());
  }
  auto current = std::find_if(listed->begin(), listed->end(),
                              [&](const McpToolInfo& t) { return t.name == remote_name_; });
  if (current == listed->end()) {
    (*session)->Close();
    return failure("FAILED_PRECONDITION",
                   absl::StrCat("no longer offers tool \"", remote_name_, "\""));
  }
  if (SchemaHash(current->input_schema) != registered_hash_) {
    (*session)->Close();
    return failure("FAILED_PRECONDITION",
                   absl::StrCat("the schema of tool ", spec_.name,
                                " changed since the executor listed it; restart the executor "
                                "and start a new run to use the new schema"));
  }

  absl::StatusOr<McpCallResult> called =
      client.CallTool(remote_name_, args, context.deadline, context.max_output_bytes);
  if (!called.ok()) {
    if (absl::IsDeadlineExceeded(called.status())) {
      (*session)->Close();  // kills the server's sandbox: nothing of it outlives the call
      ToolResult result = failure(
          "TIMEOUT", absl::StrCat("timed out after ",
                                  absl::FormatDuration(absl::Seconds(
                                      absl::ToInt64Seconds(context.clock->Now() - start))),
                                  "; notifications/cancelled was sent and the server stopped"));
      result.timed_out = true;
      return result;
    }
    if (absl::IsUnknown(called.status())) {  // the server's JSON-RPC error
      (*session)->Close();
      return failure("MCP_ERROR", std::string(called.status().message()));
    }
    if (absl::IsInternal(called.status())) {
      (*session)->Close();
      return failure("MCP_PROTOCOL_ERROR", std::string(called.status().message()));
    }
    ToolResult result = gone(called.status());
    result.truncated = absl::IsResourceExhausted(called.status());
    // The server went away after it got the call: a mutating one may have taken effect.
    result.outcome_unknown = spec_.mutating && absl::IsUnavailable(called.status());
    if (result.outcome_unknown) {
      result.error_message =
          absl::StrCat(result.error_message, "; the call is mutating and may have taken effect");
    }
    return result;
  }
  (*session)->Close();
  ToolResult result;
  result.ok = !called->is_error;
  result.output = redact(std::move(called->text));
  result.truncated = called->truncated;
  if (!called->structured.is_null()) {
    result.structured_content_json = redact(called->structured.dump());
  }
  if (result.truncated) {
    if (!result.output.empty() && result.output.back() != '\n') result.output.push_back('\n');
    absl::StrAppend(&result.output, "[output truncated at ", context.max_output_bytes, " bytes]\n");
  }
  if (called->is_error) {
    result.error_code = "TOOL_ERROR";
    result.error_message =
        absl::StrCat(spec_.name, ": the tool reported an error (isError); see the output");
  }
  return result;
}

absl::Status RegisterMcpTools(const McpConfig& config, const Sandbox* sandbox,
                              ToolRegistry* registry) {
  if (config.servers.empty()) return absl::OkStatus();
  // An empty scratch workspace for listing: nothing of a real workspace is exposed.
  std::string scratch = (std::filesystem::temp_directory_path() / "rein-mcp-list-XXXXXX").string();
  if (mkdtemp(scratch.data()) == nullptr) return absl::InternalError("mkdtemp failed");
  chmod(scratch.c_str(), 0777);  // the sandbox's uid may write there
  absl::Status status = absl::OkStatus();
  {
    UniqueFd dir(open(scratch.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    Workspace workspace("mcp-list", std::move(dir));
    for (const McpServerConfig& server_config : config.servers) {
      auto server = std::make_shared<const McpServer>(server_config, sandbox);
      status = RegisterServerTools(server, workspace, registry);
      if (!status.ok()) break;
    }
  }
  std::error_code ignored;
  std::filesystem::remove_all(scratch, ignored);
  return status;
}

}  // namespace rein
