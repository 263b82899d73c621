// The executor's logic: checks a call, validates its arguments against the tool's schema,
// opens its workspace and runs the tool within limits. No gRPC here.
#ifndef REIN_EXECUTOR_SERVICE_TOOL_EXECUTOR_H_
#define REIN_EXECUTOR_SERVICE_TOOL_EXECUTOR_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "executor_service/journal/call_journal.h"
#include "executor_service/sandbox/sandbox.h"
#include "executor_service/tools/tool.h"
#include "executor_service/tools/tool_registry.h"
#include "executor_service/workspace/workspace.h"
#include "executor_service/workspace/workspace_history.h"

namespace rein {

// Configuration of one executor process (filled from flags in main).
struct ExecutorOptions {
  std::string workspace_root;  // --workspace_root (required)
  std::string executor_id;     // --executor_id; reported in every reply
  SandboxOptions sandbox;      // --sandbox, --allow_unsandboxed, --max_concurrent, ...
  std::string tools_dir;       // --tools_dir: declared tools, one JSON file each ("" = none)
  // The call journal under workspace_root (--journal_retention, ...); workspace_root and
  // executor_id are filled from the fields above.
  CallJournalOptions journal;
  std::string mcp_config;  // --mcp_config: a JSON file of MCP servers ("" = none)
  // Times the calls and the journal (journal.clock is set from it). Not owned; never null.
  Clock* clock = RealClock();
  // Not owned; null = no snapshots. With one, a mutating call that is about to run (after its
  // journal claim) first snapshots its workspace (WorkspaceHistory::SnapshotBeforeCall), while
  // the claim is flushed; the call runs once both are done.
  const WorkspaceHistory* history = nullptr;
};

// The note every reply of a mutating tool carries when the executor runs unsandboxed.
inline constexpr const char* kUnsandboxedNote =
    "[ran unsandboxed: the executor was started with --sandbox=none --allow_unsandboxed]";

// What Execute answers for one call: the tool's result, or what the call journal knows.
struct ExecuteOutcome {
  ToolResult result;
  // The result is the recorded reply of an earlier run of this call_id (nothing ran now);
  // `executor_id` and `duration` are the original run's.
  bool replayed = false;
  std::string executor_id;
  absl::Duration duration = absl::ZeroDuration();
  // The executor that started this call died mid-call (or its record cannot be trusted):
  // whether it ran is unknown. result.ok is false, error_code "OUTCOME_UNKNOWN".
  bool outcome_unknown = false;
  // Why no workspace snapshot was taken before this mutating call ("" when one was, or none
  // was due); see ExecuteResponse.snapshot_skipped.
  std::string snapshot_skipped;
};

// One Execute request, converted from the wire.
struct ExecuteCall {
  std::string call_id;
  std::string run_id;
  std::string workspace;
  std::string tool;
  std::string args_json;
  absl::Duration timeout = absl::ZeroDuration();  // 0 = the tool's default_timeout
  int64_t max_output_bytes = 0;                   // 0 = kDefaultMaxOutputBytes
  absl::Time deadline = absl::InfiniteFuture();   // the caller's own deadline
  std::string tool_schema_hash;  // the hash the run pinned ("" = none); see SchemaHash
  std::string namespace_name;    // ExecuteRequest.namespace ("" = "default")
};

// Longest call_id / run_id accepted.
inline constexpr size_t kMaxIdBytes = 256;
// Longest timeout a call may ask for.
inline constexpr absl::Duration kMaxToolTimeout = absl::Hours(1);

// Runs tool calls. Keeps nothing between calls; thread-safe.
class ToolExecutor {
 public:
  // Opens options.workspace_root, sets up the sandbox (see Sandbox::Create) and registers
  // every tool: the built-in ones, then the declared ones of options.tools_dir (a bad tool
  // file is an error naming its path: the executor never starts half-configured).
  static absl::StatusOr<std::unique_ptr<ToolExecutor>> Create(const ExecutorOptions& options);

  // `journal` may be null (then mutating calls are not journaled: tests of single tools).
  ToolExecutor(ExecutorOptions options, std::unique_ptr<WorkspaceRoot> root,
               std::unique_ptr<Sandbox> sandbox, std::unique_ptr<ToolRegistry> registry,
               std::unique_ptr<CallJournal> journal = nullptr);

  const Sandbox& sandbox() const { return *sandbox_; }

