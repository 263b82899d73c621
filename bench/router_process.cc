// One real rein-router process for a benchmark (see router_process.h).
#include "bench/router_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/proto_time.h"
#include "grpcpp/grpcpp.h"

namespace rein::bench {

int FreePort() {
  grpc::ServerBuilder probe;
  int port = 0;
  probe.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  probe.BuildAndStart()->Shutdown(std::chrono::system_clock::now());
  return port;
}

bool RouterProcess::Start(const std::string& binary, const std::string& dir,
                          const std::vector<std::string>& flags) {
  const int port = FreePort();
  // Everything the child needs is made before fork: the benchmark has threads, and the child
  // may only make async-signal-safe calls.
  std::vector<std::string> args = {binary, absl::StrCat("--listen=127.0.0.1:", port)};
  args.insert(args.end(), flags.begin(), flags.end());
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  const std::string log = dir + "/router.log";
  const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    perror(log.c_str());
    return false;
  }
  pid_ = fork();
  if (pid_ == 0) {
    // The router dies with the benchmark, whatever ends it.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    dup2(fd, 2);
    execv(binary.c_str(), argv.data());
    _exit(127);
  }
  close(fd);
  if (pid_ < 0) {
    perror("fork");
    return false;
  }
  watchdog_->AddChild(pid_);
  grpc::ChannelArguments channel_args;
  channel_args.SetMaxReceiveMessageSize(64 << 20);
  auto channel = grpc::CreateCustomChannel(absl::StrCat("127.0.0.1:", port),
                                           grpc::InsecureChannelCredentials(), channel_args);
  if (!channel->WaitForConnected(absl::ToChronoTime(absl::Now() + absl::Seconds(30)))) {
    fprintf(stderr, "the router did not come up; its log is %s\n", log.c_str());
    return false;
  }
  stub_ = rein::v1::Router::NewStub(channel);
  return true;
}

void RouterProcess::Stop(absl::Duration grace) {
  if (pid_ <= 0) return;
  if (grace > absl::ZeroDuration()) {
    kill(pid_, SIGTERM);
    const absl::Time until = absl::Now() + grace;
    while (waitpid(pid_, nullptr, WNOHANG) == 0 && absl::Now() < until) {
      absl::SleepFor(absl::Milliseconds(10));
    }
  }
  kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
  watchdog_->RemoveChild(pid_);
  pid_ = -1;
}

void IterationGaps::Add(const std::string& run_id, const rein::v1::RunEvent& e) {
  event_bytes += e.ByteSizeLong();
  last_time = rein::FromProtoTime(e.time());
  if (e.has_stage_changed() && e.stage_changed().to() == rein::v1::DECIDING) {
    int64_t t = absl::ToUnixMicros(rein::FromProtoTime(e.time()));
    if (last >= 0 && e.stage_changed().from() == rein::v1::EVALUATING) {
      us.push_back(static_cast<double>(t - last));
    }
    last = t;
  }
  if (e.has_finished() && e.finished().outcome().reason() != rein::v1::GOAL_ACHIEVED) {
    fprintf(stderr, "run %s ended %s: %s\n", run_id.c_str(),
            rein::v1::TerminationReason_Name(e.finished().outcome().reason()).c_str(),
            e.finished().outcome().message().c_str());
  }
}

IterationGaps WatchToEnd(rein::v1::Router::Stub* stub, const std::string& run_id,
                         absl::Duration limit) {
  IterationGaps gaps;
  if (run_id.empty()) return gaps;
  rein::v1::WatchRunRequest req;
  req.set_run_id(run_id);
  grpc::ClientContext ctx;
  ctx.set_deadline(absl::ToChronoTime(absl::Now() + limit));
  auto reader = stub->WatchRun(&ctx, req);
  rein::v1::RunEvent e;
  while (reader->Read(&e)) gaps.Add(run_id, e);
  grpc::Status s = reader->Finish();
  if (!s.ok()) fprintf(stderr, "WatchRun %s: %s\n", run_id.c_str(), s.error_message().c_str());
  return gaps;
}

}  // namespace rein::bench
