// rein-executor: serves rein.v1.Executor (tools confined to workspaces under --workspace_root).
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/reflection.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/log.h"
#include "common/server.h"
#include "executor_service/executor_service.h"
#include "executor_service/tool_executor.h"

ABSL_FLAG(std::string, listen, "127.0.0.1:50053", "HOST:PORT to serve gRPC on");
ABSL_FLAG(int, metrics_port, 0, "Port of the Prometheus /metrics endpoint; 0 = off");
ABSL_FLAG(std::string, workspace_root, "", "Directory holding the workspaces (required)");
ABSL_FLAG(std::string, executor_id, "", "Id reported in every reply; default hostname:pid");
ABSL_FLAG(std::string, sandbox, "bwrap", "How mutating tools are sandboxed: bwrap or none");
ABSL_FLAG(bool, allow_unsandboxed, false, "Permit --sandbox=none");

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
        name == "helpon" || name == "helpmatch" || name == "version" ||
        name == "only_check_args") {
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

  rein::ExecutorOptions options;
  options.workspace_root = absl::GetFlag(FLAGS_workspace_root);
  options.executor_id = absl::GetFlag(FLAGS_executor_id);
  options.sandbox = absl::GetFlag(FLAGS_sandbox);
  options.allow_unsandboxed = absl::GetFlag(FLAGS_allow_unsandboxed);
  if (options.executor_id.empty()) options.executor_id = DefaultExecutorId();
  if (options.workspace_root.empty()) Die("--workspace_root=DIR is required");
  struct stat st;
  if (stat(options.workspace_root.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    Die(absl::StrCat("--workspace_root: ", options.workspace_root, " is not a directory"));
  }
  if (options.sandbox != "bwrap" && options.sandbox != "none") {
    Die(absl::StrCat("--sandbox must be bwrap or none, got \"", options.sandbox, "\""));
  }
  if (options.sandbox == "none" && !options.allow_unsandboxed) {
    Die("--sandbox=none is refused unless --allow_unsandboxed is also given");
  }
  const int metrics_port = absl::GetFlag(FLAGS_metrics_port);
  if (metrics_port < 0 || metrics_port > 65535) {
    Die(absl::StrCat("--metrics_port must be 0..65535, got ", metrics_port));
  }

  absl::StatusOr<std::unique_ptr<rein::ToolExecutor>> executor =
      rein::ToolExecutor::Create(options);
  if (!executor.ok()) Die(std::string(executor.status().message()));
  rein::ExecutorService service(executor->get());

  rein::ServiceHostOptions host_options;
  host_options.listen = absl::GetFlag(FLAGS_listen);
  host_options.metrics_port = metrics_port;
  host_options.service_name = "rein.v1.Executor";
  rein::ServiceHost host(host_options);
  absl::Status started = host.Start({&service});
  if (!started.ok()) {
    rein::LogError("cannot start", {{"error", started.message()}});
    return 1;
  }
  rein::LogInfo("serving", {{"listen", host_options.listen},
                            {"port", absl::StrCat(host.port())},
                            {"executor_id", options.executor_id},
                            {"workspace_root", options.workspace_root},
                            {"sandbox", (*executor)->SandboxDescription()}});
  const int sig = rein::WaitForTerminationSignal();
  rein::LogInfo("shutting down", {{"signal", absl::StrCat(sig)}});
  host.Shutdown(absl::Seconds(5));
  return 0;
}
