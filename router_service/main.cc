// rein-router: the public API, run state, stage routing, termination, pauses, persistence.
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "common/listen_policy.h"
#include "common/log.h"
#include "common/malloc_tuning.h"
#include "common/memory.h"
#include "common/metrics.h"
#include "common/secret_flag.h"
#include "common/server.h"
#include "common/tls.h"
#include "router_service/auth.h"
#include "router_service/connect/host_check.h"
#include "router_service/connect/http_port.h"
#include "router_service/grpc_clients.h"
#include "router_service/notify/notification_sender.h"
#include "router_service/notify/webhook_config.h"
#include "router_service/notify/webhook_transport.h"
#include "router_service/price_table.h"
#include "router_service/router_grpc.h"
#include "router_service/run_engine.h"
#include "router_service/store/open_run_store.h"
#include "trace/otel_setup.h"

ABSL_FLAG(std::string, listen, "127.0.0.1:50051", "HOST:PORT to serve rein.v1.Router on");
ABSL_FLAG(std::string, http_listen, "",
          "HOST:PORT (IPv4) to serve the Router API over HTTP (the Connect protocol) and the "
          "console on, with the same tokens, roles and TLS as --listen (docs/HTTP_API.md); "
          "empty = off");
ABSL_FLAG(int, http_threads, 32,
          "connections the HTTP port serves at once, one thread each (2..1024); a quarter "
          "is kept from streams for unary calls");
ABSL_FLAG(std::string, http_allowed_hosts, "",
          "comma-separated names the HTTP port answers in Host besides IP addresses and "
          "localhost (docs/HTTP_API.md); with none, Host is checked on loopback only");
ABSL_FLAG(int, metrics_port, 0, "port for Prometheus metrics over HTTP on 127.0.0.1 (0 = off)");
ABSL_FLAG(std::string, metrics_listen, "",
          "HOST:PORT of the Prometheus /metrics endpoint, instead of --metrics_port (e.g. "
          "0.0.0.0:9090 for a scraper on another host)");
ABSL_FLAG(std::string, store, "sqlite:var/rein.db",
          "run store: sqlite:PATH or postgres://user:password@host:port/database, or @FILE to "
          "read either from FILE (keeps a password off the command line)");
ABSL_FLAG(std::string, planner_target, "127.0.0.1:50052", "gRPC target of rein-planner");
ABSL_FLAG(std::string, executor_target, "127.0.0.1:50053",
          "gRPC target of rein-executor (dns:///name:port or ipv4:a:p,b:p for several)");
ABSL_FLAG(int, max_watch_streams_per_principal, 1024,
          "open WatchRun streams one principal (or, without tokens, all callers) may hold; "
          "past it WatchRun is RESOURCE_EXHAUSTED (0 = no cap)");
ABSL_FLAG(int, workers, 64,
          "threads that apply call results and commit transitions (a worker waits while its "
          "commit is written with its group, so this also bounds a group commit's size; idle "
          "ones cost a stack and nothing else)");
ABSL_FLAG(int, max_planner_calls, 0,
          "planner calls in flight at once, shared between namespaces by their quotas-file "
          "weight (0 = no limit; docs/NAMESPACES.md)");
ABSL_FLAG(int, max_executor_calls, 0,
          "executor calls in flight at once, shared as --max_planner_calls (0 = no limit)");
ABSL_FLAG(int, group_commit_max, 64,
          "at most this many runs' transitions committed in one store transaction (1 = no "
          "group commit); each run moves on only after its transition is committed");
ABSL_FLAG(absl::Duration, group_commit_delay, absl::ZeroDuration(),
          "how long a group commit waits for more transitions to join before it is written "
          "(0 = never: a group is whatever became ready while the previous one was written)");
ABSL_FLAG(std::string, sqlite_synchronous, "NORMAL",
          "SQLite synchronous mode: NORMAL (survives a killed process) or FULL (power loss)");
ABSL_FLAG(int, sqlite_cache_mib, 2,
          "SQLite page cache of the router's connection, in MiB (1..4096; more keeps more "
          "runs' pages in memory instead of reading them again, and adds to the router's RSS)");
ABSL_FLAG(std::string, price_table, "",
          "file of per-model prices (lines `MODEL INPUT OUTPUT CACHE_READ CACHE_WRITE`, US "
          "dollars per million tokens; examples/price_table.txt): runs' cost_used_usd and "
          "Limits.cost_budget_usd; empty = no prices (a cost budget is refused)");
