// Memory under abuse: starts the real router, planner and executor, records each one's idle
// RSS, sends a storm of malformed requests (undecodable bytes to every method, values that
// decode but fail validation, 4 MiB and over-limit messages, unknown methods) over several
// channels at once, and prints each service's RSS right after the storm and again later, then
// the router's RSS with 1,000 runs in flight. It prints figures; it never asserts a speed.
//   bazel build //bench:abuse_bench
//   bazel-bin/bench/abuse_bench [--quick] [--requests=100000] [--preload=/usr/lib/...so]
// Every phase has a deadline; the services die with the bench (process group, PDEATHSIG).
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "rein/v1/executor.pb.h"
#include "rein/v1/planner.pb.h"
#include "rein/v1/router.grpc.pb.h"
#include "tests/cluster.h"

ABSL_FLAG(bool, quick, false, "a smaller run for smoke tests (10,000 requests, shorter waits)");
ABSL_FLAG(int, requests, 100000, "malformed requests sent in all (--quick: 10,000)");
ABSL_FLAG(int, channels, 8, "client channels (connections) sending at once");
ABSL_FLAG(int, window, 8, "calls in flight per channel");
ABSL_FLAG(int, big_every, 2000, "one request in this many is a 4 MiB or over-limit message");
ABSL_FLAG(int, settle_seconds, 10, "wait after the storm before the last RSS reading");
ABSL_FLAG(int, inflight_runs, 1000, "runs held in flight for the router's RSS (0 = skip)");
ABSL_FLAG(std::string, preload, "",
          "a shared library to LD_PRELOAD into the three services (e.g. another allocator)");
ABSL_FLAG(std::string, service_env, "",
          "space-separated NAME=VALUE pairs added to the services' environment");
ABSL_FLAG(std::vector<std::string>, service_flags, {},
          "flags added to all three services' command lines");
ABSL_FLAG(std::string, router_binary, "",
          "rein-router to run instead of the built one (e.g. another build or a wrapper script)");
ABSL_FLAG(std::string, planner_binary, "", "rein-planner to run instead of the built one");
ABSL_FLAG(std::string, executor_binary, "", "rein-executor to run instead of the built one");
ABSL_FLAG(std::string, dir, "", "scratch directory (default: a new one under /tmp)");

namespace {

using rein::testing::FreePort;
using rein::testing::RunfilePath;

// Pids (= process group ids) of the services, for the watchdog.
std::atomic<pid_t> g_children[3] = {{0}, {0}, {0}};

void KillChildren() {
  for (auto& pid : g_children) {
    pid_t p = pid.load();
    if (p > 0) kill(-p, SIGKILL);
  }
}

// Kills the services and exits when the whole bench overruns `limit`.
void StartWatchdog(absl::Duration limit) {
  std::thread([limit] {
    absl::SleepFor(limit);
    fprintf(stderr, "abuse_bench: overall deadline of %s passed; killing the services\n",
            absl::FormatDuration(limit).c_str());
    fflush(stdout);
    KillChildren();
    _exit(3);
  }).detach();
}

// One service process in its own process group, killed when the bench dies.
class Service {
 public:
  Service(int slot, std::string name, std::vector<std::string> argv, std::string log)
      : slot_(slot), name_(std::move(name)), argv_(std::move(argv)), log_(std::move(log)) {}
  ~Service() { Stop(); }

  bool Start() {
    std::vector<char*> args;
    for (auto& a : argv_) args.push_back(a.data());
    args.push_back(nullptr);
    int fd = open(log_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    pid_t parent = getpid();
    pid_ = fork();
    if (pid_ < 0) return false;
    if (pid_ == 0) {
      setpgid(0, 0);
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(127);
      if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
      }
      execv(args[0], args.data());
      _exit(127);
    }
    setpgid(pid_, pid_);
    g_children[slot_] = pid_;
    if (fd >= 0) close(fd);
    return true;
  }

  void Stop() {
    if (pid_ <= 0) return;
    kill(-pid_, SIGTERM);
    absl::Time until = absl::Now() + absl::Seconds(10);
    while (waitpid(pid_, nullptr, WNOHANG) == 0) {
      if (absl::Now() > until) {
        kill(-pid_, SIGKILL);
        waitpid(pid_, nullptr, 0);
        break;
      }
      absl::SleepFor(absl::Milliseconds(20));
    }
    g_children[slot_] = 0;
    pid_ = -1;
  }

