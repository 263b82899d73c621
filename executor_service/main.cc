// rein-executor: serves rein.v1.Executor (tools confined to workspaces under --workspace_root).
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/reflection.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/log.h"
#include "common/malloc_tuning.h"
#include "common/metrics.h"
#include "common/server.h"
#include "common/tls.h"
#include "executor_service/executor_grpc.h"
#include "executor_service/sandbox/sandbox_mode.h"
#include "executor_service/tool_executor.h"
#include "executor_service/workspace/workspace_history.h"
#include "trace/otel_setup.h"

ABSL_FLAG(std::string, listen, "127.0.0.1:50053", "HOST:PORT to serve gRPC on");
ABSL_FLAG(int, metrics_port, 0, "Port of the Prometheus /metrics endpoint on 127.0.0.1; 0 = off");
ABSL_FLAG(std::string, metrics_listen, "",
          "HOST:PORT of the Prometheus /metrics endpoint, instead of --metrics_port (e.g. "
          "0.0.0.0:9090 for a scraper on another host)");
ABSL_FLAG(std::string, workspace_root, "", "Directory holding the workspaces (required)");
ABSL_FLAG(std::string, executor_id, "", "Id reported in every reply; default hostname:pid");
ABSL_FLAG(int, workspace_history, 16,
          "Workspace snapshots kept per run (taken before each mutating call, for ForkRun's "
          "workspace_at_fork); 0 = none");
ABSL_FLAG(int64_t, workspace_history_max_bytes, int64_t{1} << 30,
          "Bytes really allocated (not apparent sizes) by one run's workspace snapshots "
          "together, and by one workspace copy for a fork; a snapshot that would pass it is "
          "not taken (the call runs, the reply says why), a copy is refused");
ABSL_FLAG(int64_t, workspace_history_max_files, 100000,
          "Files, links and directories of one run's workspace snapshots together, and of one "
          "workspace copy for a fork");
ABSL_FLAG(std::string, sandbox, "bwrap", "How mutating tools are sandboxed: bwrap or none");
ABSL_FLAG(bool, allow_unsandboxed, false, "Permit --sandbox=none");
ABSL_FLAG(int, max_concurrent, 8,
          "Sandboxed commands and workspace copies (the snapshot before a mutating call, a "
          "fork's CopyWorkspace) at once; past it they fail with RESOURCE_EXHAUSTED");
ABSL_FLAG(std::vector<std::string>, protected_paths, {},
          "Workspace paths tools may not write, in addition to .git/hooks, .git/config and "
          ".git/commondir "
          "(comma-separated)");
ABSL_FLAG(std::string, bwrap, "/usr/bin/bwrap", "The bubblewrap binary");
ABSL_FLAG(std::string, sandbox_cgroup, "",
          "cgroup directory (v1 pids or delegated v2 with +pids) for per-command cgroups; "
          "empty = detect a writable v1 pids hierarchy; off = none");
ABSL_FLAG(bool, sandbox_prefork, true,
          "Fork each pooled per-command cgroup's process ahead of time, already inside it, so "
          "that a command does not wait for the kernel to move it there");
ABSL_FLAG(std::string, sandbox_spawner, "",
          "rein-spawner, the small program each pooled process (--sandbox_prefork) runs, so "
          "that bubblewrap's start does not tear down a copy of the executor; default: next to "
          "this executable (given, it must be an executable); without it, a fork of the "
          "executor, with a warning");
// The resident sandbox is a performance mode, off by default: by default every command gets a
// fresh bubblewrap sandbox (fresh namespaces), an isolation that holds by construction; a
// resident sandbox instead cleans up after each command of a run from an enumerated list of
// what a command may change (executor_service/SANDBOX.md, "Resident sandbox").
ABSL_FLAG(bool, sandbox_resident, false,
          "Performance mode, off by default (executor_service/SANDBOX.md, \"Resident "
          "sandbox\"): the commands of one run start inside one sandbox set up by its first "
          "command, each as a fresh process that is killed with everything it started before "
          "the reply; never shared between runs. Weaker isolation between a run's commands "
          "than the default fresh sandbox per command. Without rein-sandbox-init next to the "
          "executor (and no --sandbox_init), every command gets a sandbox of its own, with a "
          "warning");
ABSL_FLAG(std::string, sandbox_init, "",
          "rein-sandbox-init, pid 1 of a resident sandbox; default: next to this executable "
          "(given, it must be an executable)");