ABSL_FLAG(int, shutdown_grace_seconds, 10, "on SIGTERM, how long calls in flight may finish");
// Run leases (several routers on one PostgreSQL store; docs/DESIGN.md, "Leases and the journal").
ABSL_FLAG(absl::Duration, lease_ttl, absl::Seconds(10),
          "how long this router's lease on its runs lasts past each renewal (renewed every "
          "ttl/3; mutating calls stop at ttl/2 without a renewal); in [100ms, 1h]");
ABSL_FLAG(std::string, router_id, "",
          "this router's id among the routers sharing the store (default hostname:pid); "
          "[A-Za-z0-9._:-], at most 128 bytes; two live routers with one id are refused");
// Security (docs/SECURITY.md): TLS files are reloaded within 10 s of changing.
ABSL_FLAG(std::string, tls_cert, "",
          "PEM certificate: the public port serves TLS, and the "
          "router presents it to planners and executors");
ABSL_FLAG(std::string, tls_key, "", "PEM private key of --tls_cert");
ABSL_FLAG(std::string, tls_ca, "",
          "PEM CA that signs planners' and executors' certificates (and, without --client_ca, "
          "public clients' with --require_client_cert)");
ABSL_FLAG(bool, require_client_cert, false, "the public port also requires client certificates");
ABSL_FLAG(std::string, client_ca, "",
          "with --require_client_cert: PEM CA that signs public clients' certificates, a trust "
          "root of their own (default --tls_ca); one CA per role keeps a client's certificate "
          "from being one the executors and planners trust");
ABSL_FLAG(std::string, planner_tls_name, "",
          "name the planners' certificates must carry "
          "(default: the host of --planner_target)");
ABSL_FLAG(std::string, executor_tls_name, "",
          "name the executors' certificates must carry "
          "(default: the host of --executor_target)");
ABSL_FLAG(std::string, auth_tokens_file, "",
          "bearer tokens: lines `sha256:<hex> <principal> "
          "<role>[,<role>...] [namespace=<ns>]`, reloaded on change");
ABSL_FLAG(std::string, quotas_file, "",
          "per-namespace quotas: lines `<ns> [max_concurrent_runs=N] [max_starts_per_minute=N] "
          "[max_tokens_per_day=N] [max_cost_usd_per_day=X] [weight=N]`, reloaded on change "
          "(docs/NAMESPACES.md)");
ABSL_FLAG(bool, allow_unauthenticated, false,
          "serve without --auth_tokens_file or --require_client_cert on a "
          "non-loopback --listen address (anyone who reaches the port may do anything)");
ABSL_FLAG(bool, allow_plaintext_tokens, false,
          "accept bearer tokens without TLS on a non-loopback --listen address (anyone on the "
          "path can read and replay them)");

ABSL_FLAG(std::string, webhook_url, "",
          "URL[,secret_file=F][,types=T,...]: POST signed CloudEvents of every run's pauses and "
          "ends there (repeatable; docs/WEBHOOKS.md)");
ABSL_FLAG(std::string, webhook_allow, "",
          "PREFIX[,secret_file=F]: RunSpec.notify URLs may start with this (repeatable)");
ABSL_FLAG(std::string, console_url, "", "base URL of the console, for links in webhooks");
ABSL_FLAG(absl::Duration, webhook_retry_for, absl::Hours(24),
          "how long after its commit a webhook notice is retried before it is marked failed");
ABSL_FLAG(absl::Duration, webhook_timeout, absl::Seconds(10), "one webhook POST's whole exchange");
ABSL_FLAG(absl::Duration, webhook_max_backoff, absl::Minutes(10),
          "the longest wait between two attempts of a webhook notice (a receiver back up gets "
          "its notices within it)");

