// Test helper: the three real rein binaries started as processes on loopback TCP.
#include "tests/cluster.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/tls.h"

namespace rein::testing {

Process::Process(std::string name, std::vector<std::string> argv, std::string log_path)
    : name_(std::move(name)), argv_(std::move(argv)), log_path_(std::move(log_path)) {}

Process::~Process() {
  if (pid_ > 0) {
    Kill(SIGKILL);
    Wait(absl::Seconds(5));
  }
}

bool Process::Start() {
  // Everything the child needs is prepared before fork: the test process has threads, and the
  // child may only make async-signal-safe calls.
  std::vector<char*> args;
  for (auto& a : argv_) args.push_back(a.data());
  args.push_back(nullptr);
  int fd = open(log_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  pid_ = fork();
  if (pid_ < 0) return false;
  if (pid_ == 0) {
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    execv(args[0], args.data());
    _exit(127);
  }
  if (fd >= 0) close(fd);
  return true;
}

void Process::Kill(int signal) {
  if (pid_ > 0) kill(pid_, signal);
}

int Process::Wait(absl::Duration timeout) {
  if (pid_ <= 0) return 0;
  absl::Time until = absl::Now() + timeout;
  while (true) {
    int status = 0;
    pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      pid_ = -1;
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    if (absl::Now() > until) return -1;
    absl::SleepFor(absl::Milliseconds(10));
  }
}

std::string RunfilePath(const std::string& relative) {
  const char* srcdir = getenv("TEST_SRCDIR");
  const char* workspace = getenv("TEST_WORKSPACE");
  if (srcdir == nullptr) return relative;
  return absl::StrCat(srcdir, "/", workspace ? workspace : "rein", "/", relative);
}

std::string Sha256Of(const std::string& text) {
  std::string command = absl::StrCat("printf %s '", text, "' | sha256sum");
  FILE* pipe = popen(command.c_str(), "r");
  char buffer[128] = {0};
  size_t n = pipe ? fread(buffer, 1, 64, pipe) : 0;
  if (pipe) pclose(pipe);
  return std::string(buffer, n);
}

bool WriteTokensFile(const std::string& path,
                     const std::vector<std::pair<std::string, std::string>>& tokens) {
  std::string text = "# test tokens\n";
  for (const auto& [token, who] : tokens) {
    absl::StrAppend(&text, "sha256:", Sha256Of(token), " ", who, "\n");
  }
  const std::string tmp = path + ".tmp";
  std::ofstream(tmp) << text;
  return rename(tmp.c_str(), path.c_str()) == 0;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

std::string ThreeStepScript(int delay_ms) {
  std::string out = R"({
  "plan": [
    {"when": {"completed_contains": "search"}, "reply": {"goalAchieved": true, "reasoning": "done"}},
    {"reply": {"subtasks": [
      {"id": "list", "description": "list files", "allowedTools": ["list_files"]},
      {"id": "read", "description": "read the readme", "allowedTools": ["read_file"]},
      {"id": "search", "description": "search for TODO", "allowedTools": ["search_text"]}]}}
  ],
  "decide": [
    {"when": {"subtask": "list"}, "delay_ms": DELAY,
     "reply": {"toolCall": {"tool": "list_files", "args": {"path": "."}}}},
    {"when": {"subtask": "read"}, "delay_ms": DELAY,
     "reply": {"toolCall": {"tool": "read_file", "args": {"path": "README.md"}}}},
    {"when": {"subtask": "search"}, "delay_ms": DELAY,
     "reply": {"toolCall": {"tool": "search_text", "args": {"pattern": "TODO"}}}}
  ],
  "evaluate": [
    {"when": {"action_ok": true}, "reply": {"status": "COMPLETED", "summary": "${subtask}: ${observation}"}},
    {"reply": {"status": "NEEDS_MORE_WORK", "summary": "failed"}}
  ]
})";
  ;
  for (size_t at; (at = out.find("DELAY")) != std::string::npos;) {
    out.replace(at, 5, std::to_string(delay_ms));
  }
  return out;
}

std::string MakeTestDirWithCertificates(const std::string& name) {
  const std::string base = getenv("TEST_TMPDIR") ? getenv("TEST_TMPDIR") : "/tmp";
  const std::string dir = absl::StrCat(base, "/", name);
  mkdir(dir.c_str(), 0755);
  const std::string make =
      absl::StrCat(RunfilePath("common/testing/make_certs.sh"), " ", dir, "/tls --test");
  return system(make.c_str()) == 0 ? dir : "";
}

bool StartListening(Process& process, int* port) {
  const size_t logged = ReadFile(process.log_path()).size();  // a restart appends to the log
  if (!process.Start()) return false;
  if (*port != 0) return true;  // a restart, on the port it had
  const absl::Time until = absl::Now() + absl::Seconds(20);
  while (absl::Now() < until && process.running()) {
    const std::string log = ReadFile(process.log_path()).substr(logged);
    const size_t serving = log.find("\"msg\":\"serving\"");
    const size_t at = log.find("\"port\":\"", serving == std::string::npos ? log.size() : serving);
    if (at != std::string::npos) {
      *port = atoi(log.c_str() + at + 8);
      return *port > 0;
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  return false;
}

Cluster::Cluster(Options options) : options_(std::move(options)) {
  if (options_.workspace_root.empty()) options_.workspace_root = options_.dir + "/workspaces";
  mkdir(options_.workspace_root.c_str(), 0755);
}

Cluster::~Cluster() {
  for (auto* p : {&router_, &planner_, &executor_}) {
    if (*p) {
      (*p)->Kill(SIGTERM);
      if ((*p)->Wait(absl::Seconds(10)) < 0) (*p)->Kill(SIGKILL);
    }
  }
}

bool Cluster::WaitServing(const std::string& target, absl::Duration timeout) {
  return rein::testing::WaitServing(target, timeout, options_.dir + "/health.log",
                                    TlsFlags("client"));
}

bool WaitServing(const std::string& target, absl::Duration timeout, const std::string& log_path,
                 const std::vector<std::string>& probe_flags) {
  absl::Time until = absl::Now() + timeout;
  while (absl::Now() < until) {
    std::vector<std::string> argv = {RunfilePath("common/rein-health")};
    for (const std::string& flag : probe_flags) argv.push_back(flag);
    argv.push_back(target);
    Process probe("health", argv, log_path);
    probe.Start();
    if (probe.Wait(absl::Seconds(5)) == 0) return true;
    absl::SleepFor(absl::Milliseconds(50));
  }
  return false;
}

std::vector<std::string> Cluster::TlsFlags(const std::string& name) const {
  if (options_.tls_dir.empty()) return {};
  const std::string& d = options_.tls_dir;
  return {absl::StrCat("--tls_ca=", d, "/ca.pem"),
          absl::StrCat("--tls_cert=", d, "/", name, ".pem"),
          absl::StrCat("--tls_key=", d, "/", name, ".key")};
}

void Cluster::Authorize(grpc::ClientContext* context) const {
  if (!options_.token.empty()) context->AddMetadata("authorization", "Bearer " + options_.token);
}

bool Cluster::StartRouter() {
  std::string executors_target = executor_target();
  if (!extra_ports_.empty()) {
    executors_target = "ipv4:" + executor_target();
    for (int port : extra_ports_) absl::StrAppend(&executors_target, ",127.0.0.1:", port);
  }
  std::vector<std::string> argv = {options_.router_binary.empty()
                                       ? RunfilePath("router_service/rein-router")
                                       : options_.router_binary,
                                   absl::StrCat("--listen=", router_target()),
                                   absl::StrCat("--store=sqlite:", options_.dir, "/rein.db"),
                                   absl::StrCat("--planner_target=", planner_target()),
                                   absl::StrCat("--executor_target=", executors_target)};
  for (const std::string& flag : TlsFlags("router")) argv.push_back(flag);
  for (const std::string& flag : options_.router_flags) argv.push_back(flag);
  router_ = std::make_unique<Process>("router", argv, options_.dir + "/router.log");
  if (!StartListening(*router_, &router_port_)) return false;
  if (!rein::testing::WaitServing(router_target(), absl::Seconds(20), options_.dir + "/health.log",
                                  TlsFlags(options_.router_client_cert))) {
    return false;
  }
  TlsFiles tls;
  if (!options_.tls_dir.empty()) {
    const std::string& name = options_.router_client_cert;
    tls = {absl::StrCat(options_.tls_dir, "/", name, ".pem"),
           absl::StrCat(options_.tls_dir, "/", name, ".key"), options_.tls_dir + "/ca.pem"};
  }
  stub_ =
      rein::v1::Router::NewStub(grpc::CreateChannel(router_target(), MakeChannelCredentials(tls)));
  return true;
}

int Cluster::KillRouter(int signal) {
  router_->Kill(signal);
  return router_->Wait(absl::Seconds(20));
}

std::unique_ptr<Process> Cluster::NewExecutor(int i) {
  const std::string target = executor_target(i);
  std::vector<std::string> exec_argv = {RunfilePath("executor_service/rein-executor"),
                                        absl::StrCat("--listen=", target),
                                        absl::StrCat("--workspace_root=", options_.workspace_root),
                                        absl::StrCat("--executor_id=executor-", i)};
  for (const auto& flag : options_.executor_flags) exec_argv.push_back(flag);
  for (const auto& flag : TlsFlags(options_.executor_cert)) exec_argv.push_back(flag);
  return std::make_unique<Process>(
      "executor", exec_argv,
      options_.dir + (i == 0 ? "/executor.log" : absl::StrCat("/executor-", i, ".log")));
}

bool Cluster::RestartExecutor(int i) {
  std::unique_ptr<Process>& slot = i == 0 ? executor_ : extra_executors_[i - 1];
  slot = NewExecutor(i);
  return slot->Start() && WaitServing(executor_target(i), absl::Seconds(20));
}

bool Cluster::Start() {
  std::string script = options_.dir + "/script.json";
  std::ofstream(script) << options_.script_json;
  executor_ = NewExecutor(0);
  for (int i = 1; i < options_.executors; ++i) {
    extra_ports_.push_back(0);
    extra_executors_.push_back(NewExecutor(i));
    if (!StartListening(*extra_executors_.back(), &extra_ports_.back())) return false;
    if (!WaitServing(executor_target(i), absl::Seconds(20))) {
      return false;
    }
  }
  std::vector<std::string> planner_argv = {RunfilePath("planner_service/rein-planner"),
                                           absl::StrCat("--listen=", planner_target())};
  if (options_.planner_flags.empty()) {
    planner_argv.push_back("--backend=scripted");
    planner_argv.push_back(absl::StrCat("--script=", script));
  } else {
    for (const auto& flag : options_.planner_flags) planner_argv.push_back(flag);
  }
  for (const auto& flag : TlsFlags(options_.planner_cert)) planner_argv.push_back(flag);
  planner_ = std::make_unique<Process>("planner", planner_argv, options_.dir + "/planner.log");
  if (!StartListening(*executor_, &executor_port_) || !StartListening(*planner_, &planner_port_)) {
    return false;
  }
  if (!WaitServing(executor_target(), absl::Seconds(20))) return false;
  if (!WaitServing(planner_target(), absl::Seconds(20))) return false;
  return StartRouter();
}

absl::StatusOr<rein::v1::Run> StartRunWith(rein::v1::Router::Stub* stub,
                                           grpc::ClientContext* context,
                                           const rein::v1::RunSpec& spec,
                                           const std::string& request_id) {
  rein::v1::StartRunRequest request;
  *request.mutable_spec() = spec;
  request.set_request_id(request_id);
  rein::v1::Run run;
  context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  grpc::Status status = stub->StartRun(context, request, &run);
  if (!status.ok()) {
    return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
  }
  return run;
}

absl::StatusOr<rein::v1::Run> GetRunWith(rein::v1::Router::Stub* stub, grpc::ClientContext* context,
                                         const std::string& run_id) {
  rein::v1::GetRunRequest request;
  request.set_run_id(run_id);
  rein::v1::Run run;
  context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  grpc::Status status = stub->GetRun(context, request, &run);
  if (!status.ok()) {
    return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
  }
  return run;
}

absl::StatusOr<rein::v1::Run> Cluster::StartRun(const rein::v1::RunSpec& spec,
                                                const std::string& request_id) {
  grpc::ClientContext context;
  Authorize(&context);
  return StartRunWith(stub_.get(), &context, spec, request_id);
}

absl::StatusOr<rein::v1::Run> Cluster::Resume(const rein::v1::Run& run,
                                              const rein::v1::Review& review) {
  rein::v1::ResumeRunRequest request;
  request.set_run_id(run.run_id());
  request.set_expected_version(run.state().version());
  *request.mutable_review() = review;
  rein::v1::Run out;
  grpc::ClientContext context;
  Authorize(&context);
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  grpc::Status status = stub_->ResumeRun(&context, request, &out);
  if (!status.ok()) {
    return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
  }
  return out;
}

absl::StatusOr<rein::v1::Run> Cluster::Approve(const rein::v1::Run& run) {
  rein::v1::Review review;
  review.mutable_approve();
  return Resume(run, review);
}

absl::StatusOr<rein::v1::Run> Cluster::GetRun(const std::string& run_id) {
  grpc::ClientContext context;
  Authorize(&context);
  return GetRunWith(stub_.get(), &context, run_id);
}

grpc::Status Cluster::Watch(const std::string& run_id, int64_t after_seq, absl::Duration timeout,
                            std::vector<rein::v1::RunEvent>* events) {
  rein::v1::WatchRunRequest request;
  request.set_run_id(run_id);
  request.set_after_seq(after_seq);
  grpc::ClientContext context;
  Authorize(&context);
  context.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  auto reader = stub_->WatchRun(&context, request);
  rein::v1::RunEvent event;
  while (reader->Read(&event)) events->push_back(event);
  return reader->Finish();
}

absl::StatusOr<rein::v1::Run> Cluster::WaitForStage(const std::string& run_id,
                                                    rein::v1::Stage stage, absl::Duration timeout) {
  absl::Time until = absl::Now() + timeout;
  while (true) {
    absl::StatusOr<rein::v1::Run> run = GetRun(run_id);
    if (!run.ok()) return run;
    rein::v1::Stage s = run->state().stage();
    if (s == stage || s == rein::v1::FINISHED || s == rein::v1::FAILED ||
        s == rein::v1::CANCELLED || absl::Now() > until) {
      return run;
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
}

std::string Cluster::Logs() {
  std::string out;
  std::vector<std::string> names = {"router", "planner", "executor"};
  for (size_t i = 0; i < extra_executors_.size(); ++i) {
    names.push_back(absl::StrCat("executor-", i + 1));
  }
  for (const std::string& name : names) {
    std::string text = ReadFile(options_.dir + "/" + name + ".log");
    if (text.size() > 4000) text = text.substr(text.size() - 4000);
    absl::StrAppend(&out, "--- ", name, " ---\n", text, "\n");
  }
  return out;
}

}  // namespace rein::testing
