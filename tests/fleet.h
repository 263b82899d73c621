// Test helper: several real rein-router processes on one private PostgreSQL database, with one
// scripted planner and one executor, all on loopback.
#ifndef REIN_TESTS_FLEET_H_
#define REIN_TESTS_FLEET_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "rein/v1/router.grpc.pb.h"
#include "router_service/store/testing/postgres_server.h"
#include "tests/cluster.h"

namespace rein::testing {

// A fleet of routers sharing one database. Router i listens on its own port with
// --router_id=router-<i>; its log is <dir>/router-<i>.log (appended across restarts).
class Fleet {
 public:
  struct Options {
    std::string dir;          // scratch directory
    std::string script_json;  // the scripted planner's script
    int routers = 3;
    std::string lease_ttl = "2s";
    std::vector<std::string> router_flags;  // given to every router, before StartRouter's
  };
  explicit Fleet(Options options);
  ~Fleet();

  // Starts PostgreSQL, the planner, the executor (workspace "repo" with two files) and every
  // router; waits until all serve.
  bool Start();
  // Starts (or restarts) router i; `extra` flags are appended. Waits until it serves unless
  // `wait` is false.
  bool StartRouter(int i, const std::vector<std::string>& extra = {}, bool wait = true);
  Process* router(int i) { return routers_[i].get(); }
  rein::v1::Router::Stub* stub(int i) { return stubs_[i].get(); }
  std::string router_id(int i) const { return "router-" + std::to_string(i); }
  std::string router_target(int i) const;
  const std::string& store_url() const { return url_; }
  PostgresServer* postgres() { return postgres_.get(); }

  absl::StatusOr<rein::v1::Run> StartRun(int router, const rein::v1::RunSpec& spec,
                                         const std::string& request_id = "");
  absl::StatusOr<rein::v1::Run> GetRun(int router, const std::string& run_id);
  // Polls GetRun on `router` until the run is in `stage` or terminal, or `timeout`.
  absl::StatusOr<rein::v1::Run> WaitForStage(int router, const std::string& run_id,
                                             rein::v1::Stage stage, absl::Duration timeout);
  // WatchRun from seq 0 on `router` until the stream ends.
  grpc::Status WatchAll(int router, const std::string& run_id, absl::Duration timeout,
                        std::vector<rein::v1::RunEvent>* events);
  // The tail of every log, for failure messages.
  std::string Logs();

 private:
  Options options_;
  std::unique_ptr<PostgresServer> postgres_;
  std::string url_;
  // 0 until the service's first start; then the port it took itself, kept for restarts.
  int planner_port_ = 0, executor_port_ = 0;
  std::vector<int> router_ports_;
  std::unique_ptr<Process> planner_, executor_;
  std::vector<std::unique_ptr<Process>> routers_;
  std::vector<std::unique_ptr<rein::v1::Router::Stub>> stubs_;
};

// What is wrong with a run's whole log: "" when seq runs 1, 2, 3 ... without a gap and exactly
// one terminal event comes last; else the first problem found.
std::string LogProblem(const std::vector<rein::v1::RunEvent>& events);

}  // namespace rein::testing

#endif  // REIN_TESTS_FLEET_H_
