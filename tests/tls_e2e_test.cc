// End-to-end security tests: the three real binaries over mTLS, with bearer tokens on the
// router (README "Security").
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/cluster.h"

namespace rein::testing {
namespace {

using rein::v1::RunEvent;
using rein::v1::RunSpec;

// Lists, then reads; each decision takes `DELAY` ms, so a run lasts a few seconds.
constexpr char kScript[] = R"({
  "plan": [
    {"when": {"completed_contains": "read"}, "reply": {"goalAchieved": true, "reasoning": "done"}},
    {"reply": {"subtasks": [
      {"id": "list", "description": "list files", "allowedTools": ["list_files"]},
      {"id": "read", "description": "read the readme", "allowedTools": ["read_file"]}]}}
  ],
  "decide": [
    {"when": {"subtask": "list"}, "delay_ms": DELAY,
     "reply": {"toolCall": {"tool": "list_files", "args": {"path": "."}}}},
    {"when": {"subtask": "read"}, "delay_ms": DELAY,
     "reply": {"toolCall": {"tool": "read_file", "args": {"path": "README.md"}}}}
  ],
  "evaluate": [
    {"when": {"action_ok": true}, "reply": {"status": "COMPLETED", "summary": "${subtask} ok"}},
    {"reply": {"status": "NEEDS_MORE_WORK", "summary": "failed"}}
  ]
})";

// The token "alice-secret" of principal alice (operator, reviewer); "victor-secret" of victor
// (viewer only).
std::string Replace(std::string text, const std::string& from, const std::string& to) {
  for (size_t at; (at = text.find(from)) != std::string::npos;) text.replace(at, from.size(), to);
  return text;
}

class TlsEndToEndTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTestDirWithCertificates(
        absl::StrCat("tls-", ::testing::UnitTest::GetInstance()->current_test_info()->name()));
    ASSERT_FALSE(dir_.empty());
    tls_dir_ = dir_ + "/tls";
    tokens_file_ = dir_ + "/tokens";
    WriteTokens(true);
  }

  void WriteTokens(bool with_victor) {
    std::vector<std::pair<std::string, std::string>> tokens = {
        {"alice-secret", "alice operator,reviewer"}};
    if (with_victor) tokens.push_back({"victor-secret", "victor viewer"});
    ASSERT_TRUE(WriteTokensFile(tokens_file_, tokens));
  }

  Cluster::Options BaseOptions(int delay_ms) {
    Cluster::Options options;
    options.dir = dir_;
    options.script_json = Replace(kScript, "DELAY", std::to_string(delay_ms));
    options.tls_dir = tls_dir_;
    options.router_flags = {"--auth_tokens_file=" + tokens_file_};
    options.token = "alice-secret";
    std::string ws = dir_ + "/workspaces/repo";
    mkdir((dir_ + "/workspaces").c_str(), 0755);
    mkdir(ws.c_str(), 0755);
    std::ofstream(ws + "/README.md") << "# repo\n";
    return options;
  }

  RunSpec Spec() {
    RunSpec spec;
    spec.set_goal("inspect the repo");
    spec.set_workspace("repo");
    spec.mutable_limits()->mutable_deadline()->set_seconds(60);
    return spec;
  }

  // rein-health against `target` presenting `name`'s certificate ("" = none) and trusting
  // `ca`; returns its exit status.
  int Probe(const std::string& target, const std::string& name, const std::string& ca = "ca") {
    std::vector<std::string> argv = {RunfilePath("common/rein-health"),
                                     absl::StrCat("--tls_ca=", tls_dir_, "/", ca, ".pem")};
    if (!name.empty()) {
      argv.push_back(absl::StrCat("--tls_cert=", tls_dir_, "/", name, ".pem"));
      argv.push_back(absl::StrCat("--tls_key=", tls_dir_, "/", name, ".key"));
    }
    argv.push_back(target);
    Process probe("probe", argv, dir_ + "/probe.log");
    if (!probe.Start()) return -1;
    return probe.Wait(absl::Seconds(10));
  }

  grpc::Status GetRunWithToken(Cluster& cluster, const std::string& token,
                               const std::string& run_id) {
    rein::v1::GetRunRequest request;
    request.set_run_id(run_id);
    rein::v1::Run run;
    grpc::ClientContext context;
    if (!token.empty()) context.AddMetadata("authorization", "Bearer " + token);
    return cluster.router()->GetRun(&context, request, &run);
  }

  void Rotate(const std::string& from, const std::string& to) {
    // The key first, then the certificate, each by rename (as a secret volume swaps files).
    for (const char* ext : {".key", ".pem"}) {
      std::string tmp = absl::StrCat(tls_dir_, "/", to, ext, ".new");
      std::ifstream in(absl::StrCat(tls_dir_, "/", from, ext), std::ios::binary);
      std::ofstream(tmp, std::ios::binary) << in.rdbuf();
      ASSERT_EQ(rename(tmp.c_str(), absl::StrCat(tls_dir_, "/", to, ext).c_str()), 0);
    }
  }

  std::string dir_, tls_dir_, tokens_file_;
};