  // VmRSS in MiB (-1 when the process is gone).
  double RssMiB() const {
    std::ifstream in(absl::StrCat("/proc/", pid_, "/status"));
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6)) / 1024.0;
    }
    return -1;
  }

  bool Alive() const { return pid_ > 0 && waitpid(pid_, nullptr, WNOHANG) == 0; }
  const std::string& name() const { return name_; }

 private:
  int slot_;
  std::string name_;
  std::vector<std::string> argv_;
  std::string log_;
  pid_t pid_ = -1;
};

// The command line of a service: `env` with the extra environment, then the binary (`binary`
// if set, else the built one at runfile path `runfile`) and flags.
std::vector<std::string> CommandLine(const std::string& runfile, const std::string& binary,
                                     std::vector<std::string> flags) {
  std::vector<std::string> argv = {"/usr/bin/env"};
  if (!absl::GetFlag(FLAGS_preload).empty()) {
    argv.push_back("LD_PRELOAD=" + absl::GetFlag(FLAGS_preload));
  }
  for (absl::string_view pair :
       absl::StrSplit(absl::GetFlag(FLAGS_service_env), ' ', absl::SkipEmpty())) {
    argv.emplace_back(pair);
  }
  argv.push_back(binary.empty() ? RunfilePath(runfile) : binary);
  for (std::string& flag : flags) argv.push_back(std::move(flag));
  for (const std::string& flag : absl::GetFlag(FLAGS_service_flags)) argv.push_back(flag);
  return argv;
}

// One malformed request: where it goes and its bytes.
struct Payload {
  int service;  // 0 router, 1 planner, 2 executor
  std::string method;
  grpc::ByteBuffer bytes;
};

grpc::ByteBuffer Bytes(const std::string& data) {
  grpc::Slice slice(data);
  return grpc::ByteBuffer(&slice, 1);
}

grpc::ByteBuffer Bytes(const google::protobuf::Message& message) {
  return Bytes(message.SerializeAsString());
}

// Bytes that no protobuf parser accepts: a field with the invalid wire type 7, then noise.
std::string Undecodable(size_t size, unsigned seed) {
  std::string out(size, '\0');
  out[0] = static_cast<char>(0x0F);  // field 1, wire type 7
  for (size_t i = 1; i < size; ++i) out[i] = static_cast<char>((seed * 2654435761u + i * 97) >> 7);
  return out;
}

const std::vector<std::vector<std::string>> kMethods = {
    {"/rein.v1.Router/StartRun", "/rein.v1.Router/GetRun", "/rein.v1.Router/ListRuns",
     "/rein.v1.Router/CancelRun", "/rein.v1.Router/ResumeRun", "/rein.v1.Router/ForkRun",
     "/rein.v1.Router/WatchRun", "/rein.v1.Router/ExportRun"},
    {"/rein.v1.Planner/Plan", "/rein.v1.Planner/Decide", "/rein.v1.Planner/Evaluate"},
    {"/rein.v1.Executor/ListTools", "/rein.v1.Executor/Execute", "/rein.v1.Executor/CopyWorkspace",
     "/rein.v1.Executor/DeleteWorkspace", "/rein.v1.Executor/ForgetRun"},
};

// Small malformed requests: undecodable bytes to every method, decodable but invalid values,
// unknown methods.
std::vector<Payload> SmallPayloads() {
  std::vector<Payload> out;
  unsigned seed = 1;
  for (int s = 0; s < 3; ++s) {
    for (const std::string& method : kMethods[s]) {
      for (size_t size : {16, 700, 6000})
        out.push_back({s, method, Bytes(Undecodable(size, ++seed))});
    }
    out.push_back({s, absl::StrCat(kMethods[s][0], "Nope"), Bytes(Undecodable(64, ++seed))});
  }
  out.push_back({0, "/no.such.Service/Call", Bytes(Undecodable(64, ++seed))});
  rein::v1::StartRunRequest start;  // no goal
  start.mutable_spec()->set_workspace("../outside");
  out.push_back({0, kMethods[0][0], Bytes(start)});
  start.mutable_spec()->set_goal(std::string(20 * 1024, 'g'));  // over the 16 KiB goal limit
  out.push_back({0, kMethods[0][0], Bytes(start)});
  rein::v1::GetRunRequest get;
  get.set_run_id(std::string(300, 'x'));
  out.push_back({0, kMethods[0][1], Bytes(get)});
  rein::v1::ListRunsRequest list;
  list.set_page_size(-5);
  list.set_page_token("not a token");
  out.push_back({0, kMethods[0][2], Bytes(list)});
  rein::v1::ResumeRunRequest resume;
  resume.set_run_id("no-such-run");
  resume.set_expected_version(-1);
  out.push_back({0, kMethods[0][4], Bytes(resume)});
  rein::v1::PlanRequest plan;  // no goal, negative iteration
  plan.set_iteration(-1);
  out.push_back({1, kMethods[1][0], Bytes(plan)});
  rein::v1::DecideRequest decide;
  decide.set_goal(std::string(20 * 1024, 'g'));
  out.push_back({1, kMethods[1][1], Bytes(decide)});
  rein::v1::ExecuteRequest execute;
  execute.set_call_id("c");
  execute.set_workspace("../../etc");
  execute.set_tool("read_file");
  execute.set_args_json("{not json");
  out.push_back({2, kMethods[2][1], Bytes(execute)});
  execute.set_workspace("ws");
  execute.set_tool("no_such_tool");
  out.push_back({2, kMethods[2][1], Bytes(execute)});
  return out;
}

