// rein-planner: serves rein.v1.Planner with the backend chosen by --backend.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/malloc_tuning.h"
#include "common/metrics.h"
#include "common/server.h"
#include "common/tls.h"
#include "planner_service/backend_factory.h"
#include "planner_service/planner_grpc.h"
#include "trace/otel_setup.h"

ABSL_FLAG(std::string, listen, "127.0.0.1:50052", "HOST:PORT to serve gRPC on (port 0 = any)");
ABSL_FLAG(int, metrics_port, 0, "port of the Prometheus /metrics endpoint on 127.0.0.1; 0 = off");
ABSL_FLAG(std::string, metrics_listen, "",
          "HOST:PORT of the Prometheus /metrics endpoint, instead of --metrics_port (e.g. "
          "0.0.0.0:9090 for a scraper on another host)");
ABSL_FLAG(std::string, backend, "",
          "scripted or anthropic; default: scripted when --script is given, else anthropic");
ABSL_FLAG(std::string, script, "", "scripted backend: the JSON script (see SCRIPT.md)");
ABSL_FLAG(std::string, model, "claude-sonnet-5", "anthropic backend: the default model");
ABSL_FLAG(std::string, api_key_file, "",
          "anthropic backend: file holding the API key; else ANTHROPIC_API_KEY");
ABSL_FLAG(std::string, anthropic_base_url, "",
          "anthropic backend: API base URL; else ANTHROPIC_BASE_URL, else the public API");
ABSL_FLAG(std::string, prompts_dir, "",
          "anthropic backend: folder of the stage prompts (see ANTHROPIC.md); default: the "
          "prompts next to the binary, else ./planner_service/prompts");
// mTLS (docs/SECURITY.md): with these, the port serves TLS only, every client must present a
// certificate signed by --tls_ca, and every call but health must come from a certificate that
// carries a name in --allowed_clients. The files are reloaded within 10 s of changing.
ABSL_FLAG(std::string, tls_cert, "", "PEM certificate of this service");
ABSL_FLAG(std::string, tls_key, "", "PEM private key of --tls_cert");
ABSL_FLAG(std::string, tls_ca, "",
          "PEM CA that signs the routers' certificates (one CA per role: not the CA of "
          "public clients)");
ABSL_FLAG(std::string, allowed_clients, rein::kRouterIdentity,
          "with TLS: comma-separated DNS names (subjectAltName) of the clients that may call; "
          "a certificate from --tls_ca without one of them is refused with PERMISSION_DENIED");
ABSL_FLAG(bool, allow_unauthenticated, false,
          "serve without TLS on a non-loopback --listen address (anyone who reaches the port "
          "may spend the model budget)");

namespace {

// How long in-flight calls may finish after SIGTERM (a model call can take a while).
constexpr absl::Duration kShutdownGrace = absl::Seconds(30);

int Fail(int exit_code, const std::string& message) {
  std::fprintf(stderr, "rein-planner: %s\n", message.c_str());
  return exit_code;
}

}  // namespace

int main(int argc, char** argv) {
  rein::BlockTerminationSignals();
  absl::SetProgramUsageMessage("Serves rein.v1.Planner: one model call per stage.");
  std::vector<char*> rest = absl::ParseCommandLine(argc, argv);
  if (rest.size() > 1) return Fail(2, absl::StrCat("unexpected argument: ", rest[1]));
  rein::SetLogService("rein-planner");
  // Traces over OTLP/HTTP when OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT is set (docs/TRACING.md);
  // declared before the service, so that the spans it ends on the way out are still exported.
  std::unique_ptr<rein::trace::BatchSpanExporter> trace_exporter =
      rein::trace::InstallTracingFromEnv("rein-planner");
  // The GenAI metrics over OTLP too, when an endpoint is set (last exported at exit).
  std::unique_ptr<rein::trace::PeriodicMetricExporter> metrics_exporter =
      rein::trace::InstallMetricsFromEnv("rein-planner");
  rein::LogMallocTunables();

  rein::PlannerOptions options;
  options.backend = absl::GetFlag(FLAGS_backend);
  options.script = absl::GetFlag(FLAGS_script);
  options.model = absl::GetFlag(FLAGS_model);
  options.api_key_file = absl::GetFlag(FLAGS_api_key_file);
  options.anthropic_base_url = absl::GetFlag(FLAGS_anthropic_base_url);
  options.prompts_dir = absl::GetFlag(FLAGS_prompts_dir);
  absl::StatusOr<std::unique_ptr<rein::PlannerBackend>> backend =
      rein::MakePlannerBackend(options, rein::RealClock());
  if (!backend.ok()) return Fail(2, std::string(backend.status().message()));

  const rein::TlsFiles tls{absl::GetFlag(FLAGS_tls_cert), absl::GetFlag(FLAGS_tls_key),
                           absl::GetFlag(FLAGS_tls_ca)};
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials =
      rein::MakeRouterOnlyCredentials(
          {absl::GetFlag(FLAGS_listen), tls, absl::GetFlag(FLAGS_allowed_clients),
           absl::GetFlag(FLAGS_allow_unauthenticated), "spend the model budget"});
  if (!credentials.ok()) return Fail(2, std::string(credentials.status().message()));
  absl::StatusOr<std::string> metrics_listen = rein::MetricsListenAddress(
      absl::GetFlag(FLAGS_metrics_listen), absl::GetFlag(FLAGS_metrics_port));
  if (!metrics_listen.ok()) return Fail(2, std::string(metrics_listen.status().message()));
  rein::PlannerGrpcService service(backend->get());
  rein::ServiceHostOptions host_options;
  host_options.listen = absl::GetFlag(FLAGS_listen);
  host_options.metrics_listen = *metrics_listen;
  host_options.service_name = "rein.v1.Planner";
  host_options.credentials = *credentials;
  rein::ServiceHost host(host_options);
  absl::Status started = host.Start({&service});
  if (!started.ok()) return Fail(1, std::string(started.message()));
  rein::LogInfo("serving", {{"listen", host_options.listen},
                            {"port", absl::StrCat(host.port())},
                            {"metrics_port", absl::StrCat(host.metrics_port())},
                            {"backend", (*backend)->name()},
                            {"tls", tls.enabled() ? "on" : "off"},
                            {"allowed_clients", tls.enabled() ? absl::GetFlag(FLAGS_allowed_clients)
                                                              : "anyone (no TLS)"}});

  const int signal = rein::WaitForTerminationSignal();
  rein::LogInfo("shutting down", {{"signal", absl::StrCat(signal)}});
  host.Shutdown(kShutdownGrace);
  return 0;
}
