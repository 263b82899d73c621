// The `run_command` tool.
#include "executor_service/tools/run_command_tool.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace rein {

ToolResult RunSandboxedCommand(const Sandbox& sandbox, const ToolContext& context,
                               CommandRequest request, absl::string_view tool) {
  request.max_output_bytes = context.max_output_bytes;
  request.run_id = context.run_id;

  absl::StatusOr<CommandOutcome> outcome = sandbox.Run(*context.workspace, request);
  if (!outcome.ok()) return ToolResult::Failure(outcome.status());
  const ChildOutcome& child = outcome->child;
  if (outcome->outcome_unknown) {
    // Handed to the run's resident sandbox, which then died: never run again.
    ToolResult lost = ToolResult::Failure(
        "OUTCOME_UNKNOWN",
        absl::StrCat(tool, ": the sandbox ended while the command ran (", outcome->error,
                     "); whether it took effect is unknown, and it is not "
                     "run again"));
    lost.outcome_unknown = true;
    size_t kept = 0;
    lost.output = EscapeCommandOutput(child.output, context.max_output_bytes, &kept);
    return lost;
  }

  size_t consumed = 0;
  ToolResult result;
  result.output = EscapeCommandOutput(child.output, context.max_output_bytes, &consumed);
  const uint64_t omitted = child.output_bytes - consumed;
  result.truncated = omitted > 0;
  auto note = [&](const std::string& text) {
    if (!result.output.empty() && result.output.back() != '\n') result.output.push_back('\n');
    absl::StrAppend(&result.output, text, "\n");
  };
  if (omitted > 0) {
    note(absl::StrCat("[output truncated: ", omitted, " bytes omitted of ", child.output_bytes,
                      "]"));
  }
  result.exit_code = child.exit_code;
  if (child.timed_out) {
    result.ok = false;
    result.timed_out = true;
    result.error_code = "TIMEOUT";
    result.error_message =
        absl::StrCat(tool, ": timed out after ",
                     absl::FormatDuration(absl::Seconds(absl::ToInt64Seconds(child.elapsed))),
                     "; the command and every process it started were killed");
    note(absl::StrCat("[timed out: killed after ", absl::FormatDuration(child.elapsed), "]"));
  } else if (child.signal != 0) {
    result.ok = false;
    result.error_code = "NONZERO_EXIT";
    result.error_message = absl::StrCat(tool, ": killed by signal ", child.signal);
    note(absl::StrCat("[killed by signal ", child.signal, "]"));
  } else if (child.exit_code != 0) {
    result.ok = false;
    result.error_code = "NONZERO_EXIT";
    result.error_message = absl::StrCat(tool, ": exit status ", child.exit_code);
    note(absl::StrCat("[exit status ", child.exit_code, "]"));
  }
  return result;
}

RunCommandTool::RunCommandTool(const Sandbox* sandbox) : sandbox_(sandbox) {
  spec_.name = "run_command";
  spec_.description =
      "Run a command in the workspace, inside a sandbox: no network, a read-only system, the "
      "workspace (mounted at /workspace, also HOME) the only writable place besides a private "
      "/tmp; .git/hooks, .git/config and .git/commondir are read-only. Give either argv (run "
      "directly, "
      "argv[0] looked up in PATH) or shell (run by /bin/sh -c). stdout and stderr come back "
      "interleaved, capped, with bytes that are not UTF-8 or are control characters escaped "
      "as \\xNN. At the timeout the command and every process it started are killed.";
  spec_.input_schema = {
      {"type", "object"},
      {"additionalProperties", false},
      {"properties",
       {{"argv",
         {{"type", "array"},
          {"minItems", 1},
          {"maxItems", 4096},
          {"items", {{"type", "string"}, {"maxLength", kMaxCommandArgBytes}}},
          {"description", "Program and arguments, e.g. [\"ls\", \"-l\"]"}}},
        {"shell",
         {{"type", "string"},
          {"minLength", 1},
          {"maxLength", kMaxCommandArgBytes},
          {"description", "A shell command line, run by /bin/sh -c"}}},
        {"cwd",
         {{"type", "string"},
          {"minLength", 1},
          {"maxLength", 4096},
          {"default", "."},
          {"description", "Working directory relative to the workspace"}}},
        {"timeout_seconds",
         {{"type", "integer"},
          {"minimum", 1},
          {"maximum", kMaxCommandTimeoutSeconds},
          {"default", kDefaultCommandTimeoutSeconds},
          {"description", "Wall-clock limit; the whole process tree is killed after it"}}}}}};
  spec_.mutating = true;
  spec_.spawns_process = true;
  spec_.default_timeout = absl::Seconds(kDefaultCommandTimeoutSeconds);
}

ToolResult RunCommandTool::Execute(const ToolContext& context, const nlohmann::json& args) const {
  const bool has_argv = args.contains("argv");
  const bool has_shell = args.contains("shell");
  if (has_argv == has_shell) {
    return ToolResult::Failure("INVALID_ARGUMENT",
                               "args: give exactly one of argv (an array) and shell (a string)");
  }
  // maxLength counts characters; the kernel's limit is in bytes.
  auto too_long = [](const std::string& field, size_t size) {
    return ToolResult::Failure(
        "INVALID_ARGUMENT",
        absl::StrCat(field, ": must be at most ", kMaxCommandArgBytes,
                     " bytes (the kernel's limit for one argument), got ", size));
  };
  CommandRequest request;
  if (has_argv) {
    for (const nlohmann::json& arg : args["argv"]) {
      std::string value = arg.get<std::string>();
      if (value.find('\0') != std::string::npos) {
        return ToolResult::Failure("INVALID_ARGUMENT", "args.argv: must not contain NUL bytes");
      }
      if (value.size() > kMaxCommandArgBytes) {
        return too_long(absl::StrCat("args.argv[", request.argv.size(), "]"), value.size());
      }
      request.argv.push_back(std::move(value));
    }
    if (request.argv[0].empty()) {
      return ToolResult::Failure("INVALID_ARGUMENT", "args.argv[0]: must not be empty");
    }
  } else {
    const std::string shell = args["shell"].get<std::string>();
    if (shell.find('\0') != std::string::npos) {
      return ToolResult::Failure("INVALID_ARGUMENT", "args.shell: must not contain NUL bytes");
    }
    if (shell.size() > kMaxCommandArgBytes) return too_long("args.shell", shell.size());
    request.argv = {"/bin/sh", "-c", shell};
  }
  const std::string cwd = args["cwd"].get<std::string>();
  request.cwd = cwd == "." ? "" : cwd;
  const int64_t timeout_seconds = args["timeout_seconds"].get<int64_t>();
  const absl::Time own_deadline = context.clock->Now() + absl::Seconds(timeout_seconds);
  request.deadline = std::min(context.deadline, own_deadline);
  return RunSandboxedCommand(*sandbox_, context, std::move(request), "run_command");
}

}  // namespace rein
