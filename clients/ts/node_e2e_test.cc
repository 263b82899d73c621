// Runs a Node script (the argument, relative to the workspace) against the three real
// services with the router's HTTP port on, and passes when the script exits 0. The script gets
// REIN_HTTP_URL, REIN_WORKSPACE_ROOT, REIN_OUTPUT_DIR (where to keep files) and the tokens below:
// t-viewer (viewer), t-both (operator and reviewer), t-reviewer (reviewer), t-operator (operator).
// With a second argument --tls the services serve mutual TLS, the router's ports (gRPC and
// HTTP) require client certificates of the clients' CA, and the script gets REIN_TLS_DIR
// (common/testing/make_certs.sh's files: ca.pem, public-client.pem and .key, stranger.*, ...).
// REIN_ROUTER_TARGET is the router's gRPC port, REIN_CONTROL_DIR a folder where the script asks
// for a router restart: it creates `restart-router`; the router is killed (SIGKILL) and started
// again on the same ports and SQLite store, and `router-restarted` appears.
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "router_service/auth.h"
#include "tests/cluster.h"

namespace rein::testing {
namespace {

// One subtask that writes a.txt, then the goal is achieved. A subtask "ask" (added by a
// plan edit) asks a person, and writes b.txt once answered; a rejection whose feedback says
// "write c.txt" is planned again as a subtask "c" that writes c.txt.
// A goal with "long run" loops: one subtask writing loop.txt again and again (the content
// changes each iteration, so it never stagnates) until max_iterations ends the run.
constexpr char kScript[] = R"({
  "plan": [
    {"when": {"goal_contains": "long run"}, "reply": {"subtasks": [
      {"id": "loop", "description": "write loop.txt again", "allowedTools": ["write_file"]}]}},
    {"when": {"replan_reason_contains": "write c.txt"}, "reply": {"subtasks": [
      {"id": "c", "description": "write c.txt", "allowedTools": ["write_file"]}]}},
    {"when": {"completed_contains": "write"}, "reply": {"goalAchieved": true, "reasoning": "done"}},
    {"reply": {"subtasks": [
      {"id": "write", "description": "write a.txt", "allowedTools": ["write_file"]}]}}
  ],
  "decide": [
    {"when": {"subtask": "loop"},
     "reply": {"toolCall": {"tool": "write_file", "args": {"path": "loop.txt", "content": "${iteration}"}}}},
    {"when": {"subtask": "ask", "has_human_input": false},
     "reply": {"humanQuery": "Which file should I write?"}},
    {"when": {"subtask": "ask", "human_input_contains": "b.txt"},
     "reply": {"toolCall": {"tool": "write_file", "args": {"path": "b.txt", "content": "after the answer"}}}},
    {"when": {"subtask": "c"},
     "reply": {"toolCall": {"tool": "write_file", "args": {"path": "c.txt", "content": "after the rejection"}}}},
    {"reply": {"toolCall": {"tool": "write_file", "args": {"path": "a.txt", "content": "v1"}}}}
  ],
  "evaluate": [
    {"when": {"subtask": "loop"}, "reply": {"status": "NEEDS_MORE_WORK", "summary": "again after ${iteration}"}},
    {"reply": {"status": "COMPLETED", "summary": "${subtask} written"}}
  ]
})";

std::string RealDir(const std::string& file) {
  char buffer[PATH_MAX];
  if (realpath(file.c_str(), buffer) == nullptr) return "";
  std::string path(buffer);
  return path.substr(0, path.rfind('/'));
}

std::string g_script;  // argv[1]
bool g_tls = false;    // argv[2] == "--tls"

TEST(NodeEndToEndTest, ScriptPassesAgainstTheRealServices) {
  ASSERT_FALSE(g_script.empty()) << "usage: node_e2e_test SCRIPT";
  // Under `bazel run` (a benchmark) there is no TEST_TMPDIR: a fresh folder of its own.
  char scratch[] = "/tmp/rein-node-XXXXXX";
  const std::string base = getenv("TEST_TMPDIR") ? getenv("TEST_TMPDIR") : mkdtemp(scratch);
  Cluster::Options options;
  options.dir = base + "/node-e2e";
  mkdir(options.dir.c_str(), 0755);
  if (g_tls) {
    options.dir = MakeTestDirWithCertificates("node-e2e-tls");
    ASSERT_FALSE(options.dir.empty()) << "common/testing/make_certs.sh failed";
    options.tls_dir = options.dir + "/tls";
    options.router_client_cert = "public-client";
  }
  options.script_json = kScript;
  const std::string root = options.dir + "/workspaces";
  mkdir(root.c_str(), 0755);
  for (const char* ws : {"repo", "repo-json", "repo-binary", "repo-plan", "repo-reject",
                         "repo-long", "repo-restart"}) {
    mkdir((root + "/" + ws).c_str(), 0755);
  }
  const std::string tokens = options.dir + "/tokens";
  std::ofstream(tokens) << "sha256:" << Sha256Hex("t-viewer") << " vera viewer\n"
                        << "sha256:" << Sha256Hex("t-operator") << " otto operator\n"
                        << "sha256:" << Sha256Hex("t-reviewer") << " rita reviewer\n"
                        << "sha256:" << Sha256Hex("t-both") << " bo operator,reviewer\n";
  // A fixed HTTP port, so that a page open across a router restart reaches the new process.
  const int http_port = FreePort();
  options.router_flags = {absl::StrCat("--http_listen=127.0.0.1:", http_port),
                          "--auth_tokens_file=" + tokens};
  if (g_tls) {
    options.router_flags.push_back("--require_client_cert");
    options.router_flags.push_back("--client_ca=" + options.tls_dir + "/clients-ca.pem");
  }
  options.token = "t-both";
  Cluster cluster(options);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  const std::string control = options.dir + "/control";
  mkdir(control.c_str(), 0755);

  const std::string script = RealDir(RunfilePath(g_script)) + g_script.substr(g_script.rfind('/'));
  const std::string command = absl::StrCat(
      "REIN_HTTP_URL=", g_tls ? "https" : "http", "://127.0.0.1:", http_port,
      g_tls ? " REIN_TLS_DIR=" + options.tls_dir : "", " REIN_WORKSPACE_ROOT=", root,
      " REIN_OUTPUT_DIR=",
      getenv("TEST_UNDECLARED_OUTPUTS_DIR") ? getenv("TEST_UNDECLARED_OUTPUTS_DIR") : options.dir,
      " REIN_ROUTER_TARGET=", cluster.router_target(), " REIN_CONTROL_DIR=", control, " node ",
      script, " 2>&1");
  std::atomic<bool> done{false};
  int status = -1;
  std::thread node([&] {
    status = system(command.c_str());
    done = true;
  });
  const std::string request = control + "/restart-router";
  while (!done) {
    if (access(request.c_str(), F_OK) == 0) {
      unlink(request.c_str());
      EXPECT_NE(cluster.KillRouter(SIGKILL), -1);
      EXPECT_TRUE(cluster.StartRouter()) << cluster.Logs();
      std::ofstream(control + "/router-restarted") << "1\n";
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
  node.join();
  EXPECT_EQ(status, 0) << command << "\n" << cluster.Logs();
}

}  // namespace
}  // namespace rein::testing

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (argc > 1) rein::testing::g_script = argv[1];
  if (argc > 2) rein::testing::g_tls = std::string(argv[2]) == "--tls";
  return RUN_ALL_TESTS();
}
