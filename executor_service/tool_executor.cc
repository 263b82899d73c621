// The executor's logic.
#include "executor_service/tool_executor.h"

#include <exception>
#include <new>
#include <optional>
#include <system_error>
#include <thread>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/limits.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/status_macros.h"
#include "executor_service/tools/declared_tool.h"
#include "executor_service/tools/json_schema.h"
#include "executor_service/tools/mcp/mcp_config.h"
#include "executor_service/tools/mcp/mcp_tool.h"

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

// Untrusted strings are cut before they go into a log line.
std::string ForLog(const std::string& s) { return s.size() > 256 ? s.substr(0, 256) : s; }

// A call that failed before or instead of running (a normal reply with ok=false).
ExecuteOutcome FailedOutcome(const absl::Status& status) {
  ExecuteOutcome outcome;
  outcome.result = ToolResult::Failure(status);
  return outcome;
}

// Work run on a thread of its own beside the caller's; Wait (or the destructor, so that no
// early return leaves it running) returns once it is done. Without a thread (none could be
// made) it runs inline.
class Beside {
 public:
  explicit Beside(const std::function<void()>& work) {
    try {
      thread_ = std::thread(work);
    } catch (const std::system_error&) {
      work();
    }
  }
  ~Beside() { Wait(); }
  Beside(const Beside&) = delete;
  Beside& operator=(const Beside&) = delete;
  void Wait() {
    if (thread_.joinable()) thread_.join();
  }

 private:
  std::thread thread_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<ToolExecutor>> ToolExecutor::Create(const ExecutorOptions& options) {
  absl::StatusOr<std::unique_ptr<WorkspaceRoot>> root = WorkspaceRoot::Open(options.workspace_root);
  if (!root.ok()) return root.status();
  absl::StatusOr<std::unique_ptr<Sandbox>> sandbox = Sandbox::Create(options.sandbox);
  if (!sandbox.ok()) return sandbox.status();
  auto registry = std::make_unique<ToolRegistry>();
  absl::Status registered = RegisterReadOnlyTools(registry.get());
  if (registered.ok()) registered = RegisterMutatingTools(sandbox->get(), registry.get());
  if (registered.ok() && !options.tools_dir.empty()) {
    registered = LoadDeclaredTools(options.tools_dir, sandbox->get(), registry.get());
  }
  if (!registered.ok()) return registered;
  CallJournalOptions journal_options = options.journal;
  journal_options.workspace_root = options.workspace_root;
  journal_options.executor_id = options.executor_id;
  journal_options.clock = options.clock;
  absl::StatusOr<std::unique_ptr<CallJournal>> journal = CallJournal::Open(journal_options);
  if (!journal.ok()) return journal.status();
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
                                        std::move(registry), *std::move(journal));
}

ToolExecutor::ToolExecutor(ExecutorOptions options, std::unique_ptr<WorkspaceRoot> root,
                           std::unique_ptr<Sandbox> sandbox, std::unique_ptr<ToolRegistry> registry,
                           std::unique_ptr<CallJournal> journal)
    : options_(std::move(options)),
      root_(std::move(root)),
      sandbox_(std::move(sandbox)),
      registry_(std::move(registry)),
      journal_(std::move(journal)) {}

std::vector<ToolSpec> ToolExecutor::ListTools(absl::string_view namespace_name) const {
  std::vector<ToolSpec> specs;
  for (const Tool* tool : registry_->tools()) {
    if (tool->OfferedTo(namespace_name)) specs.push_back(tool->spec());
  }
  for (ToolSpec& spec : specs) {
    if (spec.origin.empty()) spec.origin = "builtin";
  }
  return specs;
}

std::string ToolExecutor::SandboxDescription() const { return sandbox_->Description(); }

absl::StatusOr<SandboxSlot> ToolExecutor::AdmitWorkspaceCopy() const { return sandbox_->Admit(); }

absl::StatusOr<ToolResult> ToolExecutor::Execute(const ExecuteCall& call) const {
  absl::StatusOr<ExecuteOutcome> outcome = Run(call, /*journaled=*/false);
  if (!outcome.ok()) return outcome.status();
  return std::move(outcome->result);
}

absl::StatusOr<ExecuteOutcome> ToolExecutor::ExecuteOnce(const ExecuteCall& call) const {
  return Run(call, /*journaled=*/journal_ != nullptr);
}

absl::StatusOr<int> ToolExecutor::ForgetRun(const std::string& run_id) const {
  absl::Status status = CheckId(run_id, "run_id", /*required=*/true);
  if (!status.ok()) return status;
  sandbox_->ForgetRun(run_id);  // with or without a journal
  if (options_.history != nullptr) options_.history->MarkEnded(run_id);
  if (journal_ == nullptr) return 0;
  return journal_->ForgetRun(run_id);
}