ABSL_FLAG(absl::Duration, sandbox_resident_idle, absl::Seconds(60),
          "A resident sandbox unused this long is removed");
ABSL_FLAG(int, sandbox_max_residents, 16,
          "Resident sandboxes at most (one per run); past it the least recently used is removed");
ABSL_FLAG(int64_t, sandbox_max_memory_bytes, int64_t{4} << 30,
          "RLIMIT_AS of every sandboxed process");
ABSL_FLAG(int64_t, sandbox_max_file_bytes, int64_t{1} << 30,
          "RLIMIT_FSIZE: largest file a command may write");
ABSL_FLAG(int64_t, sandbox_cpu_seconds, 600, "RLIMIT_CPU of every sandboxed process");
ABSL_FLAG(int64_t, sandbox_max_open_files, 1024, "RLIMIT_NOFILE of every sandboxed process");
ABSL_FLAG(std::string, tools_dir, "",
          "Directory of declared tools, one JSON file each (see executor_service/TOOLS.md); "
          "a bad file refuses start");
ABSL_FLAG(int64_t, sandbox_max_processes, 512,
          "Processes per command: pids.max of its cgroup, and RLIMIT_NPROC");
// The call journal (executor_service/journal/call_journal.h) under --workspace_root.
ABSL_FLAG(absl::Duration, journal_retention, absl::Hours(24 * 7),
          "How long the call journal keeps a run's records when the router never said the run "
          "ended (ForgetRun); at least 2h, longer than any call may run");
ABSL_FLAG(absl::Duration, journal_liveness_timeout, absl::Seconds(5),
          "An executor whose journal heartbeat (touched every second) is older than this is "
          "dead: its unfinished mutating calls are answered \"outcome unknown\"; at least 3s");

// MCP servers (see executor_service/MCP.md).
ABSL_FLAG(std::string, mcp_config, "",
          "A JSON file of MCP servers whose tools the executor offers (see MCP.md); a bad "
          "file or a server that cannot be listed refuses start");
// mTLS (docs/SECURITY.md): with these, the port serves TLS only, every client must present a
// certificate signed by --tls_ca, and every call but health must come from a certificate that
// carries a name in --allowed_clients. The files are reloaded within 10 s of changing.
ABSL_FLAG(std::string, tls_cert, "", "PEM certificate of this service");
ABSL_FLAG(std::string, tls_key, "", "PEM private key of --tls_cert");
ABSL_FLAG(std::string, tls_ca, "",
          "PEM CA that signs the routers' certificates (one CA per role: not the CA of "
          "public clients)");
ABSL_FLAG(std::string, allowed_clients, rein::kRouterIdentity,
          "With TLS: comma-separated DNS names (subjectAltName) of the clients that may call; "
          "a certificate from --tls_ca without one of them is refused with PERMISSION_DENIED");
ABSL_FLAG(bool, allow_unauthenticated, false,
          "Serve without TLS on a non-loopback --listen address (anyone who reaches the port "
          "may run tools in any workspace)");

namespace {

[[noreturn]] void Die(const std::string& message) {
  std::fprintf(stderr, "rein-executor: %s\n", message.c_str());
  std::exit(2);
}

// absl::ParseCommandLine exits 1 on a bad flag; check every flag first so that usage errors
// exit 2 with a message, as for the other rein binaries.
void CheckFlags(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    absl::string_view arg = argv[i];
    if (arg == "--") break;
    if (!absl::StartsWith(arg, "-") || arg == "-") {
      Die(absl::StrCat("unexpected argument \"", arg, "\" (flags only)"));
    }
    arg.remove_prefix(absl::StartsWith(arg, "--") ? 2 : 1);
    const size_t eq = arg.find('=');
    absl::string_view name = arg.substr(0, eq);
    // Abseil's usage flags are not in the registry; ParseCommandLine handles them.
    if (name == "help" || name == "helpfull" || name == "helpshort" || name == "helppackage" ||
        name == "helpon" || name == "helpmatch" || name == "version" || name == "only_check_args") {
      continue;
    }
    absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
    bool negated = false;
    if (flag == nullptr && absl::StartsWith(name, "no")) {
      flag = absl::FindCommandLineFlag(name.substr(2));
      negated = flag != nullptr;
    }
    if (flag == nullptr) Die(absl::StrCat("unknown flag --", name));
    if (flag->IsOfType<bool>()) {
      if (negated && eq != absl::string_view::npos) {
        Die(absl::StrCat("--", name, " takes no value"));
      }
      if (eq == absl::string_view::npos) continue;
    } else if (eq == absl::string_view::npos) {
      if (i + 1 >= argc) Die(absl::StrCat("missing value for --", name));
      ++i;
      std::string error;
      if (!flag->ParseFrom(argv[i], &error)) {
        Die(absl::StrCat("bad value for --", name, ": ", error));
      }
      continue;
    }
    std::string error;
    if (!flag->ParseFrom(arg.substr(eq + 1), &error)) {
      Die(absl::StrCat("bad value for --", name, ": ", error));
    }
  }
}

