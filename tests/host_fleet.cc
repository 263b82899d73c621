#include "tests/host_fleet.h"

#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "gtest/gtest.h"

namespace rein::testing {

using RunProto = ::rein::v1::Run;
using ::rein::v1::RunEvent;

HostFleet::HostFleet() : HostFleet(Options()) {}

HostFleet::HostFleet(Options options) : options_(std::move(options)) {
  const pid_t pid = getpid();
  tag_ = absl::StrCat("m", pid % 100000);
  subnet_ = absl::StrCat(options_.subnet_prefix, ".", pid % 250);
  char pattern[] = "/tmp/rein-multihost-XXXXXX";
  dir_ = mkdtemp(pattern);
  chmod(dir_.c_str(), 0755);
  workspace_root_ = dir_ + "/workspaces";
  std::filesystem::create_directories(workspace_root_);
}

HostFleet::~HostFleet() {
  for (auto& p : routers_) StopProcess(p);
  for (auto& p : executors_) StopProcess(p);
  StopProcess(planner_);
  StopProcess(postgres_);
  network_.reset();
  if (::testing::Test::HasFailure()) {
    std::cerr << "fleet logs kept in " << dir_ << "\n";
  } else {
    std::filesystem::remove_all(dir_);
  }
}

void HostFleet::Start(const std::string& script) {
  ASSERT_NO_FATAL_FAILURE(StartNetwork());
  ASSERT_NO_FATAL_FAILURE(StartServices(script));
}

std::string HostFleet::AddHost(const std::string& name, int octet) {
  absl::StatusOr<std::string> address = network_->AddHost(name, octet);
  EXPECT_TRUE(address.ok()) << address.status();
  return address.ok() ? *address : "";
}

void HostFleet::StartNetwork() {
  absl::StatusOr<std::unique_ptr<HostNetwork>> network = HostNetwork::Create(tag_, subnet_);
  ASSERT_TRUE(network.ok()) << network.status();
  network_ = std::move(*network);
  db_address_ = AddHost("db", 10);
  for (int i = 0; i < options_.routers; ++i) {
    router_addresses_.push_back(AddHost(RouterHost(i), 11 + i));
  }
  planner_address_ = AddHost("planner", 20);
  for (int i = 0; i < options_.executors; ++i) {
    executor_addresses_.push_back(AddHost(ExecutorHost(i), 31 + i));
  }
  ASSERT_FALSE(::testing::Test::HasFailure());
}

void HostFleet::StartServices(const std::string& script) {
  ASSERT_NO_FATAL_FAILURE(InitPostgres());
  ASSERT_NO_FATAL_FAILURE(StartPostgres());
  std::ofstream(dir_ + "/script.json") << script;
  planner_ = Spawn("planner", "planner",
                   {RunfilePath("planner_service/rein-planner"),
                    absl::StrCat("--listen=", planner_address_, ":50052"), "--backend=scripted",
                    absl::StrCat("--script=", dir_, "/script.json"), "--allow_unauthenticated"});
  executors_.resize(options_.executors);
  for (int i = 0; i < options_.executors; ++i) ASSERT_NO_FATAL_FAILURE(StartExecutor(i));
  ASSERT_TRUE(WaitServing(planner_address_ + ":50052"));
  routers_.resize(options_.routers);
  for (int i = 0; i < options_.routers; ++i) ASSERT_NO_FATAL_FAILURE(StartRouter(i));
}

void HostFleet::StartRouter(int i) {
  std::string executors = "ipv4:";
  for (int e = 0; e < options_.executors; ++e) {
    absl::StrAppend(&executors, e ? "," : "", executor_addresses_[e], ":50053");
  }
  routers_[i] =
      Spawn(absl::StrCat("router", i), RouterHost(i),
            {RunfilePath("router_service/rein-router"),
             absl::StrCat("--listen=", router_addresses_[i], ":50051"),
             absl::StrCat("--store=", StoreUrl()),
             absl::StrCat("--planner_target=", planner_address_, ":50052"),
             absl::StrCat("--executor_target=", executors), absl::StrCat("--router_id=router-", i),
             absl::StrCat("--lease_ttl=", options_.lease_ttl),
             // The test hosts' network is the test's own: no tokens needed.
             "--allow_unauthenticated"});
  ASSERT_TRUE(WaitServing(RouterTarget(i))) << routers_[i]->log_path();
  stubs_.resize(options_.routers);
  stubs_[i] = rein::v1::Router::NewStub(
      grpc::CreateChannel(RouterTarget(i), grpc::InsecureChannelCredentials()));
}

void HostFleet::StartExecutor(int i) {
  executors_[i] = Spawn(absl::StrCat("executor", i), ExecutorHost(i),
                        {RunfilePath("executor_service/rein-executor"),
                         absl::StrCat("--listen=", executor_addresses_[i], ":50053"),
                         absl::StrCat("--workspace_root=", workspace_root_),
                         absl::StrCat("--executor_id=executor-", i), "--sandbox=none",
                         "--allow_unsandboxed", "--allow_unauthenticated"});
  ASSERT_TRUE(WaitServing(executor_addresses_[i] + ":50053"));
}

void HostFleet::KillRouter(int i) {
  routers_[i]->Kill(SIGKILL);
  routers_[i]->Wait(absl::Seconds(10));
}

void HostFleet::KillExecutor(int i) {
  executors_[i]->Kill(SIGKILL);
  executors_[i]->Wait(absl::Seconds(10));
}

void HostFleet::KillPostgres() {
  postgres_->Kill(SIGKILL);
  postgres_->Wait(absl::Seconds(10));
}

void HostFleet::StartPostgres() {
  // A SIGKILLed postmaster's backends notice its death and exit; until they have, a new
  // postmaster refuses the data directory, so try for a while.
  const absl::Time until = absl::Now() + absl::Seconds(30);
  while (true) {
    postgres_ = Spawn("postgres", "db",
                      {"/usr/bin/setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups",
                       PostgresBin() + "/postgres", "-D", dir_ + "/pgdata", "-p", "5432", "-k",
                       dir_ + "/pgsock", "-c", absl::StrCat("listen_addresses=", db_address_), "-c",
                       "fsync=off", "-c", "max_connections=300"});
    absl::SleepFor(absl::Milliseconds(300));
    if (postgres_->Wait(absl::ZeroDuration()) < 0 && WaitPostgres(absl::Seconds(10))) return;
    StopProcess(postgres_);
    ASSERT_LT(absl::Now(), until) << ReadFile(dir_ + "/postgres.log");
    absl::SleepFor(absl::Milliseconds(500));
  }
}

std::string HostFleet::MakeWorkspace(const std::string& name) {
  const std::string path = workspace_root_ + "/" + name;
  std::filesystem::create_directories(path);
  std::ofstream(path + "/input.txt") << "input of " << name << "\n";
  return path;
}

absl::StatusOr<RunProto> HostFleet::StartRun(int router, const rein::v1::RunSpec& spec,
                                             const std::string& request_id) {
  grpc::ClientContext context;
  return StartRunWith(stubs_[router].get(), &context, spec, request_id);
}

absl::StatusOr<RunProto> HostFleet::GetRun(int router, const std::string& run_id) {
  grpc::ClientContext context;
  return GetRunWith(stubs_[router].get(), &context, run_id);
}

std::map<std::string, RunProto> HostFleet::WaitSettled(int router,
                                                       const std::vector<std::string>& run_ids,
                                                       absl::Duration timeout) {
  std::map<std::string, RunProto> settled;
  const absl::Time until = absl::Now() + timeout;
  while (settled.size() < run_ids.size() && absl::Now() < until) {
    for (const std::string& id : run_ids) {
      if (settled.count(id)) continue;
      absl::StatusOr<RunProto> run = GetRun(router, id);
      if (!run.ok()) continue;
      const rein::v1::Stage stage = run->state().stage();
      if (stage == rein::v1::FINISHED || stage == rein::v1::FAILED ||
          stage == rein::v1::CANCELLED || stage == rein::v1::PAUSED) {
        settled[id] = *run;
      }
    }
    if (settled.size() < run_ids.size()) absl::SleepFor(absl::Milliseconds(200));
  }
  return settled;
}

std::vector<RunEvent> HostFleet::Events(int router, const std::string& run_id,
                                        absl::Duration timeout) {
  rein::v1::WatchRunRequest request;
  request.set_run_id(run_id);
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  auto reader = stubs_[router]->WatchRun(&context, request);
  std::vector<RunEvent> events;
  RunEvent event;
  while (reader->Read(&event)) events.push_back(event);
  reader->Finish();
  return events;
}

std::string HostFleet::Logs() const {
  std::string out;
  for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
    if (entry.path().extension() != ".log") continue;
    const std::string text = ReadFile(entry.path());
    absl::StrAppend(&out, "---- ", entry.path().filename().string(), " (last 3000 bytes)\n",
                    text.size() > 3000 ? text.substr(text.size() - 3000) : text);
  }
  return out;
}

