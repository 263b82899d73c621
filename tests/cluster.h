// Test helper: the three real rein binaries started as processes on loopback TCP.
#ifndef REIN_TESTS_CLUSTER_H_
#define REIN_TESTS_CLUSTER_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "rein/v1/router.grpc.pb.h"

namespace rein::testing {

// One child process with its output in a log file.
class Process {
 public:
  Process(std::string name, std::vector<std::string> argv, std::string log_path);
  ~Process();
  bool Start();
  void Kill(int signal);
  // Waits for exit; returns the exit status (or -1 when still running after `timeout`).
  int Wait(absl::Duration timeout);
  bool running() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }
  const std::string& log_path() const { return log_path_; }

 private:
  std::string name_;
  std::vector<std::string> argv_;
  std::string log_path_;
  pid_t pid_ = -1;
};

// Path of a binary built by Bazel, from the test's runfiles.
std::string RunfilePath(const std::string& relative);

// A free TCP port on 127.0.0.1.
int FreePort();

// Starts `process`, a service whose --listen names `*port`: 0 until its first start, when it
// takes a free port itself and the one it took is read back from its "serving" log line into
// `*port` (a port picked free beforehand could be taken by a concurrent test's server in
// between). A restart keeps the port it had.
bool StartListening(Process& process, int* port);

// A scripted planner's script for a workspace holding README.md: plan three subtasks (list the
// files, read README.md, search for TODO), one read-only call each, every decision taking
// `delay_ms`; the goal is achieved once all three are done.
std::string ThreeStepScript(int delay_ms);

// Waits until `target` answers grpc.health.v1 with SERVING (probe output to `log_path`).
// `probe_flags` go to rein-health before the target (e.g. its --tls_* flags).
bool WaitServing(const std::string& target, absl::Duration timeout, const std::string& log_path,
                 const std::vector<std::string>& probe_flags = {});

// A scratch folder "$TEST_TMPDIR/<name>" (created) with the test certificates
// (common/testing/make_certs.sh --test) in its tls/; "" when they could not be made.
std::string MakeTestDirWithCertificates(const std::string& name);

// The hex SHA-256 of `text`, as a tokens file names a token (sha256:<hex>).
std::string Sha256Of(const std::string& text);

// Writes the router's tokens file `path` in one rename: a line
// "sha256:<hex of token> <principal> <roles>" per entry of `tokens`, each entry being
// {token, "<principal> <roles>"}.
bool WriteTokensFile(const std::string& path,
                     const std::vector<std::pair<std::string, std::string>>& tokens);

// The whole content of a file ("" when it cannot be read).
std::string ReadFile(const std::string& path);

// StartRun (deadline 20 s) and GetRun (10 s) on `stub`, with `context` as the caller prepared it
// (its credentials); a gRPC error as the absl::Status of the same code.
absl::StatusOr<rein::v1::Run> StartRunWith(rein::v1::Router::Stub* stub,
                                           grpc::ClientContext* context,
                                           const rein::v1::RunSpec& spec,
                                           const std::string& request_id);
absl::StatusOr<rein::v1::Run> GetRunWith(rein::v1::Router::Stub* stub, grpc::ClientContext* context,
                                         const std::string& run_id);

// The router, planner and executor, each on its own port, with a SQLite store and a
// workspace root under `dir`.
class Cluster {
 public:
  struct Options {
    std::string dir;             // scratch directory (store, logs, workspaces)
    std::string script_json;     // the scripted planner's script
    std::string workspace_root;  // empty = dir + "/workspaces"
    std::vector<std::string> executor_flags = {"--sandbox=none", "--allow_unsandboxed"};
    // When set, the planner runs with these flags instead of the scripted backend.
    std::vector<std::string> planner_flags;
    // Executors started, all on the one workspace root; the router reaches them all through
    // one round_robin target "ipv4:127.0.0.1:p1,127.0.0.1:p2,...".
    int executors = 1;
    // The router binary; empty = the one built with the test (router_service/rein-router).
    std::string router_binary;
    // When set (a folder made by common/testing/make_certs.sh), every service serves mTLS with
    // NAME.pem/NAME.key and ca.pem there, and the test's client presents client.pem.
    std::string tls_dir;
    // Certificate file names (without .pem/.key) of the planner and executor under tls_dir.
    std::string planner_cert = "planner", executor_cert = "executor";
    // The certificate the test's client presents to the router (and to probe its health).
    std::string router_client_cert = "client";
    std::vector<std::string> router_flags;  // added to the router's
    std::string token;                      // sent as `authorization: Bearer` when set
  };
  explicit Cluster(Options options);
  ~Cluster();