  const ExecutorOptions& options() const { return options_; }

  // The spec of every tool offered to `namespace_name` ("" = "default"), sorted by name.
  std::vector<ToolSpec> ListTools(absl::string_view namespace_name = "") const;

  // True when a tool named `name` is registered.
  bool HasTool(absl::string_view name) const { return registry_->Find(name) != nullptr; }
  // True when a tool named `name` is registered and mutating.
  bool IsMutating(absl::string_view name) const {
    const Tool* tool = registry_->Find(name);
    return tool != nullptr && tool->spec().mutating;
  }

  // How tools are sandboxed, as ListTools reports it.
  std::string SandboxDescription() const;

  // Runs `call`. Returns INVALID_ARGUMENT (naming the field: call_id, run_id, tool,
  // workspace, limits.timeout, limits.max_output_bytes, namespace) when the request itself is
  // wrong; a tool not offered to the call's namespace is an unknown tool, word for word.
  // Everything else, including bad tool arguments (code INVALID_ARGUMENT, naming args.<field>),
  // a missing workspace (NOT_FOUND), a path outside the workspace (PERMISSION_DENIED) and a
  // deadline (TIMEOUT), is a ToolResult with ok=false; so is a mutating tool while the
  // sandbox is unavailable (FAILED_PRECONDITION, saying why and how to fix it).
  // RESOURCE_EXHAUSTED when a command, or the workspace snapshot before a mutating call, would
  // pass --max_concurrent (nothing is copied or run). A call whose
  // tool_schema_hash differs from the tool's schema now fails (FAILED_PRECONDITION, "the
  // schema of tool X changed since the run started") before anything runs. UNKNOWN when a
  // mutating call may or may not have taken effect (ToolResult::outcome_unknown).
  absl::StatusOr<ToolResult> Execute(const ExecuteCall& call) const;

  // Execute, made idempotent on call_id for every mutating tool through the call journal
  // (read-only calls simply run again): a finished call's recorded reply comes back with
  // `replayed`; a call still running on a live executor is waited for until shortly before
  // call.deadline, then ABORTED ("in progress": ask again later); a call whose executor died
  // mid-call is `outcome_unknown`. INVALID_ARGUMENT when the call_id was used for another call.
  absl::StatusOr<ExecuteOutcome> ExecuteOnce(const ExecuteCall& call) const;

  // A slot of --max_concurrent for a workspace copy made outside a tool call (a fork's,
  // CopyWorkspace), held while it copies: RESOURCE_EXHAUSTED naming --max_concurrent when
  // the executor is full. Snapshots before mutating calls take theirs in ExecuteOnce.
  absl::StatusOr<SandboxSlot> AdmitWorkspaceCopy() const;

  // Forgets the journal of a run that ended. Returns the number of calls forgotten.
  absl::StatusOr<int> ForgetRun(const std::string& run_id) const;

  // The call journal (null when there is none).
  CallJournal* journal() const { return journal_.get(); }

 private:
  // Execute's checks, then (when `journaled`) the journal, then RunClaimed.
  absl::StatusOr<ExecuteOutcome> Run(const ExecuteCall& call, bool journaled) const;
  // Snapshots the workspace of a mutating call about to run, when there is a history, within
  // the call's deadline. Returns why no snapshot was taken ("" when one was, or none was due).
  std::string SnapshotBeforeCall(const ExecuteCall& call) const;
  // Whether a call of `spec` snapshots its workspace before it runs.
  bool SnapshotDue(const ToolSpec& spec) const;
  // Runs a checked (and claimed) call: admission, the snapshot, workspace, the tool within
  // its limits. `flush_claim` (when set) makes the journal's claim durable: it runs beside
  // the snapshot and returns before the tool runs; it is not called when admission refuses.
  absl::StatusOr<ExecuteOutcome> RunClaimed(const ExecuteCall& call, const Tool& tool,
                                            nlohmann::json full_args,
                                            const std::function<void()>& flush_claim) const;

  ExecutorOptions options_;
  std::unique_ptr<WorkspaceRoot> root_;
  std::unique_ptr<Sandbox> sandbox_;
  std::unique_ptr<ToolRegistry> registry_;
  std::unique_ptr<CallJournal> journal_;
};

}  // namespace rein

#endif  // REIN_EXECUTOR_SERVICE_TOOL_EXECUTOR_H_
