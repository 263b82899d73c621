// Runs one parsed reinctl command against a Router stub and maps the outcome to an exit code.
#ifndef REIN_CLI_COMMAND_RUNNER_H_
#define REIN_CLI_COMMAND_RUNNER_H_

#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "cli/args.h"
#include "grpcpp/support/status.h"
#include "rein/v1/executor.grpc.pb.h"
#include "rein/v1/router.grpc.pb.h"

namespace rein::cli {

// reinctl's exit codes.
enum ExitCode : int {
  kExitFinished = 0,  // the run finished (or the command succeeded)
  kExitFailed = 1,    // the run FAILED or was CANCELLED
  kExitUsage = 2,     // bad subcommand, flag or file
  kExitPaused = 3,    // the run waits for a review
  kExitRpcError = 4,  // talking to the router (or, for tools, the executor) failed
};

struct RunnerOptions {
  // Keep a live progress line (redrawn with \r) on `err` while watching.
  bool live_progress = false;
  // Time zone of the times shown by list and show.
  absl::TimeZone zone = absl::UTCTimeZone();
  // Recorded as Review.reviewer.
  std::string reviewer;
  // Deadline of each unary RPC (CancelRun gets five times as long: it waits for the run).
  absl::Duration rpc_timeout = absl::Seconds(30);
  // Watching a run that is already PAUSED: when no event arrives for this long, the run is
  // taken to be waiting and watch exits 3 (the log had nothing after --after_seq).
  absl::Duration paused_idle_grace = absl::Seconds(1);
  // The console's base URL (REIN_CONSOLE_URL, e.g. "http://127.0.0.1:8080"): when set, a run
  // that waits is printed with its console link, <console_url>/#/run/<run_id>.
  std::string console_url;
  // The executor `tools` asks (not owned); tools fails with a usage error without one.
  v1::Executor::StubInterface* executor = nullptr;
};

// Runs reinctl commands. Writes results to `out` and diagnostics (and the progress line) to
// `err`. Not thread-safe: one command at a time.
class CommandRunner {
 public:
  CommandRunner(v1::Router::StubInterface* stub, std::ostream& out, std::ostream& err,
                RunnerOptions options);

  // Runs `command`; returns one of ExitCode.
  int Run(const Command& command);

 private:
  int Start(const Command& command);
  int Watch(const std::string& run_id, int64_t after_seq, int64_t min_version, bool json);
  int Review(const Command& command);
  int Cancel(const Command& command);
  int List(const Command& command);
  int Quota(const Command& command);
  int Notifications(const Command& command);
  int Show(const Command& command);
  int Export(const Command& command);
  int Tools(const Command& command);
  int Fork(const Command& command);
  int Replay(const Command& command);
  int Diff(const Command& command);
  // The run and its whole event log (for a run still going: what it has logged so far).
  grpc::Status ReadRunAndLog(const std::string& run_id, v1::Run* run,
                             std::vector<v1::RunEvent>* events);

  grpc::Status GetRun(const std::string& run_id, v1::Run* run);
  // Prints "reinctl: <rpc>: <CODE>: <message>" and returns kExitRpcError.
  int RpcError(absl::string_view rpc, const grpc::Status& status);
  // Prints "reinctl: <message>" and returns kExitUsage.
  int UsageError(absl::string_view message);
  // Prints the final report or the review hint of `run` and returns the matching exit code.
  int Conclude(const v1::Run& run, bool json);
  void SetDeadline(grpc::ClientContext& context, absl::Duration timeout) const;

  v1::Router::StubInterface* const stub_;
  std::ostream& out_;
  std::ostream& err_;
  const RunnerOptions options_;
  std::string router_flag_;  // " --router=X" when not the default, for printed commands
};

}  // namespace rein::cli

#endif  // REIN_CLI_COMMAND_RUNNER_H_
