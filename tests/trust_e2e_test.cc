// Security tests against the real binaries: the executor and the planner serve only the
// router's identity, a plaintext non-loopback port is refused at start, and /metrics stays on
// loopback unless told otherwise (docs/SECURITY.md).
#include <stdlib.h>
#include <sys/stat.h>

#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/testing/http_get.h"
#include "common/tls.h"
#include "gtest/gtest.h"
#include "rein/v1/executor.grpc.pb.h"
#include "rein/v1/planner.grpc.pb.h"
#include "tests/cluster.h"

namespace rein::testing {
namespace {

using rein::v1::RunEvent;

class TrustTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTestDirWithCertificates(
        absl::StrCat("trust-", ::testing::UnitTest::GetInstance()->current_test_info()->name()));
    ASSERT_FALSE(dir_.empty());
    tls_dir_ = dir_ + "/tls";
    mkdir((dir_ + "/workspaces").c_str(), 0755);
    mkdir((dir_ + "/workspaces/repo").c_str(), 0755);
    std::ofstream(dir_ + "/workspaces/repo/README.md") << "# repo\nTODO: nothing\n";
    std::ofstream(dir_ + "/script.json") << ThreeStepScript(/*delay_ms=*/0);
  }

  // A channel to `target` presenting `name`'s certificate from the test CA.
  std::shared_ptr<grpc::Channel> ChannelAs(const std::string& target, const std::string& name) {
    TlsFiles files{absl::StrCat(tls_dir_, "/", name, ".pem"),
                   absl::StrCat(tls_dir_, "/", name, ".key"), tls_dir_ + "/ca.pem"};
    grpc::ChannelArguments args;
    args.SetInt("rein.test.fresh_connection", ++attempt_);
    return grpc::CreateCustomChannel(target, MakeChannelCredentials(files), args);
  }

  grpc::Status ListToolsAs(const std::string& target, const std::string& name) {
    auto stub = rein::v1::Executor::NewStub(ChannelAs(target, name));
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    rein::v1::ListToolsRequest request;
    rein::v1::ListToolsResponse response;
    return stub->ListTools(&context, request, &response);
  }

  grpc::Status ForgetRunAs(const std::string& target, const std::string& name) {
    auto stub = rein::v1::Executor::NewStub(ChannelAs(target, name));
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    rein::v1::ForgetRunRequest request;
    request.set_run_id("0123456789abcdef0123456789abcdef");
    rein::v1::ForgetRunResponse response;
    return stub->ForgetRun(&context, request, &response);
  }

  grpc::Status PlanAs(const std::string& target, const std::string& name) {
    auto stub = rein::v1::Planner::NewStub(ChannelAs(target, name));
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    rein::v1::PlanRequest request;
    request.set_goal("inspect the repo");
    rein::v1::PlanResponse response;
    return stub->Plan(&context, request, &response);
  }

  // Starts a run through the router and follows it to GOAL_ACHIEVED.
  void RunToGoal(Cluster& cluster) {
    rein::v1::RunSpec spec;
    spec.set_goal("inspect the repo");
    spec.set_workspace("repo");
    spec.mutable_limits()->mutable_deadline()->set_seconds(60);
    absl::StatusOr<rein::v1::Run> run = cluster.StartRun(spec);
    ASSERT_TRUE(run.ok()) << run.status() << cluster.Logs();
    std::vector<RunEvent> events;
    ASSERT_TRUE(cluster.Watch(run->run_id(), 0, absl::Seconds(60), &events).ok());
    ASSERT_FALSE(events.empty());
    EXPECT_EQ(events.back().finished().outcome().reason(), rein::v1::GOAL_ACHIEVED)
        << cluster.Logs();
  }

