// Test helper: several real rein-router processes on one private PostgreSQL database.
#include "tests/fleet.h"

#include <signal.h>
#include <sys/stat.h>

#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace rein::testing {

Fleet::Fleet(Options options) : options_(std::move(options)) {
  router_ports_.resize(options_.routers);  // 0 until each router's first start
  routers_.resize(options_.routers);
  stubs_.resize(options_.routers);
}

Fleet::~Fleet() {
  for (auto& router : routers_) {
    if (router && router->running()) {
      router->Kill(SIGCONT);
      router->Kill(SIGTERM);
      if (router->Wait(absl::Seconds(10)) < 0) router->Kill(SIGKILL);
    }
  }
  for (auto* p : {&planner_, &executor_}) {
    if (*p) {
      (*p)->Kill(SIGTERM);
      if ((*p)->Wait(absl::Seconds(10)) < 0) (*p)->Kill(SIGKILL);
    }
  }
}

std::string Fleet::router_target(int i) const {
  return absl::StrCat("127.0.0.1:", router_ports_[i]);
}

bool Fleet::Start() {
  absl::StatusOr<std::unique_ptr<PostgresServer>> postgres = PostgresServer::Start();
  if (!postgres.ok()) return false;
  postgres_ = std::move(*postgres);
  absl::StatusOr<std::string> url = postgres_->CreateDatabase();
  if (!url.ok()) return false;
  url_ = *url;
  const std::string root = options_.dir + "/workspaces";
  mkdir(root.c_str(), 0755);
  mkdir((root + "/repo").c_str(), 0755);
  std::ofstream(root + "/repo/README.md") << "# repo\nTODO: write docs\n";
  std::ofstream(root + "/repo/main.py") << "print('hi')  # TODO tests\n";
  const std::string script = options_.dir + "/script.json";
  std::ofstream(script) << options_.script_json;
  executor_ = std::make_unique<Process>(
      "executor",
      std::vector<std::string>{RunfilePath("executor_service/rein-executor"),
                               absl::StrCat("--listen=127.0.0.1:", executor_port_),
                               absl::StrCat("--workspace_root=", root), "--sandbox=none",
                               "--allow_unsandboxed"},
      options_.dir + "/executor.log");
  planner_ = std::make_unique<Process>(
      "planner",
      std::vector<std::string>{RunfilePath("planner_service/rein-planner"),
                               absl::StrCat("--listen=127.0.0.1:", planner_port_),
                               "--backend=scripted", absl::StrCat("--script=", script)},
      options_.dir + "/planner.log");
  if (!StartListening(*executor_, &executor_port_) || !StartListening(*planner_, &planner_port_)) {
    return false;
  }
  const std::string health = options_.dir + "/health.log";
  if (!WaitServing(absl::StrCat("127.0.0.1:", executor_port_), absl::Seconds(20), health) ||
      !WaitServing(absl::StrCat("127.0.0.1:", planner_port_), absl::Seconds(20), health)) {
    return false;
  }
  for (int i = 0; i < options_.routers; ++i) {
    if (!StartRouter(i)) return false;
  }
  return true;
}

bool Fleet::StartRouter(int i, const std::vector<std::string>& extra, bool wait) {
  std::vector<std::string> argv = {RunfilePath("router_service/rein-router"),
                                   absl::StrCat("--listen=", router_target(i)),
                                   absl::StrCat("--store=", url_),
                                   absl::StrCat("--planner_target=127.0.0.1:", planner_port_),
                                   absl::StrCat("--executor_target=127.0.0.1:", executor_port_),
                                   absl::StrCat("--router_id=", router_id(i)),
                                   absl::StrCat("--lease_ttl=", options_.lease_ttl),
                                   "--shutdown_grace_seconds=2"};
  for (const std::string& flag : options_.router_flags) argv.push_back(flag);
  for (const std::string& flag : extra) argv.push_back(flag);
  routers_[i] = std::make_unique<Process>(router_id(i), argv,
                                          absl::StrCat(options_.dir, "/", router_id(i), ".log"));
  if (!StartListening(*routers_[i], &router_ports_[i])) return false;
  stubs_[i] = rein::v1::Router::NewStub(
      grpc::CreateChannel(router_target(i), grpc::InsecureChannelCredentials()));
  return !wait || WaitServing(router_target(i), absl::Seconds(20), options_.dir + "/health.log");
}

absl::StatusOr<rein::v1::Run> Fleet::StartRun(int router, const rein::v1::RunSpec& spec,
                                              const std::string& request_id) {
  grpc::ClientContext context;
  return StartRunWith(stubs_[router].get(), &context, spec, request_id);
}

absl::StatusOr<rein::v1::Run> Fleet::GetRun(int router, const std::string& run_id) {
  grpc::ClientContext context;
  return GetRunWith(stubs_[router].get(), &context, run_id);
}

absl::StatusOr<rein::v1::Run> Fleet::WaitForStage(int router, const std::string& run_id,
                                                  rein::v1::Stage stage, absl::Duration timeout) {
  const absl::Time until = absl::Now() + timeout;
  while (true) {
    absl::StatusOr<rein::v1::Run> run = GetRun(router, run_id);
    if (!run.ok()) return run;
    const rein::v1::Stage s = run->state().stage();
    if (s == stage || s == rein::v1::FINISHED || s == rein::v1::FAILED ||
        s == rein::v1::CANCELLED || absl::Now() > until) {
      return run;
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
}

grpc::Status Fleet::WatchAll(int router, const std::string& run_id, absl::Duration timeout,
                             std::vector<rein::v1::RunEvent>* events) {
  rein::v1::WatchRunRequest request;
  request.set_run_id(run_id);
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  auto reader = stubs_[router]->WatchRun(&context, request);
  rein::v1::RunEvent event;
  while (reader->Read(&event)) events->push_back(event);
  return reader->Finish();
}

std::string Fleet::Logs() {
  std::string out;
  std::vector<std::string> names = {"planner", "executor"};
  for (int i = 0; i < options_.routers; ++i) names.push_back(router_id(i));
  for (const std::string& name : names) {
    std::string text = ReadFile(options_.dir + "/" + name + ".log");
    if (text.size() > 3000) text = text.substr(text.size() - 3000);
    absl::StrAppend(&out, "--- ", name, " ---\n", text, "\n");
  }
  return out;
}

std::string LogProblem(const std::vector<rein::v1::RunEvent>& events) {
  int finished = 0;
  for (size_t i = 0; i < events.size(); ++i) {
    if (events[i].seq() != static_cast<int64_t>(i + 1)) {
      return absl::StrCat("event ", i, " has seq ", events[i].seq());
    }
    finished += events[i].has_finished();
  }
  if (finished != 1) return absl::StrCat(finished, " terminal events");
  if (!events.back().has_finished()) return "the terminal event is not last";
  return "";
}

}  // namespace rein::testing