TEST_F(TlsEndToEndTest, RunOverMutualTlsSurvivesRotationAndRecordsThePrincipal) {
  Cluster::Options options = BaseOptions(/*delay_ms=*/1500);
  options.router_flags.push_back("--executor_tls_name=rein-executor");  // a SAN it carries
  Cluster cluster(options);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  absl::StatusOr<rein::v1::Run> run = cluster.StartRun(Spec());
  ASSERT_TRUE(run.ok()) << run.status() << cluster.Logs();
  const std::string planner_serial_before = ReadFile(tls_dir_ + "/planner.pem");
  // Mid-run, the planner and the executor get renewed certificates.
  absl::SleepFor(absl::Seconds(1));
  Rotate("planner-next", "planner");
  Rotate("executor-next", "executor");
  ASSERT_NE(ReadFile(tls_dir_ + "/planner.pem"), planner_serial_before);
  std::vector<RunEvent> events;
  grpc::Status watched = cluster.Watch(run->run_id(), 0, absl::Seconds(60), &events);
  ASSERT_TRUE(watched.ok()) << watched.error_message();
  ASSERT_FALSE(events.empty());
  ASSERT_TRUE(events.back().has_finished()) << cluster.Logs();
  EXPECT_EQ(events.back().finished().outcome().reason(), rein::v1::GOAL_ACHIEVED) << cluster.Logs();
  // The start is alice's; the router's own steps carry no principal.
  EXPECT_EQ(events.front().principal(), "alice");
  EXPECT_EQ(events.back().principal(), "");
  // After the reload interval, new handshakes use the new certificates: a fresh client that
  // connects now still gets through to both, and a second run finishes.
  absl::SleepFor(absl::Seconds(6));
  EXPECT_EQ(Probe(cluster.planner_target(), "client"), 0);
  EXPECT_EQ(Probe(cluster.executor_target(), "client"), 0);
  absl::StatusOr<rein::v1::Run> second = cluster.StartRun(Spec());
  ASSERT_TRUE(second.ok()) << second.status();
  std::vector<RunEvent> second_events;
  ASSERT_TRUE(cluster.Watch(second->run_id(), 0, absl::Seconds(60), &second_events).ok());
  ASSERT_FALSE(second_events.empty());
  EXPECT_EQ(second_events.back().finished().outcome().reason(), rein::v1::GOAL_ACHIEVED)
      << cluster.Logs();
}

TEST_F(TlsEndToEndTest, PlannerAndExecutorRefuseClientsWithoutAGoodCertificate) {
  Cluster cluster(BaseOptions(/*delay_ms=*/0));
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  for (const std::string& target : {cluster.planner_target(), cluster.executor_target()}) {
    SCOPED_TRACE(target);
    EXPECT_EQ(Probe(target, "client"), 0) << ReadFile(dir_ + "/probe.log");
    EXPECT_NE(Probe(target, ""), 0);          // no client certificate
    EXPECT_NE(Probe(target, "stranger"), 0);  // signed by another CA
    EXPECT_NE(Probe(target, "expired"), 0);   // signed by the CA, expired
    // A plaintext client gets nowhere either.
    Process plain("plain", {RunfilePath("common/rein-health"), target}, dir_ + "/plain.log");
    ASSERT_TRUE(plain.Start());
    EXPECT_NE(plain.Wait(absl::Seconds(10)), 0);
  }
  // The router's public port serves TLS to clients without a certificate (no
  // --require_client_cert), and health needs no token.
  EXPECT_EQ(Probe(cluster.router_target(), ""), 0);
}