// 4 MiB messages that decode but fail validation, and messages over the services' limits.
std::vector<Payload> BigPayloads() {
  // Just under the 4 MiB limit of the router and planner, so that these reach the services.
  const std::string four((4 << 20) - 4096, 'x');
  std::vector<Payload> out;
  rein::v1::StartRunRequest start;
  start.mutable_spec()->set_goal(four);
  start.mutable_spec()->set_workspace("ws");
  out.push_back({0, kMethods[0][0], Bytes(start)});
  rein::v1::PlanRequest plan;
  plan.set_goal(four);
  out.push_back({1, kMethods[1][0], Bytes(plan)});
  rein::v1::ExecuteRequest execute;
  execute.set_call_id("big");
  execute.set_workspace("ws");
  execute.set_tool("write_file");
  execute.set_args_json(absl::StrCat(R"({"path": "big.txt", "content": ")", four, "\"}"));
  out.push_back({2, kMethods[2][1], Bytes(execute)});
  for (int s = 0; s < 3; ++s) {
    out.push_back({s, kMethods[s][0], Bytes(Undecodable((4 << 20) - 4096, 7 + s))});
    out.push_back({s, kMethods[s][1], Bytes(Undecodable(17 << 20, 11 + s))});  // over any limit
  }
  return out;
}

// Sends requests [0, total) over `channels`, each with up to `window` calls in flight.
class Storm {
 public:
  Storm(std::vector<std::string> targets, int total, absl::Time deadline)
      : targets_(std::move(targets)), total_(total), deadline_(deadline) {
    small_ = SmallPayloads();
    big_ = BigPayloads();
  }

  void Run(int channels, int window, int big_every) {
    std::vector<std::thread> threads;
    for (int c = 0; c < channels; ++c) {
      threads.emplace_back([this, c, window, big_every] { Channel(c, window, big_every); });
    }
    for (auto& t : threads) t.join();
  }

  int sent() const { return sent_.load(); }
  std::map<int, int> codes() {
    absl::MutexLock lock(&mu_);
    return codes_;
  }

 private:
  void Channel(int c, int window, int big_every) {
    std::vector<std::unique_ptr<grpc::GenericStub>> stubs;
    for (const std::string& target : targets_) {
      grpc::ChannelArguments args;
      args.SetInt("rein.abuse_channel", c);  // a connection of its own
      args.SetMaxReceiveMessageSize(-1);
      stubs.push_back(std::make_unique<grpc::GenericStub>(
          grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args)));
    }
    absl::Mutex mu;
    int in_flight = 0;
    while (absl::Now() < deadline_) {
      int i = next_.fetch_add(1);
      if (i >= total_) break;
      const Payload& p = (big_every > 0 && i % big_every == big_every / 2)
                             ? big_[(i / big_every) % big_.size()]
                             : small_[i % small_.size()];
      {
        absl::MutexLock lock(&mu);
        auto room = [&] { return in_flight < window; };
        mu.AwaitWithDeadline(absl::Condition(&room), deadline_);
        ++in_flight;
      }
      auto* context = new grpc::ClientContext;
      context->set_deadline(
          absl::ToChronoTime(std::min(absl::Now() + absl::Seconds(20), deadline_)));
      auto* request = new grpc::ByteBuffer(p.bytes);
      auto* response = new grpc::ByteBuffer;
      stubs[p.service]->UnaryCall(context, p.method, grpc::StubOptions(), request, response,
                                  [&, context, request, response](grpc::Status status) {
                                    delete context;
                                    delete request;
                                    delete response;
                                    Count(status.error_code());
                                    absl::MutexLock lock(&mu);
                                    --in_flight;
                                  });
    }
    absl::MutexLock lock(&mu);
    auto drained = [&] { return in_flight == 0; };
    // Calls end by their own deadline at the latest; never wait past it.
    mu.AwaitWithDeadline(absl::Condition(&drained), deadline_ + absl::Seconds(25));
    if (in_flight != 0) {
      fprintf(stderr, "abuse_bench: %d calls still open at the deadline\n", in_flight);
      fflush(stdout);
      KillChildren();
      _exit(3);
    }
  }

  void Count(grpc::StatusCode code) {
    sent_.fetch_add(1);
    absl::MutexLock lock(&mu_);
    ++codes_[code];
  }

  std::vector<std::string> targets_;
  int total_;
  absl::Time deadline_;
  std::vector<Payload> small_, big_;
  std::atomic<int> next_{0}, sent_{0};
  absl::Mutex mu_;
  std::map<int, int> codes_;
};