std::string HostFleet::StoreUrl() const {
  return absl::StrCat("postgresql://postgres@", db_address_, ":5432/postgres?connect_timeout=3");
}

std::string HostFleet::PostgresBin() {
  std::string best;
  int best_version = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/usr/lib/postgresql")) {
    const int version = std::atoi(entry.path().filename().c_str());
    if (version > best_version && std::filesystem::exists(entry.path() / "bin" / "postgres")) {
      best_version = version;
      best = (entry.path() / "bin").string();
    }
  }
  return best;
}

void HostFleet::InitPostgres() {
  passwd* user = getpwnam("postgres");
  ASSERT_NE(user, nullptr) << "no postgres user (./dev setup installs postgresql)";
  for (const std::string sub : {"/pgdata", "/pgsock"}) {
    std::filesystem::create_directories(dir_ + sub);
    ASSERT_EQ(chown((dir_ + sub).c_str(), user->pw_uid, user->pw_gid), 0);
  }
  chmod((dir_ + "/pgdata").c_str(), 0700);
  absl::Status status =
      RunCommand({"/usr/bin/setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups",
                  PostgresBin() + "/initdb", "-D", dir_ + "/pgdata", "-U", "postgres", "-A",
                  "trust", "--no-sync"});
  ASSERT_TRUE(status.ok()) << status;
  std::ofstream(dir_ + "/pgdata/pg_hba.conf", std::ios::app)
      << "host all all " << subnet_ << ".0/24 trust\n";
}