  // Runs `argv` to its exit (at most 20 s) with its output in dir_/NAME.log; the exit status.
  int RunToExit(const std::string& name, const std::vector<std::string>& argv) {
    Process p(name, argv, absl::StrCat(dir_, "/", name, ".log"));
    if (!p.Start()) return -1;
    const int status = p.Wait(absl::Seconds(20));
    if (status == -1) p.Kill(SIGKILL);
    return status;
  }

  std::string dir_, tls_dir_;
  int attempt_ = 0;
};

TEST_F(TrustTest, ExecutorAndPlannerServeOnlyTheRoutersIdentity) {
  Cluster::Options options;
  options.dir = dir_;
  options.script_json = ThreeStepScript(/*delay_ms=*/0);
  options.tls_dir = tls_dir_;
  Cluster cluster(options);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  // The router's own certificate: a whole run goes through both.
  ASSERT_NO_FATAL_FAILURE(RunToGoal(cluster));
  // And directly: the router's certificate gets through to the methods.
  EXPECT_TRUE(ListToolsAs(cluster.executor_target(), "router").ok());
  EXPECT_NE(PlanAs(cluster.planner_target(), "router").error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  // Certificates signed by the same CA with other identities: a public client's, another
  // service's, one naming elsewhere. Each is refused on every method, naming why.
  for (const std::string name : {"client", "planner", "executor", "wrongname"}) {
    SCOPED_TRACE(name);
    grpc::Status tools = ListToolsAs(cluster.executor_target(), name);
    EXPECT_EQ(tools.error_code(), grpc::StatusCode::PERMISSION_DENIED) << tools.error_message();
    EXPECT_NE(tools.error_message().find("is not allowed: this service accepts only rein-router"),
              std::string::npos)
        << tools.error_message();
    EXPECT_EQ(ForgetRunAs(cluster.executor_target(), name).error_code(),
              grpc::StatusCode::PERMISSION_DENIED);
    grpc::Status plan = PlanAs(cluster.planner_target(), name);
    EXPECT_EQ(plan.error_code(), grpc::StatusCode::PERMISSION_DENIED) << plan.error_message();
    EXPECT_NE(plan.error_message().find("(--allowed_clients)"), std::string::npos)
        << plan.error_message();
  }
  // The probe of the Kubernetes manifests: rein-health with the executor's own certificate,
  // checking the name its certificate carries, on 127.0.0.1.
  EXPECT_EQ(
      RunToExit("probe", {RunfilePath("common/rein-health"), "--tls_ca=" + tls_dir_ + "/ca.pem",
                          "--tls_cert=" + tls_dir_ + "/executor.pem",
                          "--tls_key=" + tls_dir_ + "/executor.key", "--tls_name=rein-executor",
                          cluster.executor_target(), "rein.v1.Executor"}),
      0)
      << ReadFile(dir_ + "/probe.log");
  EXPECT_NE(RunToExit("probe-wrong-name",
                      {RunfilePath("common/rein-health"), "--tls_ca=" + tls_dir_ + "/ca.pem",
                       "--tls_cert=" + tls_dir_ + "/executor.pem",
                       "--tls_key=" + tls_dir_ + "/executor.key", "--tls_name=rein-planner",
                       cluster.executor_target()}),
            0);
  // A certificate from another CA does not even complete the handshake.
  EXPECT_EQ(ListToolsAs(cluster.executor_target(), "stranger").error_code(),
            grpc::StatusCode::UNAVAILABLE);
}

TEST_F(TrustTest, PublicClientsHaveATrustRootOfTheirOwn) {
  Cluster::Options options;
  options.dir = dir_;
  options.script_json = ThreeStepScript(/*delay_ms=*/0);
  options.tls_dir = tls_dir_;
  options.router_flags = {"--require_client_cert", "--client_ca=" + tls_dir_ + "/clients-ca.pem"};
  options.router_client_cert = "public-client";
  Cluster cluster(options);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  // A run started by a public client goes through.
  ASSERT_NO_FATAL_FAILURE(RunToGoal(cluster));
  auto health = [&](const std::string& target, const std::string& name) {
    return RunToExit("health",
                     {RunfilePath("common/rein-health"), "--tls_ca=" + tls_dir_ + "/ca.pem",
                      absl::StrCat("--tls_cert=", tls_dir_, "/", name, ".pem"),
                      absl::StrCat("--tls_key=", tls_dir_, "/", name, ".key"), target});
  };
  // The router takes public clients from the clients CA, and no longer the services CA's.
  EXPECT_EQ(health(cluster.router_target(), "public-client"), 0) << cluster.Logs();
  EXPECT_NE(health(cluster.router_target(), "client"), 0);
  // A public client's certificate gets nowhere near an executor or a planner.
  EXPECT_NE(health(cluster.executor_target(), "public-client"), 0);
  EXPECT_NE(health(cluster.planner_target(), "public-client"), 0);
  EXPECT_EQ(ListToolsAs(cluster.executor_target(), "public-client").error_code(),
            grpc::StatusCode::UNAVAILABLE);
  // --client_ca without --require_client_cert is refused.
  EXPECT_EQ(
      RunToExit(
          "client-ca-alone",
          {RunfilePath("router_service/rein-router"), "--store=sqlite:" + dir_ + "/x.db",
           "--tls_ca=" + tls_dir_ + "/ca.pem", "--tls_cert=" + tls_dir_ + "/router.pem",
           "--tls_key=" + tls_dir_ + "/router.key", "--client_ca=" + tls_dir_ + "/clients-ca.pem"}),
      2);
  EXPECT_NE(
      ReadFile(dir_ + "/client-ca-alone.log").find("--client_ca: only with --require_client_cert"),
      std::string::npos);
}

TEST_F(TrustTest, AllowedClientsNamesWhoMayCall) {
  // An executor that accepts rein-client instead: the router's certificate is now refused.
  const int port = FreePort();
  const std::string target = absl::StrCat("127.0.0.1:", port);
  Process executor(
      "executor",
      {RunfilePath("executor_service/rein-executor"), absl::StrCat("--listen=", target),
       "--workspace_root=" + dir_ + "/workspaces", "--sandbox=none", "--allow_unsandboxed",
       "--tls_ca=" + tls_dir_ + "/ca.pem", "--tls_cert=" + tls_dir_ + "/executor.pem",
       "--tls_key=" + tls_dir_ + "/executor.key", "--allowed_clients=rein-client"},
      dir_ + "/executor.log");
  ASSERT_TRUE(executor.Start());
  std::vector<std::string> probe = {"--tls_ca=" + tls_dir_ + "/ca.pem",
                                    "--tls_cert=" + tls_dir_ + "/client.pem",
                                    "--tls_key=" + tls_dir_ + "/client.key"};
  ASSERT_TRUE(WaitServing(target, absl::Seconds(20), dir_ + "/probe.log", probe))
      << ReadFile(dir_ + "/executor.log");
  EXPECT_TRUE(ListToolsAs(target, "client").ok());
  EXPECT_EQ(ListToolsAs(target, "router").error_code(), grpc::StatusCode::PERMISSION_DENIED);
  executor.Kill(SIGTERM);
  executor.Wait(absl::Seconds(10));
  // A malformed list refuses start.
  EXPECT_EQ(RunToExit("bad-list", {RunfilePath("executor_service/rein-executor"),
                                   "--workspace_root=" + dir_ + "/workspaces", "--sandbox=none",
                                   "--allow_unsandboxed", "--allowed_clients=rein-router,,x"}),
            2);
  EXPECT_NE(ReadFile(dir_ + "/bad-list.log").find("--allowed_clients: an empty name"),
            std::string::npos);
}

TEST_F(TrustTest, NonLoopbackPlaintextIsRefusedAtStart) {
  const std::string listen = absl::StrCat("--listen=0.0.0.0:", FreePort());
  const std::vector<std::string> executor = {RunfilePath("executor_service/rein-executor"), listen,
                                             "--workspace_root=" + dir_ + "/workspaces",
                                             "--sandbox=none", "--allow_unsandboxed"};
  EXPECT_EQ(RunToExit("executor", executor), 2);
  const std::string executor_log = ReadFile(dir_ + "/executor.log");
  EXPECT_NE(executor_log.find(" is not loopback and callers are not authenticated: give "
                              "--tls_cert, --tls_key and --tls_ca (mutual TLS), or "
                              "--allow_unauthenticated to let anyone who reaches the port run "
                              "tools in any workspace"),
            std::string::npos)
      << executor_log;
  const std::vector<std::string> planner = {RunfilePath("planner_service/rein-planner"), listen,
                                            "--backend=scripted",
                                            "--script=" + dir_ + "/script.json"};
  EXPECT_EQ(RunToExit("planner", planner), 2);
  const std::string planner_log = ReadFile(dir_ + "/planner.log");
  EXPECT_NE(planner_log.find("--allow_unauthenticated to let anyone who reaches the port spend "
                             "the model budget"),
            std::string::npos)
      << planner_log;
  // Bearer tokens without TLS on a non-loopback address.
  std::ofstream(dir_ + "/tokens") << "sha256:" << std::string(64, 'a') << " alice operator\n";
  const std::vector<std::string> router = {RunfilePath("router_service/rein-router"), listen,
                                           "--store=sqlite:" + dir_ + "/router.db",
                                           "--auth_tokens_file=" + dir_ + "/tokens"};
  EXPECT_EQ(RunToExit("router", router), 2);
  const std::string router_log = ReadFile(dir_ + "/router.log");
  EXPECT_NE(router_log.find("serves bearer tokens without TLS"), std::string::npos) << router_log;
  EXPECT_NE(router_log.find("--allow_plaintext_tokens"), std::string::npos) << router_log;
  // Said explicitly, the executor starts.
  std::vector<std::string> allowed = executor;
  allowed[1] = "--listen=0.0.0.0:0";
  allowed.push_back("--allow_unauthenticated");
  Process started("executor-allowed", allowed, dir_ + "/executor-allowed.log");
  int port = 0;
  ASSERT_TRUE(StartListening(started, &port)) << ReadFile(dir_ + "/executor-allowed.log");
  EXPECT_TRUE(
      WaitServing(absl::StrCat("127.0.0.1:", port), absl::Seconds(20), dir_ + "/probe.log"));
  EXPECT_NE(ReadFile(dir_ + "/executor-allowed.log").find("SERVING WITHOUT AUTHENTICATION"),
            std::string::npos);
  started.Kill(SIGTERM);
  started.Wait(absl::Seconds(10));
}

TEST_F(TrustTest, MetricsStayOnLoopbackUnlessToldOtherwise) {
  const int metrics_port = FreePort();
  Process router(
      "router",
      {RunfilePath("router_service/rein-router"), absl::StrCat("--listen=127.0.0.1:", FreePort()),
       "--store=sqlite:" + dir_ + "/metrics.db", absl::StrCat("--metrics_port=", metrics_port)},
      dir_ + "/router.log");
  ASSERT_TRUE(router.Start());
  absl::StatusOr<HttpReply> reply;
  for (int i = 0; i < 100; ++i) {
    reply = HttpGet("127.0.0.1", metrics_port, "/metrics");
    if (reply.ok()) break;
    absl::SleepFor(absl::Milliseconds(100));
  }
  ASSERT_TRUE(reply.ok()) << reply.status() << ReadFile(dir_ + "/router.log");
  EXPECT_EQ(reply->status, 200);
  // Another address of this machine: a port bound on 0.0.0.0 would answer there.
  EXPECT_FALSE(HttpGet("127.0.0.2", metrics_port, "/metrics").ok());
  router.Kill(SIGTERM);
  router.Wait(absl::Seconds(20));
}

}  // namespace
}  // namespace rein::testing