  // Starts all three, each on a port it takes itself (--listen=127.0.0.1:0), and waits until
  // each answers grpc.health.v1 with SERVING. The *_target()s are known from then on.
  bool Start();
  bool StartRouter();
  // Sends `signal` to the router and returns its exit status (-1 if it did not exit in 20 s).
  int KillRouter(int signal);
  bool WaitServing(const std::string& target, absl::Duration timeout);

  rein::v1::Router::Stub* router() { return stub_.get(); }
  Process* router_process() { return router_.get(); }
  std::string router_target() const { return "127.0.0.1:" + std::to_string(router_port_); }
  std::string planner_target() const { return "127.0.0.1:" + std::to_string(planner_port_); }
  std::string executor_target() const { return "127.0.0.1:" + std::to_string(executor_port_); }
  // Executor `i` (0 = the first, executor_target()) of Options::executors.
  Process* executor(int i) { return i == 0 ? executor_.get() : extra_executors_[i - 1].get(); }
  std::string executor_target(int i) const {
    return i == 0 ? executor_target() : "127.0.0.1:" + std::to_string(extra_ports_[i - 1]);
  }
  // Starts executor `i` again (after it was killed), on its own port.
  bool RestartExecutor(int i);
  const Options& options() const { return options_; }

  // Starts a run and returns it (or the RPC's error).
  absl::StatusOr<rein::v1::Run> StartRun(const rein::v1::RunSpec& spec,
                                         const std::string& request_id = "");
  // Follows WatchRun from `after_seq` until the stream ends or `timeout`; appends events.
  grpc::Status Watch(const std::string& run_id, int64_t after_seq, absl::Duration timeout,
                     std::vector<rein::v1::RunEvent>* events);
  // Polls GetRun until the run's stage is `stage` or a terminal stage.
  absl::StatusOr<rein::v1::Run> WaitForStage(const std::string& run_id, rein::v1::Stage stage,
                                             absl::Duration timeout);
  absl::StatusOr<rein::v1::Run> GetRun(const std::string& run_id);
  // ResumeRun with `review` against the version `run` was read at (the RPC's error otherwise).
  absl::StatusOr<rein::v1::Run> Resume(const rein::v1::Run& run, const rein::v1::Review& review);
  // Resume with an approval.
  absl::StatusOr<rein::v1::Run> Approve(const rein::v1::Run& run);
  std::string Logs();
  // Adds the token (Options::token) to a call's metadata.
  void Authorize(grpc::ClientContext* context) const;
  // TLS flags (--tls_ca, --tls_cert, --tls_key) for a process presenting `name`'s certificate.
  std::vector<std::string> TlsFlags(const std::string& name) const;

 private:
  Options options_;
  // 0 until the service's first start; then the port it took, kept for restarts.
  int router_port_ = 0, planner_port_ = 0, executor_port_ = 0;
  std::unique_ptr<Process> router_, planner_, executor_;
  std::vector<int> extra_ports_;
  std::vector<std::unique_ptr<Process>> extra_executors_;
  std::unique_ptr<Process> NewExecutor(int i);
  std::unique_ptr<rein::v1::Router::Stub> stub_;
};

}  // namespace rein::testing

#endif  // REIN_TESTS_CLUSTER_H_