bool HostFleet::WaitPostgres(absl::Duration timeout) {
  const absl::Time until = absl::Now() + timeout;
  while (absl::Now() < until) {
    if (RunCommand({PostgresBin() + "/pg_isready", "-h", db_address_, "-p", "5432", "-t", "1"})
            .ok()) {
      return true;
    }
    absl::SleepFor(absl::Milliseconds(100));
  }
  return false;
}

bool HostFleet::WaitServing(const std::string& target) {
  const absl::Time until = absl::Now() + absl::Seconds(30);
  while (absl::Now() < until) {
    Process probe("health", {RunfilePath("common/rein-health"), target}, dir_ + "/health.log");
    probe.Start();
    if (probe.Wait(absl::Seconds(5)) == 0) return true;
    absl::SleepFor(absl::Milliseconds(100));
  }
  return false;
}

std::unique_ptr<Process> HostFleet::Spawn(const std::string& name, const std::string& host,
                                          const std::vector<std::string>& argv) {
  auto process = std::make_unique<Process>(name, network_->InHost(host, argv),
                                           absl::StrCat(dir_, "/", name, ".log"));
  EXPECT_TRUE(process->Start()) << name;
  return process;
}

void HostFleet::StopProcess(std::unique_ptr<Process>& process) {
  if (!process || !process->running()) return;
  process->Kill(SIGTERM);
  if (process->Wait(absl::Seconds(10)) < 0) {
    process->Kill(SIGKILL);
    process->Wait(absl::Seconds(5));
  }
}

}  // namespace rein::testing