// `name` in the directory of this executable (symbolic links resolved), or "".
std::string NextToExecutable(const std::string& name) {
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0) return "";
  std::string path(self, static_cast<size_t>(n));
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return "";
  return absl::StrCat(path.substr(0, slash + 1), name);
}

// A helper program: `given` (a flag's value, dies unless an absolute path of an executable),
// else `name` next to this executable when it is there, else "" after logging `if_missing`.
std::string HelperBinary(const std::string& given, absl::string_view flag, const std::string& name,
                         absl::string_view if_missing) {
  if (!given.empty()) {
    if (given[0] != '/' || access(given.c_str(), X_OK) != 0) {
      Die(absl::StrCat(flag, ": \"", given, "\" is not an executable given by its absolute path"));
    }
    return given;
  }
  const std::string next_to_us = NextToExecutable(name);
  if (!next_to_us.empty() && access(next_to_us.c_str(), X_OK) == 0) return next_to_us;
  rein::LogError(absl::StrCat(name, " not found next to the executable: ", if_missing, " (", flag,
                              "=PATH names it)"),
                 {{"looked_for", next_to_us}});
  return "";
}

std::string DefaultExecutorId() {
  char host[256] = {0};
  if (gethostname(host, sizeof(host) - 1) != 0) host[0] = '\0';
  return absl::StrCat(host[0] != '\0' ? host : "localhost", ":", getpid());
}

}  // namespace