namespace {

int Fail(const std::string& message) {
  rein::LogError(message);
  std::cerr << "rein-router: " << message << "\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  rein::BlockTerminationSignals();
  rein::SetLogService("rein-router");
  // Traces over OTLP/HTTP when OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT is set (docs/TRACING.md);
  // declared before the service, so that the spans it ends on the way out are still exported.
  std::unique_ptr<rein::trace::BatchSpanExporter> trace_exporter =
      rein::trace::InstallTracingFromEnv("rein-router");
  absl::SetProgramUsageMessage(
      "rein-router --store=sqlite:PATH|postgres://... --planner_target=T --executor_target=T");
  absl::ParseCommandLine(argc, argv);
  rein::LogMallocTunables();
  // Debian's Abseil is built with deadlock detection on, which records every lock in a global
  // graph: a few percent of the router's CPU per iteration. Tests keep it on.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);

  rein::RunStoreOptions store_options;
  store_options.sqlite_synchronous = absl::GetFlag(FLAGS_sqlite_synchronous);
  store_options.sqlite_cache_mib = absl::GetFlag(FLAGS_sqlite_cache_mib);
  absl::StatusOr<std::string> store_uri =
      rein::ReadSecretFlag("--store", absl::GetFlag(FLAGS_store));
  if (!store_uri.ok()) return Fail(std::string(store_uri.status().message()));
  absl::StatusOr<rein::OpenedRunStore> opened = rein::OpenRunStore(*store_uri, store_options);
  if (!opened.ok()) return Fail(std::string(opened.status().message()));
  rein::RouterStore* const store = opened->store.get();
  if (absl::GetFlag(FLAGS_workers) < 1 || absl::GetFlag(FLAGS_workers) > 256) {
    return Fail("--workers: must be in [1, 256]");
  }

  const rein::TlsFiles tls{absl::GetFlag(FLAGS_tls_cert), absl::GetFlag(FLAGS_tls_key),
                           absl::GetFlag(FLAGS_tls_ca)};
  if (absl::Status status = rein::CheckServerTlsFiles(tls); !status.ok()) {
    return Fail(std::string(status.message()));
  }
  const bool require_client_cert = absl::GetFlag(FLAGS_require_client_cert);
  if (require_client_cert && !tls.enabled()) {
    return Fail("--require_client_cert: needs --tls_cert, --tls_key and --tls_ca");
  }
  // The public port: the router's own certificate, and the CA of its public clients.
  rein::TlsFiles public_tls = tls;
  if (const std::string client_ca = absl::GetFlag(FLAGS_client_ca); !client_ca.empty()) {
    if (!require_client_cert) return Fail("--client_ca: only with --require_client_cert");
    public_tls.ca = client_ca;
    if (absl::Status status = rein::CheckServerTlsFiles(public_tls); !status.ok()) {
      return Fail(absl::StrCat("--client_ca: ", status.message()));
    }
  }
  std::unique_ptr<rein::Authenticator> auth;
  if (const std::string tokens = absl::GetFlag(FLAGS_auth_tokens_file); !tokens.empty()) {
    rein::AuthOptions auth_options;
    auth_options.tokens_file = tokens;
    auth = std::make_unique<rein::Authenticator>(auth_options, rein::RealClock());
    if (absl::Status status = auth->Load(); !status.ok()) {
      return Fail(absl::StrCat("--auth_tokens_file: ", status.message()));
    }
  }
  rein::ListenPolicy policy;
  policy.listen = absl::GetFlag(FLAGS_listen);
  policy.callers_authenticated = auth != nullptr || require_client_cert;
  policy.allow_unauthenticated = absl::GetFlag(FLAGS_allow_unauthenticated);
  policy.tls = tls.enabled();
  policy.bearer_tokens = auth != nullptr;
  policy.allow_plaintext_tokens = absl::GetFlag(FLAGS_allow_plaintext_tokens);
  policy.authenticate_with = "--auth_tokens_file, or --require_client_cert with TLS";
  if (absl::Status status = rein::CheckListenPolicy(policy); !status.ok()) {
    return Fail(std::string(status.message()));
  }
  if (rein::ServesUnauthenticated(policy)) {
    rein::LogError(
        "SERVING WITHOUT AUTHENTICATION on a non-loopback address "
        "(--allow_unauthenticated): anyone who reaches the port may start, "
        "review and cancel runs",
        {{"listen", policy.listen}});
  }
  const std::string http_listen = absl::GetFlag(FLAGS_http_listen);
  if (!http_listen.empty()) {
    // The HTTP port serves the gRPC port's TLS and client certificates: the same rules.
    rein::ListenPolicy http_policy = policy;
    http_policy.listen = http_listen;
    if (absl::Status status = rein::CheckListenPolicy(http_policy); !status.ok()) {
      return Fail(absl::StrCat("--http_listen: ", status.message()));
    }
  }
  absl::StatusOr<std::string> metrics_listen = rein::MetricsListenAddress(
      absl::GetFlag(FLAGS_metrics_listen), absl::GetFlag(FLAGS_metrics_port));
  if (!metrics_listen.ok()) return Fail(std::string(metrics_listen.status().message()));

  rein::GrpcPlannerClient planner(rein::MakeRoundRobinChannel(
      absl::GetFlag(FLAGS_planner_target), tls, absl::GetFlag(FLAGS_planner_tls_name)));
  rein::GrpcExecutorClient executor(rein::MakeRoundRobinChannel(
      absl::GetFlag(FLAGS_executor_target), tls, absl::GetFlag(FLAGS_executor_tls_name)));
  rein::Clock* clock = rein::RealClock();
  rein::RunEngineOptions engine_options;
  engine_options.workers = absl::GetFlag(FLAGS_workers);
  engine_options.group_commit.max_batch = absl::GetFlag(FLAGS_group_commit_max);
  if (engine_options.group_commit.max_batch < 1 || engine_options.group_commit.max_batch > 4096) {
    return Fail("--group_commit_max: must be in [1, 4096]");
  }
  engine_options.group_commit.max_delay = absl::GetFlag(FLAGS_group_commit_delay);
  if (engine_options.group_commit.max_delay < absl::ZeroDuration() ||
      engine_options.group_commit.max_delay > absl::Milliseconds(100)) {
    return Fail("--group_commit_delay: must be in [0, 100ms]");
  }
  engine_options.lease_ttl = absl::GetFlag(FLAGS_lease_ttl);
  if (engine_options.lease_ttl < absl::Milliseconds(100) ||
      engine_options.lease_ttl > absl::Hours(1)) {
    return Fail("--lease_ttl: must be in [100ms, 1h]");
  }
  engine_options.router_id = absl::GetFlag(FLAGS_router_id);
  if (engine_options.router_id.empty()) {
    char host[256] = {};
    if (gethostname(host, sizeof(host) - 1) != 0 || host[0] == '\0') strcpy(host, "router");
    engine_options.router_id = absl::StrCat(host, ":", getpid());
  }
  if (const std::string prices = absl::GetFlag(FLAGS_price_table); !prices.empty()) {
    absl::StatusOr<rein::PriceTable> table = rein::PriceTable::Load(prices);
    if (!table.ok()) return Fail(absl::StrCat("--price_table: ", table.status().message()));
    engine_options.stage.prices = std::make_shared<const rein::PriceTable>(*std::move(table));
  }
  absl::StatusOr<rein::WebhookConfig> webhooks = rein::MakeWebhookConfig(
      rein::RepeatedFlagValues(argc, argv, "webhook_url"),
      rein::RepeatedFlagValues(argc, argv, "webhook_allow"), absl::GetFlag(FLAGS_console_url));
  if (!webhooks.ok()) return Fail(std::string(webhooks.status().message()));
  engine_options.check_notify = [config = &*webhooks](const rein::v1::RunSpec& spec) {
    return config->CheckRunSpec(spec);
  };
  rein::NotificationSenderOptions notify_options;
  notify_options.retry_for = absl::GetFlag(FLAGS_webhook_retry_for);
  notify_options.request_timeout = absl::GetFlag(FLAGS_webhook_timeout);
  notify_options.max_backoff = absl::GetFlag(FLAGS_webhook_max_backoff);
  if (notify_options.max_backoff < absl::Seconds(1) || notify_options.max_backoff > absl::Hours(24))
    return Fail("--webhook_max_backoff: must be in [1s, 24h]");
  if (notify_options.retry_for <= absl::ZeroDuration())
    return Fail("--webhook_retry_for: must be > 0");
  if (notify_options.request_timeout < absl::Milliseconds(100) ||
      notify_options.request_timeout > absl::Minutes(5)) {
    return Fail("--webhook_timeout: must be in [100ms, 5m]");
  }
  if (webhooks->empty()) {  // notices are settled with nobody to tell: one thread, seldom
    notify_options.concurrency = 1;
    notify_options.poll_interval = absl::Seconds(1);
  }
  rein::CurlWebhookTransport webhook_transport;
  rein::NotificationSender notifications(store, store, &*webhooks, &webhook_transport, clock,
                                         notify_options);
  rein::QuotaOptions quota_options;
  quota_options.file = absl::GetFlag(FLAGS_quotas_file);
  rein::QuotaBook quotas(quota_options, store, clock);
  if (absl::Status status = quotas.Load(); !status.ok()) {
    return Fail(absl::StrCat("--quotas_file: ", status.message()));
  }
  engine_options.calls.max_planner_calls = absl::GetFlag(FLAGS_max_planner_calls);
  engine_options.calls.max_executor_calls = absl::GetFlag(FLAGS_max_executor_calls);
  if (engine_options.calls.max_planner_calls < 0 || engine_options.calls.max_executor_calls < 0) {
    return Fail("--max_planner_calls, --max_executor_calls: must be >= 0 (0 = no limit)");
  }
  engine_options.calls.weight_of = [&quotas](const std::string& ns) { return quotas.Weight(ns); };
  engine_options.admit_child = [&quotas](const std::string& ns,
                                         const std::function<bool()>& create) {
    return quotas.AdmitChild(ns, create);
  };
  rein::RunEngine engine(store, &planner, &executor, clock, engine_options);
  rein::RouterGrpcOptions grpc_options;
  grpc_options.max_watch_streams_per_principal =
      absl::GetFlag(FLAGS_max_watch_streams_per_principal);
  if (grpc_options.max_watch_streams_per_principal < 0) {
    return Fail("--max_watch_streams_per_principal: must be >= 0 (0 = no cap)");
  }
  rein::RouterGrpcService service(&engine, auth.get(), grpc_options, &quotas);

  rein::ServiceHostOptions host_options;
  host_options.listen = absl::GetFlag(FLAGS_listen);
  host_options.metrics_listen = *metrics_listen;
  host_options.service_name = "rein.v1.Router";
  host_options.credentials = rein::MakeServerCredentials(public_tls, require_client_cert);
  rein::ServiceHost host(host_options);
  if (absl::Status status = engine.Start(); !status.ok()) {
    return Fail(absl::StrCat("cannot start: ", status.message()));
  }
  if (absl::Status status = host.Start({&service}); !status.ok()) {
    return Fail(std::string(status.message()));
  }
  std::unique_ptr<rein::connect::HttpPort> http;
  if (!http_listen.empty()) {
    rein::connect::HttpServerOptions http_options;
    http_options.listen = http_listen;
    http_options.threads = absl::GetFlag(FLAGS_http_threads);
    http_options.tls = {public_tls.cert, public_tls.key, require_client_cert ? public_tls.ca : ""};
    http_options.tls_reload = absl::Seconds(rein::kTlsReloadSeconds);
    absl::StatusOr<std::vector<std::string>> allowed_hosts =
        rein::connect::ParseAllowedHosts(absl::GetFlag(FLAGS_http_allowed_hosts));
    if (!allowed_hosts.ok()) return Fail(std::string(allowed_hosts.status().message()));
    http_options.allowed_hosts = *std::move(allowed_hosts);
    absl::StatusOr<std::unique_ptr<rein::connect::HttpPort>> started =
        rein::connect::HttpPort::Start(host.server(), http_options);
    if (!started.ok()) return Fail(std::string(started.status().message()));
    http = *std::move(started);
  }
  notifications.Start();  // after engine.Start: the outbox is claimed under this router's lease
  rein::LogInfo("serving", {{"listen", host_options.listen},
                            {"http_listen", http ? http_listen : "off"},
                            {"http_port", http ? std::to_string(http->port()) : "0"},
                            {"port", std::to_string(host.port())},
                            {"store", opened->description},
                            {"router_id", engine_options.router_id},
                            {"tls", tls.enabled() ? "on" : "off"},
                            {"auth", auth ? "tokens" : "none"},
                            {"client_certificates", require_client_cert ? public_tls.ca : "off"},
                            {"price_table", absl::GetFlag(FLAGS_price_table).empty()
                                                ? "none"
                                                : absl::GetFlag(FLAGS_price_table)}});
  int sig = rein::WaitForTerminationSignal();
  rein::LogInfo("shutting down", {{"signal", std::to_string(sig)}});
  absl::Duration grace = absl::Seconds(absl::GetFlag(FLAGS_shutdown_grace_seconds));
  // Stop taking requests (watch streams end), then let calls in flight be committed.
  engine.StopDispatching();  // no new call while the server drains
  host.Shutdown(absl::Seconds(1));
  http.reset();  // its calls went through the gRPC server, which ended them
  notifications.Stop();
  engine.Shutdown(grace);
  rein::LogInfo("stopped");
  return 0;
}