absl::StatusOr<ExecuteOutcome> ToolExecutor::Run(const ExecuteCall& call, bool journaled) const {
  const absl::Time start = options_.clock->Now();
  absl::Status status = CheckId(call.call_id, "call_id", /*required=*/true);
  if (status.ok()) status = CheckId(call.run_id, "run_id", /*required=*/false);
  if (!status.ok()) return status;
  if (call.tool.empty()) return absl::InvalidArgumentError("tool: must not be empty");
  if (!call.namespace_name.empty())
    RETURN_IF_ERROR(CheckNamespaceName(call.namespace_name, "namespace"));
  const Tool* tool = registry_->Find(call.tool);
  // Another namespace's tool is answered as a tool that does not exist: no hint that it does.
  if (tool == nullptr || !tool->OfferedTo(call.namespace_name)) {
    std::vector<std::string> names;
    for (const ToolSpec& spec : ListTools(call.namespace_name)) names.push_back(spec.name);
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
      return FailedOutcome(absl::FailedPreconditionError(absl::StrCat(
          "the schema of tool ", spec.name, " changed since the run started (pinned ",
          call.tool_schema_hash.substr(0, 80), ", now ", now, "); start a new run to use it")));
    }
  }
  // The arguments are checked before anything touches the workspace.
  absl::StatusOr<nlohmann::json> args =
      ParseUntrustedJson(call.args_json.empty() ? "{}" : call.args_json, "args_json");
  if (!args.ok()) return FailedOutcome(args.status());
  status = ValidateJson(spec.input_schema, *args, "args");
  if (!status.ok()) return FailedOutcome(status);
  nlohmann::json full_args = ApplyDefaults(spec.input_schema, *std::move(args));

  if (spec.mutating) {
    status = sandbox_->CheckMutationAllowed();
    if (!status.ok()) return FailedOutcome(status);
  }
  // Every mutating call, whatever the tool, runs at most once per call_id across the
  // executors sharing the workspace root; the journal answers a repeated one.
  const bool journal_call = journaled && spec.mutating;
  const JournalCall journal_key{call.call_id, call.run_id, call.tool, call.args_json};
  if (journal_call) {
    // Waiting for a call running elsewhere stops a little before the caller's deadline, so
    // that "in progress" reaches the caller rather than DEADLINE_EXCEEDED.
    const absl::Time wait_until =
        call.deadline == absl::InfiniteFuture()
            ? start + kMaxToolTimeout
            : call.deadline - std::min(absl::Seconds(1), (call.deadline - start) / 10);
    // With a snapshot due, the claim's flush runs beside it (RunClaimed); the call itself
    // runs only once the claim is durable either way.
    absl::StatusOr<JournalVerdict> verdict = SnapshotDue(spec)
                                                 ? journal_->BeginUnflushed(journal_key, wait_until)
                                                 : journal_->Begin(journal_key, wait_until);
    if (!verdict.ok()) return verdict.status();
    switch (verdict->kind) {
      case JournalVerdict::Kind::kRun: break;
      case JournalVerdict::Kind::kReplay: {
        ExecuteOutcome outcome;
        outcome.result = std::move(verdict->reply.result);
        // A call recorded as of unknown outcome stays unknown, never a replayed failure.
        outcome.outcome_unknown = outcome.result.error_code == "OUTCOME_UNKNOWN";
        outcome.replayed = !outcome.outcome_unknown;
        outcome.executor_id = verdict->reply.executor_id;
        outcome.duration = verdict->reply.duration;
        return outcome;
      }
      case JournalVerdict::Kind::kRunning:
        return absl::AbortedError(absl::StrCat("in progress: ", verdict->detail,
                                               "; ask again later with the same call_id"));
      case JournalVerdict::Kind::kUnknown: {
        ExecuteOutcome outcome;
        outcome.result = ToolResult::Failure(
            "OUTCOME_UNKNOWN", absl::StrCat("whether the call ran is unknown: ", verdict->detail));
        outcome.outcome_unknown = true;
        outcome.executor_id = verdict->executor_id;
        return outcome;
      }
    }
  }
  // After the claim: a call answered from the journal, or running elsewhere, takes neither a
  // slot nor a snapshot.
  std::function<void()> flush_claim;
  if (journal_call && SnapshotDue(spec)) flush_claim = [&] { journal_->FlushClaim(journal_key); };
  absl::StatusOr<ExecuteOutcome> outcome =
      RunClaimed(call, *tool, std::move(full_args), flush_claim);
  if (journal_call) {
    if (!outcome.ok()) {
      journal_->Abandon(journal_key);  // refused before anything ran (a full executor)
    } else {
      JournalReply reply;
      reply.result = outcome->result;
      reply.executor_id = options_.executor_id;
      reply.duration = options_.clock->Now() - start;
      // When the reply cannot be recorded, a repeat of this call is answered "unknown".
      (void)journal_->Finish(journal_key, reply);
    }
  }
  return outcome;
}