// A planner script that holds every run in DECIDING for a minute (the router's in-flight load).
constexpr char kScript[] = R"({
  "plan": [{"reply": {"subtasks": [{"id": "wait", "description": "wait", "allowedTools": ["list_files"]}]}}],
  "decide": [{"delay_ms": 60000, "reply": {"toolCall": {"tool": "list_files", "args": {"path": "."}}}}],
  "evaluate": [{"reply": {"status": "COMPLETED", "summary": "done"}}]
})";

void Bench(const char* key, double value, const char* unit) {
  printf("BENCH\t%s\t%.2f\t%s\n", key, value, unit);
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const bool quick = absl::GetFlag(FLAGS_quick);
  const int total =
      quick ? std::min(absl::GetFlag(FLAGS_requests), 10000) : absl::GetFlag(FLAGS_requests);
  const int settle = quick ? std::min(absl::GetFlag(FLAGS_settle_seconds), 5)
                           : absl::GetFlag(FLAGS_settle_seconds);
  const int inflight_runs = quick ? std::min(absl::GetFlag(FLAGS_inflight_runs), 200)
                                  : absl::GetFlag(FLAGS_inflight_runs);
  StartWatchdog(quick ? absl::Seconds(150) : absl::Seconds(900));
  setvbuf(stdout, nullptr, _IOLBF, 0);
  if (getenv("TEST_SRCDIR") == nullptr) {  // run from bazel-bin: find the binaries' runfiles
    std::string self(4096, '\0');
    ssize_t n = readlink("/proc/self/exe", self.data(), self.size() - 1);
    if (n > 0) self.resize(n);
    setenv("TEST_SRCDIR", (self + ".runfiles").c_str(), 1);
    setenv("TEST_WORKSPACE", "rein", 1);
  }
  std::string dir = absl::GetFlag(FLAGS_dir);
  const bool own_dir = dir.empty();  // made here, and removed at the end
  if (own_dir) {
    std::string tmpl = "/tmp/rein-abuse-XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) return 1;
    dir = tmpl;
  }
  mkdir(dir.c_str(), 0755);
  mkdir((dir + "/workspaces").c_str(), 0755);
  mkdir((dir + "/workspaces/ws").c_str(), 0755);
  std::ofstream(dir + "/script.json") << kScript;

  const int router_port = FreePort(), planner_port = FreePort(), executor_port = FreePort();
  auto target = [](int port) { return absl::StrCat("127.0.0.1:", port); };
  Service executor(
      2, "executor",
      CommandLine("executor_service/rein-executor", absl::GetFlag(FLAGS_executor_binary),
                  {absl::StrCat("--listen=", target(executor_port)),
                   absl::StrCat("--workspace_root=", dir, "/workspaces"), "--sandbox=none",
                   "--allow_unsandboxed"}),
      dir + "/executor.log");
  Service planner(
      1, "planner",
      CommandLine("planner_service/rein-planner", absl::GetFlag(FLAGS_planner_binary),
                  {absl::StrCat("--listen=", target(planner_port)), "--backend=scripted",
                   absl::StrCat("--script=", dir, "/script.json")}),
      dir + "/planner.log");
  Service router(0, "router",
                 CommandLine("router_service/rein-router", absl::GetFlag(FLAGS_router_binary),
                             {absl::StrCat("--listen=", target(router_port)),
                              absl::StrCat("--store=sqlite:", dir, "/rein.db"),
                              absl::StrCat("--planner_target=", target(planner_port)),
                              absl::StrCat("--executor_target=", target(executor_port))}),
                 dir + "/router.log");
  std::vector<Service*> services = {&router, &planner, &executor};
  const std::vector<std::string> targets = {target(router_port), target(planner_port),
                                            target(executor_port)};
  for (Service* s : {&executor, &planner, &router}) {
    int i = s == &router ? 0 : s == &planner ? 1 : 2;
    if (!s->Start() ||
        !rein::testing::WaitServing(targets[i], absl::Seconds(30), dir + "/health.log")) {
      fprintf(stderr, "abuse_bench: %s did not start; see %s\n", s->name().c_str(), dir.c_str());
      return 1;
    }
  }
  printf("abuse_bench: services up (logs in %s)%s%s\n", dir.c_str(),
         absl::GetFlag(FLAGS_preload).empty() ? "" : ", LD_PRELOAD=",
         absl::GetFlag(FLAGS_preload).c_str());
  absl::SleepFor(absl::Seconds(2));
  double idle[3], after[3], later[3];
  for (int i = 0; i < 3; ++i) idle[i] = services[i]->RssMiB();

  absl::Time start = absl::Now();
  Storm storm(targets, total, start + (quick ? absl::Seconds(60) : absl::Seconds(480)));
  storm.Run(absl::GetFlag(FLAGS_channels), absl::GetFlag(FLAGS_window),
            absl::GetFlag(FLAGS_big_every));
  double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  for (int i = 0; i < 3; ++i) after[i] = services[i]->RssMiB();
  printf("%d malformed requests answered in %.1f s (%.0f/s); status codes:", storm.sent(), seconds,
         storm.sent() / seconds);
  for (const auto& [code, n] : storm.codes()) printf(" %d:%d", code, n);
  printf("\n");
  absl::SleepFor(absl::Seconds(settle));
  for (int i = 0; i < 3; ++i) later[i] = services[i]->RssMiB();
  printf("%-9s %9s %9s %9s %7s  alive\n", "service", "idle MiB", "after", "+settle", "ratio");
  for (int i = 0; i < 3; ++i) {
    printf("%-9s %9.1f %9.1f %9.1f %7.2f  %s\n", services[i]->name().c_str(), idle[i], after[i],
           later[i], later[i] / idle[i], services[i]->Alive() ? "yes" : "NO");
  }
  for (int i = 0; i < 3; ++i) {
    const std::string key = absl::StrCat("memory.", services[i]->name());
    Bench((key + ".idle_mib").c_str(), idle[i], "MiB");
    Bench((key + ".after_mib").c_str(), after[i], "MiB");
    Bench((key + ".after_10s_mib").c_str(), later[i], "MiB");
    Bench((key + ".ratio_10s").c_str(), later[i] / idle[i], "x");
  }

  if (inflight_runs > 0) {
    auto stub = rein::v1::Router::NewStub(
        grpc::CreateChannel(targets[0], grpc::InsecureChannelCredentials()));
    absl::Time until = absl::Now() + (quick ? absl::Seconds(30) : absl::Seconds(120));
    int started = 0;
    for (int i = 0; i < inflight_runs && absl::Now() < until; ++i) {
      rein::v1::StartRunRequest request;
      request.mutable_spec()->set_goal(absl::StrCat("wait ", i));
      request.mutable_spec()->set_workspace("ws");
      request.mutable_spec()->add_tools("list_files");
      request.mutable_spec()->mutable_limits()->mutable_deadline()->set_seconds(600);
      rein::v1::Run run;
      grpc::ClientContext context;
      context.set_deadline(absl::ToChronoTime(std::min(absl::Now() + absl::Seconds(10), until)));
      if (stub->StartRun(&context, request, &run).ok()) ++started;
    }
    absl::SleepFor(absl::Seconds(2));  // every run reaches DECIDING and waits there
    double rss = router.RssMiB();
    printf("router RSS with %d runs in flight (after the storm): %.1f MiB\n", started, rss);
    if (started == inflight_runs && inflight_runs == 1000) {
      Bench("memory.router.inflight_1000_mib", rss, "MiB");
    }
  }
  for (Service* s : {&router, &planner, &executor}) s->Stop();
  // The services' logs and database (30 MB and more after the storm) go with a directory made
  // here; one passed with --dir is left as it is.
  if (own_dir) {
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  }
  return 0;
}