int main(int argc, char** argv) {
  rein::BlockTerminationSignals();
  CheckFlags(argc, argv);
  std::vector<char*> rest = absl::ParseCommandLine(argc, argv);
  if (rest.size() > 1) Die(absl::StrCat("unexpected argument \"", rest[1], "\""));
  rein::SetLogService("rein-executor");
  // Traces over OTLP/HTTP when OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT is set (docs/TRACING.md);
  // declared before the service, so that the spans it ends on the way out are still exported.
  std::unique_ptr<rein::trace::BatchSpanExporter> trace_exporter =
      rein::trace::InstallTracingFromEnv("rein-executor");
  // The GenAI metrics over OTLP too, when an endpoint is set (last exported at exit).
  std::unique_ptr<rein::trace::PeriodicMetricExporter> metrics_exporter =
      rein::trace::InstallMetricsFromEnv("rein-executor");
  rein::LogMallocTunables();

  rein::ExecutorOptions options;
  options.workspace_root = absl::GetFlag(FLAGS_workspace_root);
  options.executor_id = absl::GetFlag(FLAGS_executor_id);
  options.tools_dir = absl::GetFlag(FLAGS_tools_dir);
  options.mcp_config = absl::GetFlag(FLAGS_mcp_config);
  rein::SandboxOptions& sandbox = options.sandbox;
  absl::StatusOr<rein::SandboxMode> mode = rein::ParseSandboxMode(absl::GetFlag(FLAGS_sandbox));
  if (!mode.ok()) Die(absl::StrCat("--sandbox ", mode.status().message()));
  sandbox.mode = *mode;
  sandbox.allow_unsandboxed = absl::GetFlag(FLAGS_allow_unsandboxed);
  sandbox.max_concurrent = absl::GetFlag(FLAGS_max_concurrent);
  sandbox.protected_paths = absl::GetFlag(FLAGS_protected_paths);
  sandbox.bwrap_path = absl::GetFlag(FLAGS_bwrap);
  sandbox.cgroup = absl::GetFlag(FLAGS_sandbox_cgroup);
  sandbox.prefork = absl::GetFlag(FLAGS_sandbox_prefork);
  if (sandbox.prefork) {
    // Without it as safe, slower: each command's execve tears down a copy of the executor.
    sandbox.spawner_binary = HelperBinary(absl::GetFlag(FLAGS_sandbox_spawner), "--sandbox_spawner",
                                          "rein-spawner", "spawners are forks of the executor");
  }
  sandbox.resident = absl::GetFlag(FLAGS_sandbox_resident);
  sandbox.resident_idle = absl::GetFlag(FLAGS_sandbox_resident_idle);
  sandbox.max_residents = absl::GetFlag(FLAGS_sandbox_max_residents);
  if (sandbox.resident) {
    // Without it a sandbox per command, as without the flag: slower, not less safe.
    sandbox.init_binary =
        HelperBinary(absl::GetFlag(FLAGS_sandbox_init), "--sandbox_init", "rein-sandbox-init",
                     "no resident sandboxes (--nosandbox_resident silences this)");
    if (sandbox.init_binary.empty()) sandbox.resident = false;
    if (sandbox.resident_idle <= absl::ZeroDuration()) {
      Die("--sandbox_resident_idle must be positive");
    }
    if (sandbox.max_residents < 1) {
      Die(absl::StrCat("--sandbox_max_residents must be at least 1, got ", sandbox.max_residents));
    }
  }
  const std::pair<const char*, int64_t> limits[] = {
      {"sandbox_max_memory_bytes", absl::GetFlag(FLAGS_sandbox_max_memory_bytes)},
      {"sandbox_max_file_bytes", absl::GetFlag(FLAGS_sandbox_max_file_bytes)},
      {"sandbox_cpu_seconds", absl::GetFlag(FLAGS_sandbox_cpu_seconds)},
      {"sandbox_max_open_files", absl::GetFlag(FLAGS_sandbox_max_open_files)},
      {"sandbox_max_processes", absl::GetFlag(FLAGS_sandbox_max_processes)}};
  for (const auto& [name, value] : limits) {
    if (value < 1) Die(absl::StrCat("--", name, " must be at least 1, got ", value));
  }
  sandbox.limits.address_space_bytes = static_cast<uint64_t>(limits[0].second);
  sandbox.limits.file_size_bytes = static_cast<uint64_t>(limits[1].second);
  sandbox.limits.cpu_seconds = static_cast<uint64_t>(limits[2].second);
  sandbox.limits.open_files = static_cast<uint64_t>(limits[3].second);
  sandbox.limits.processes = static_cast<uint64_t>(limits[4].second);
  sandbox.max_pids = static_cast<uint64_t>(limits[4].second);
  if (sandbox.max_concurrent < 1) {
    Die(absl::StrCat("--max_concurrent must be at least 1, got ", sandbox.max_concurrent));
  }
  options.journal.retention = absl::GetFlag(FLAGS_journal_retention);
  options.journal.liveness_timeout = absl::GetFlag(FLAGS_journal_liveness_timeout);
  if (options.journal.retention < absl::Hours(2)) {
    Die(absl::StrCat("--journal_retention must be at least 2h, got ",
                     absl::FormatDuration(options.journal.retention)));
  }
  if (options.journal.liveness_timeout < absl::Seconds(3)) {
    Die(absl::StrCat("--journal_liveness_timeout must be at least 3s, got ",
                     absl::FormatDuration(options.journal.liveness_timeout)));
  }
  if (options.executor_id.empty()) options.executor_id = DefaultExecutorId();
  if (options.workspace_root.empty()) Die("--workspace_root=DIR is required");
  struct stat st;
  if (stat(options.workspace_root.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    Die(absl::StrCat("--workspace_root: ", options.workspace_root, " is not a directory"));
  }
  if (sandbox.mode == rein::SandboxMode::kNone && !sandbox.allow_unsandboxed) {
    Die("--sandbox=none is refused unless --allow_unsandboxed is also given");
  }
  const rein::TlsFiles tls{absl::GetFlag(FLAGS_tls_cert), absl::GetFlag(FLAGS_tls_key),
                           absl::GetFlag(FLAGS_tls_ca)};
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials =
      rein::MakeRouterOnlyCredentials(
          {absl::GetFlag(FLAGS_listen), tls, absl::GetFlag(FLAGS_allowed_clients),
           absl::GetFlag(FLAGS_allow_unauthenticated), "run tools in any workspace"});
  if (!credentials.ok()) Die(std::string(credentials.status().message()));
  absl::StatusOr<std::string> metrics_listen = rein::MetricsListenAddress(
      absl::GetFlag(FLAGS_metrics_listen), absl::GetFlag(FLAGS_metrics_port));
  if (!metrics_listen.ok()) Die(std::string(metrics_listen.status().message()));

  const int history_retention = absl::GetFlag(FLAGS_workspace_history);
  if (history_retention < 0 || history_retention > 100000) {
    Die(absl::StrCat("--workspace_history must be 0..100000, got ", history_retention));
  }
  rein::WorkspaceHistoryOptions history_options;
  history_options.retention = history_retention;
  history_options.max_bytes = absl::GetFlag(FLAGS_workspace_history_max_bytes);
  history_options.max_files = absl::GetFlag(FLAGS_workspace_history_max_files);
  if (history_options.max_bytes < 0 || history_options.max_files < 0) {
    Die("--workspace_history_max_bytes and --workspace_history_max_files must not be negative");
  }
  options.clock = rein::RealClock();  // the one real clock; tests hand the executor a fake
  history_options.ended_retention = options.journal.retention;
  // The sandbox records its placeholders here; snapshots and fork copies leave them out.
  rein::SandboxPlaceholders placeholders;
  sandbox.placeholders = &placeholders;
  history_options.placeholders = &placeholders;
  history_options.clock = options.clock;
  rein::WorkspaceHistory history(options.workspace_root, history_options);
  options.history = &history;
  absl::StatusOr<std::unique_ptr<rein::ToolExecutor>> executor =
      rein::ToolExecutor::Create(options);
  if (!executor.ok()) Die(std::string(executor.status().message()));
  rein::ExecutorGrpcService service(executor->get(), &history);
  // The sandbox state, for health checks and dashboards (grpc.health.v1 has no details).
  const rein::Sandbox::State state = (*executor)->sandbox().state();
  const char* state_name = state == rein::Sandbox::State::kBwrap         ? "bwrap"
                           : state == rein::Sandbox::State::kUnsandboxed ? "unsandboxed"
                                                                         : "unavailable";
  rein::Metrics::Global().Set("rein_executor_sandbox", 1,
                              absl::StrCat("state=\"", state_name, "\""));
  if (state == rein::Sandbox::State::kUnavailable) {
    rein::LogError("sandbox unavailable: write_file and run_command will be refused",
                   {{"sandbox", (*executor)->SandboxDescription()}});
  }

  rein::ServiceHostOptions host_options;
  host_options.listen = absl::GetFlag(FLAGS_listen);
  host_options.metrics_listen = *metrics_listen;
  host_options.service_name = "rein.v1.Executor";
  // write_file takes up to 1 MiB of content, which JSON escaping may grow up to 6 times.
  host_options.max_receive_message_bytes = 8 << 20;
  host_options.credentials = *credentials;
  rein::ServiceHost host(host_options);
  absl::Status started = host.Start({&service});
  if (!started.ok()) {
    rein::LogError("cannot start", {{"error", started.message()}});
    return 1;
  }
  // grpc.health.v1 carries the sandbox state as a service of its own:
  // "rein.v1.Executor.sandbox" is SERVING only when mutating tools run in a real sandbox, so a
  // probe or an operator can tell a sandboxed executor from one that refuses or runs bare.
  if (auto* health = host.server()->GetHealthCheckService()) {
    health->SetServingStatus("rein.v1.Executor.sandbox", state == rein::Sandbox::State::kBwrap);
  }
  rein::LogInfo("serving", {{"listen", host_options.listen},
                            {"port", absl::StrCat(host.port())},
                            {"executor_id", options.executor_id},
                            {"workspace_root", options.workspace_root},
                            {"journal", (*executor)->journal()->dir()},
                            {"sandbox", (*executor)->SandboxDescription()},
                            {"tls", tls.enabled() ? "on" : "off"},
                            {"allowed_clients", tls.enabled() ? absl::GetFlag(FLAGS_allowed_clients)
                                                              : "anyone (no TLS)"}});
  const int sig = rein::WaitForTerminationSignal();
  rein::LogInfo("shutting down", {{"signal", absl::StrCat(sig)}});
  host.Shutdown(absl::Seconds(5));
  return 0;
}