TEST_F(TlsEndToEndTest, TokensAreCheckedAndRevokedOnReload) {
  Cluster::Options options = BaseOptions(/*delay_ms=*/0);
  options.router_flags.push_back("--require_client_cert");
  Cluster cluster(options);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  // With --require_client_cert the public port wants a client certificate too (health included:
  // it asks of everyone what the port asks), but never a token.
  EXPECT_NE(Probe(cluster.router_target(), ""), 0);
  EXPECT_EQ(Probe(cluster.router_target(), "client"), 0);
  const std::string unknown_run = "0123456789abcdef0123456789abcdef";
  EXPECT_EQ(GetRunWithToken(cluster, "", unknown_run).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  grpc::Status wrong = GetRunWithToken(cluster, "alice-secreT", unknown_run);
  EXPECT_EQ(wrong.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(wrong.error_message().find("alice"), std::string::npos);
  // victor may view (the run is unknown: NOT_FOUND, past auth) but not start.
  grpc::Status viewed = GetRunWithToken(cluster, "victor-secret", unknown_run);
  EXPECT_NE(viewed.error_code(), grpc::StatusCode::UNAUTHENTICATED) << viewed.error_message();
  EXPECT_NE(viewed.error_code(), grpc::StatusCode::PERMISSION_DENIED) << viewed.error_message();
  rein::v1::StartRunRequest start;
  *start.mutable_spec() = Spec();
  rein::v1::Run out;
  grpc::ClientContext context;
  context.AddMetadata("authorization", "Bearer victor-secret");
  EXPECT_EQ(cluster.router()->StartRun(&context, start, &out).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  // Removing victor's line revokes the token within 10 s.
  WriteTokens(/*with_victor=*/false);
  absl::Time until = absl::Now() + absl::Seconds(10);
  grpc::StatusCode code = grpc::StatusCode::OK;
  while (absl::Now() < until) {
    code = GetRunWithToken(cluster, "victor-secret", unknown_run).error_code();
    if (code == grpc::StatusCode::UNAUTHENTICATED) break;
    absl::SleepFor(absl::Milliseconds(250));
  }
  EXPECT_EQ(code, grpc::StatusCode::UNAUTHENTICATED);
  // reinctl over TLS with a token file; without a token it is refused.
  std::ofstream(dir_ + "/alice.token") << "alice-secret\n";
  auto reinctl = [&](const std::vector<std::string>& extra) {
    std::vector<std::string> argv = {RunfilePath("cli/reinctl"),
                                     "--router=" + cluster.router_target(),
                                     "list",
                                     "--tls_ca=" + tls_dir_ + "/ca.pem",
                                     "--tls_cert=" + tls_dir_ + "/client.pem",
                                     "--tls_key=" + tls_dir_ + "/client.key"};
    for (const auto& flag : extra) argv.push_back(flag);
    Process p("reinctl", argv, dir_ + "/reinctl.log");
    if (!p.Start()) return -1;
    return p.Wait(absl::Seconds(20));
  };
  EXPECT_EQ(reinctl({"--token_file=" + dir_ + "/alice.token"}), 0)
      << ReadFile(dir_ + "/reinctl.log");
  EXPECT_EQ(reinctl({}), 4) << ReadFile(dir_ + "/reinctl.log");
  // alice is unaffected.
  grpc::Status alice = GetRunWithToken(cluster, "alice-secret", unknown_run);
  EXPECT_NE(alice.error_code(), grpc::StatusCode::UNAUTHENTICATED) << alice.error_message();
  EXPECT_NE(alice.error_code(), grpc::StatusCode::PERMISSION_DENIED) << alice.error_message();
}

TEST_F(TlsEndToEndTest, RouterRefusesAPlannerWithoutTheExpectedName) {
  Cluster::Options options = BaseOptions(/*delay_ms=*/0);
  // The planner's certificate is good but names rein-planner, not rein-executor.
  options.router_flags.push_back("--planner_tls_name=rein-executor");
  Cluster cluster(options);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  absl::StatusOr<rein::v1::Run> run = cluster.StartRun(Spec());
  ASSERT_TRUE(run.ok()) << run.status();
  std::vector<RunEvent> events;
  (void)cluster.Watch(run->run_id(), 0, absl::Seconds(5), &events);
  const RunEvent* error = nullptr;
  for (const RunEvent& e : events) {
    if (e.has_error()) error = &e;
  }
  ASSERT_NE(error, nullptr) << cluster.Logs();
  EXPECT_EQ(error->error().stage(), rein::v1::PLANNING);
  EXPECT_EQ(error->error().code(), "UNAVAILABLE");
  EXPECT_NE(error->error().message().find("Hostname Verification"), std::string::npos);
  std::cout << "recorded error: " << error->error().message() << "\n";
  for (const RunEvent& e : events) EXPECT_FALSE(e.has_plan()) << "a plan came through";
}

TEST_F(TlsEndToEndTest, RouterRefusesToStartUnsafely) {
  auto router = [&](const std::vector<std::string>& flags) {
    std::vector<std::string> argv = {RunfilePath("router_service/rein-router"),
                                     "--store=sqlite:" + dir_ + "/refused.db"};
    for (const auto& flag : flags) argv.push_back(flag);
    Process p("router", argv, dir_ + "/refused.log");
    if (!p.Start()) return -1;
    return p.Wait(absl::Seconds(20));
  };
  const std::string listen = absl::StrCat("--listen=0.0.0.0:", FreePort());
  EXPECT_EQ(router({listen}), 2);
  EXPECT_NE(ReadFile(dir_ + "/refused.log").find("--allow_unauthenticated"), std::string::npos);
  std::ofstream(dir_ + "/bad-tokens") << "# ok\nsha256:1234 bob viewer\n";
  EXPECT_EQ(router({listen, "--auth_tokens_file=" + dir_ + "/bad-tokens"}), 2);
  std::string log = ReadFile(dir_ + "/refused.log");
  EXPECT_NE(log.find("--auth_tokens_file: " + dir_ + "/bad-tokens: line 2: "), std::string::npos)
      << log;
  EXPECT_EQ(router({listen, "--tls_cert=" + tls_dir_ + "/router.pem",
                    "--tls_key=" + tls_dir_ + "/planner.key", "--tls_ca=" + tls_dir_ + "/ca.pem",
                    "--auth_tokens_file=" + tokens_file_}),
            2);
  EXPECT_NE(ReadFile(dir_ + "/refused.log").find("--tls_key: "), std::string::npos);
}

}  // namespace
}  // namespace rein::testing
