// Test helper: rein spread over several test hosts (network namespaces on one bridge, see
// netns_hosts.h): PostgreSQL on one, routers on their own, one scripted planner, executors
// sharing one workspace root. Needs root.
#ifndef REIN_TESTS_HOST_FLEET_H_
#define REIN_TESTS_HOST_FLEET_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "rein/v1/router.grpc.pb.h"
#include "tests/cluster.h"
#include "tests/netns_hosts.h"

namespace rein::testing {

class HostFleet {
 public:
  struct Options {
    int routers = 3;
    int executors = 3;
    std::string lease_ttl = "2s";
    // The hosts' /24 is <subnet_prefix>.<pid % 250>; tests that may run at once use different
    // prefixes.
    std::string subnet_prefix = "10.231";
  };
  // Hosts: "db" .10, "router<i>" .11+i, "planner" .20, "exec<i>" .31+i.
  HostFleet();  // the default Options
  explicit HostFleet(Options options);
  ~HostFleet();

  // StartNetwork, then StartServices.
  void Start(const std::string& script);
  // The network and every host; nothing runs yet (a test may add hosts and start its own).
  void StartNetwork();
  // PostgreSQL, the planner (with `script`), the executors and the routers; waits until all serve.
  void StartServices(const std::string& script);

  void StartRouter(int i);
  void StartExecutor(int i);
  void StartPostgres();
  void KillRouter(int i);
  void KillExecutor(int i);
  void KillPostgres();
  absl::Status SetLinkUp(const std::string& host, bool up) { return network_->SetLinkUp(host, up); }

  // Adds host `name` at <subnet>.<octet>; returns its address ("" and a test failure if not).
  std::string AddHost(const std::string& name, int octet);
  // Starts `argv` in host `host`; its output goes to <dir>/<name>.log.
  std::unique_ptr<Process> Spawn(const std::string& name, const std::string& host,
                                 const std::vector<std::string>& argv);
  static void StopProcess(std::unique_ptr<Process>& process);

  rein::v1::Router::Stub* router(int i) { return stubs_[i].get(); }
  std::string RouterTarget(int i) const { return router_addresses_[i] + ":50051"; }
  const std::string& workspace_root() const { return workspace_root_; }
  const std::string& dir() const { return dir_; }
  int routers() const { return options_.routers; }

  // Makes workspace `name` with an input.txt, as the shared volume would have it.
  std::string MakeWorkspace(const std::string& name);

  absl::StatusOr<rein::v1::Run> StartRun(int router, const rein::v1::RunSpec& spec,
                                         const std::string& request_id);
  absl::StatusOr<rein::v1::Run> GetRun(int router, const std::string& run_id);
  // Polls GetRun on `router` until every run is terminal or paused, or `timeout`.
  std::map<std::string, rein::v1::Run> WaitSettled(int router,
                                                   const std::vector<std::string>& run_ids,
                                                   absl::Duration timeout);
  // The whole log of a run, read with WatchRun from `router` (the stream ends after the
  // terminal event; for a paused run it is cut by the deadline).
  std::vector<rein::v1::RunEvent> Events(int router, const std::string& run_id,
                                         absl::Duration timeout);
  // The tail of every log, for failure messages.
  std::string Logs() const;

 private:
  static std::string RouterHost(int i) { return absl::StrCat("router", i); }
  static std::string ExecutorHost(int i) { return absl::StrCat("exec", i); }
  std::string StoreUrl() const;
  static std::string PostgresBin();
  void InitPostgres();
  bool WaitPostgres(absl::Duration timeout);
  bool WaitServing(const std::string& target);

  Options options_;
  std::string tag_, subnet_, dir_, workspace_root_;
  std::unique_ptr<HostNetwork> network_;
  std::string db_address_, planner_address_;
  std::vector<std::string> router_addresses_, executor_addresses_;
  std::unique_ptr<Process> postgres_, planner_;
  std::vector<std::unique_ptr<Process>> routers_, executors_;
  std::vector<std::unique_ptr<rein::v1::Router::Stub>> stubs_;
};

}  // namespace rein::testing

#endif  // REIN_TESTS_HOST_FLEET_H_
