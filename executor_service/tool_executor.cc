// The executor's logic.
#include "executor_service/tool_executor.h"

#include <exception>
#include <new>
#include <optional>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "executor_service/json_schema.h"
#include "executor_service/mcp/mcp_config.h"
#include "executor_service/mcp/mcp_tool.h"

namespace rein {
namespace {

absl::Status CheckId(absl::string_view value, absl::string_view field, bool required) {
  if (required && value.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": must not be empty"));
  }
  if (value.size() > kMaxIdBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": must be at most ", kMaxIdBytes, " bytes, got ", value.size()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<ToolExecutor>> ToolExecutor::Create(const ExecutorOptions& options) {
  absl::StatusOr<std::unique_ptr<WorkspaceRoot>> root = WorkspaceRoot::Open(options.workspace_root);
  if (!root.ok()) return root.status();
  absl::StatusOr<std::unique_ptr<Sandbox>> sandbox = Sandbox::Create(options.sandbox);
  if (!sandbox.ok()) return sandbox.status();
  auto registry = std::make_unique<ToolRegistry>();
  absl::Status registered = RegisterReadOnlyTools(registry.get());
  if (registered.ok()) registered = RegisterMutatingTools(sandbox->get(), registry.get());
  if (!registered.ok()) return registered;
  if (!options.mcp_config.empty()) {
    absl::StatusOr<McpConfig> mcp = LoadMcpConfig(options.mcp_config);
    if (!mcp.ok()) return mcp.status();
    registered = RegisterMcpTools(*mcp, sandbox->get(), registry.get());
    if (!registered.ok()) {
      return absl::Status(registered.code(), absl::StrCat("mcp_config ", options.mcp_config, ": ",
                                                          registered.message()));
    }
  }
  return std::make_unique<ToolExecutor>(options, *std::move(root), *std::move(sandbox),
                                        std::move(registry));
}

ToolExecutor::ToolExecutor(ExecutorOptions options, std::unique_ptr<WorkspaceRoot> root,
                           std::unique_ptr<Sandbox> sandbox, std::unique_ptr<ToolRegistry> registry)
    : options_(std::move(options)),
      root_(std::move(root)),
      sandbox_(std::move(sandbox)),
      registry_(std::move(registry)) {}

std::vector<ToolSpec> ToolExecutor::ListTools() const {
  std::vector<ToolSpec> specs;
  for (const Tool* tool : registry_->tools()) specs.push_back(tool->spec());
  for (ToolSpec& spec : specs) {
    if (spec.origin.empty()) spec.origin = "builtin";
  }
  return specs;
}

std::string ToolExecutor::SandboxDescription() const { return sandbox_->Description(); }

absl::StatusOr<ToolResult> ToolExecutor::Execute(const ExecuteCall& call) const {
  absl::Status status = CheckId(call.call_id, "call_id", /*required=*/true);
  if (status.ok()) status = CheckId(call.run_id, "run_id", /*required=*/false);
  if (!status.ok()) return status;
  if (call.tool.empty()) return absl::InvalidArgumentError("tool: must not be empty");
  const Tool* tool = registry_->Find(call.tool);
  if (tool == nullptr) {
    std::vector<std::string> names;
    for (const Tool* t : registry_->tools()) names.push_back(t->spec().name);
    std::string shown = call.tool.substr(0, 128);
    return absl::InvalidArgumentError(absl::StrCat("tool: unknown tool \"", absl::CHexEscape(shown),
                                                   "\" (available: ", absl::StrJoin(names, ", "),
                                                   ")"));
  }
  status = ValidateWorkspaceName(call.workspace);
  if (!status.ok()) return status;
  if (call.timeout < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("limits.timeout: must not be negative");
  }
  if (call.max_output_bytes < 0) {
    return absl::InvalidArgumentError("limits.max_output_bytes: must not be negative");
  }

  const ToolSpec& spec = tool->spec();
  // A run sees the tools it started with: a schema changed since is not silently used.
  if (!call.tool_schema_hash.empty()) {
    const std::string now = SchemaHash(spec.input_schema);
    if (now != call.tool_schema_hash) {
      return ToolResult::Failure(
          "FAILED_PRECONDITION",
          absl::StrCat("the schema of tool ", spec.name, " changed since the run started (pinned ",
                       call.tool_schema_hash.substr(0, 80), ", now ", now,
                       "); start a new run to use it"));
    }
  }
  // The arguments are checked before anything touches the workspace.
  absl::StatusOr<nlohmann::json> args =
      ParseUntrustedJson(call.args_json.empty() ? "{}" : call.args_json, "args_json");
  if (!args.ok()) return ToolResult::Failure(args.status());
  status = ValidateJson(spec.input_schema, *args, "args");
  if (!status.ok()) return ToolResult::Failure(status);
  const nlohmann::json full_args = ApplyDefaults(spec.input_schema, *std::move(args));

  if (spec.mutating) {
    status = sandbox_->CheckMutationAllowed();
    if (!status.ok()) return ToolResult::Failure(status);
  }
  // A full executor is the caller's signal to go elsewhere, so it is an RPC error.
  std::optional<SandboxSlot> slot;
  if (spec.spawns_process) {
    absl::StatusOr<SandboxSlot> admitted = sandbox_->Admit();
    if (!admitted.ok()) return admitted.status();
    slot.emplace(*std::move(admitted));
  }

  absl::StatusOr<std::unique_ptr<Workspace>> workspace = root_->OpenWorkspace(call.workspace);
  if (!workspace.ok()) return ToolResult::Failure(workspace.status());

  ToolContext context;
  context.workspace = workspace->get();
  const absl::Duration timeout = std::min(
      call.timeout > absl::ZeroDuration() ? call.timeout : spec.default_timeout, kMaxToolTimeout);
  context.deadline = std::min(absl::Now() + timeout, call.deadline);
  context.max_output_bytes =
      call.max_output_bytes == 0
          ? kDefaultMaxOutputBytes
          : static_cast<size_t>(std::min<int64_t>(call.max_output_bytes, kHardMaxOutputBytes));
  try {
    ToolResult result = tool->Execute(context, full_args);
    if (result.outcome_unknown) return absl::UnknownError(result.error_message);
    if (spec.mutating && sandbox_->state() == Sandbox::State::kUnsandboxed) {
      if (!result.output.empty() && result.output.back() != '\n') result.output.push_back('\n');
      absl::StrAppend(&result.output, kUnsandboxedNote, "\n");
    }
    return result;
  } catch (const std::bad_alloc&) {
    return ToolResult::Failure("RESOURCE_EXHAUSTED", absl::StrCat(spec.name, ": out of memory"));
  } catch (const std::exception& e) {
    return ToolResult::Failure("INTERNAL", absl::StrCat(spec.name, ": ", e.what()));
  }
}

}  // namespace rein