std::string ToolExecutor::SnapshotBeforeCall(const ExecuteCall& call) const {
  const WorkspaceHistory* history = options_.history;
  if (history == nullptr || history->retention() <= 0) return "";
  const absl::Time start = options_.clock->Now();
  absl::StatusOr<CopyStats> stats =
      history->SnapshotBeforeCall(call.run_id, call.workspace, call.call_id, call.deadline);
  if (!stats.ok()) {
    // The call still runs; a fork from before it will be refused (no snapshot).
    Metrics::Global().Add("rein_executor_workspace_snapshots_skipped_total", 1);
    LogWarning("workspace snapshot skipped", {{"run_id", ForLog(call.run_id)},
                                              {"call_id", ForLog(call.call_id)},
                                              {"error", ForLog(stats.status().ToString())}});
    return std::string(stats.status().message());
  }
  Metrics::Global().Add("rein_executor_workspace_snapshots_total", 1);
  Metrics::Global().Add("rein_executor_workspace_snapshot_bytes_total", stats->bytes);
  LogInfo(
      "workspace snapshot",
      {{"run_id", ForLog(call.run_id)},
       {"call_id", ForLog(call.call_id)},
       {"files", absl::StrCat(stats->files)},
       {"bytes", absl::StrCat(stats->bytes)},
       {"allocated_bytes", absl::StrCat(stats->allocated_bytes)},
       {"duration_ms", absl::StrCat(absl::ToDoubleMilliseconds(options_.clock->Now() - start))}});
  return "";
}

bool ToolExecutor::SnapshotDue(const ToolSpec& spec) const {
  return spec.mutating && options_.history != nullptr && options_.history->retention() > 0;
}

absl::StatusOr<ExecuteOutcome> ToolExecutor::RunClaimed(
    const ExecuteCall& call, const Tool& tool, nlohmann::json full_args,
    const std::function<void()>& flush_claim) const {
  const ToolSpec& spec = tool.spec();
  // A command, and the snapshot before a mutating call, run under --max_concurrent: a full
  // executor refuses the call before anything is copied or run. That is the caller's signal
  // to go elsewhere, so it is an RPC error.
  const bool snapshot_due = SnapshotDue(spec);
  SandboxSlot slot;
  if (spec.spawns_process || snapshot_due) {
    absl::StatusOr<SandboxSlot> admitted = sandbox_->Admit();
    if (!admitted.ok()) return admitted.status();
    slot = *std::move(admitted);
  }
  // The claim's flush (an fsync, mostly a wait for the disk) and the snapshot (a copy) overlap;
  // the claim is durable before anything below can run the call.
  std::optional<Beside> flushing;
  if (flush_claim) flushing.emplace(flush_claim);
  const std::string snapshot_skipped = snapshot_due ? SnapshotBeforeCall(call) : "";
  flushing.reset();
  if (!spec.spawns_process) slot.Release();  // the snapshot's; the tool itself needs none

  absl::StatusOr<std::unique_ptr<Workspace>> workspace = root_->OpenWorkspace(call.workspace);
  if (!workspace.ok()) {
    ExecuteOutcome failed = FailedOutcome(workspace.status());
    failed.snapshot_skipped = snapshot_skipped;
    return failed;
  }

  ToolContext context;
  context.workspace = workspace->get();
  context.run_id = call.run_id;
  context.namespace_name = call.namespace_name;
  context.clock = options_.clock;
  const absl::Duration timeout = std::min(
      call.timeout > absl::ZeroDuration() ? call.timeout : spec.default_timeout, kMaxToolTimeout);
  context.deadline = std::min(options_.clock->Now() + timeout, call.deadline);
  context.max_output_bytes =
      call.max_output_bytes == 0
          ? kDefaultMaxOutputBytes
          : static_cast<size_t>(std::min<int64_t>(call.max_output_bytes, kHardMaxOutputBytes));
  ExecuteOutcome outcome;
  try {
    outcome.result = tool.Execute(context, full_args);
    if (outcome.result.outcome_unknown) {
      // The tool cannot tell whether the call took effect (an MCP server died mid-call):
      // recorded as such, so a repeat of this call_id is answered "unknown" too.
      outcome.result = ToolResult::Failure("OUTCOME_UNKNOWN", outcome.result.error_message);
      outcome.result.outcome_unknown = true;
      outcome.outcome_unknown = true;
    } else if ((spec.mutating || spec.spawns_process) &&
               sandbox_->state() == Sandbox::State::kUnsandboxed) {
      ToolResult& result = outcome.result;
      if (!result.output.empty() && result.output.back() != '\n') result.output.push_back('\n');
      absl::StrAppend(&result.output, kUnsandboxedNote, "\n");
    }
  } catch (const std::bad_alloc&) {
    outcome.result =
        ToolResult::Failure("RESOURCE_EXHAUSTED", absl::StrCat(spec.name, ": out of memory"));
  } catch (const std::exception& e) {
    outcome.result = ToolResult::Failure("INTERNAL", absl::StrCat(spec.name, ": ", e.what()));
  }
  outcome.executor_id = options_.executor_id;
  outcome.snapshot_skipped = snapshot_skipped;
  return outcome;
}

}  // namespace rein
