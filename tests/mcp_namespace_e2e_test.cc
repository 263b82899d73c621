// MCP credentials per namespace end to end: the three real services, the executor under
// bubblewrap with an MCP config giving team-a and team-b each their own env secret (a stdio
// server) and bearer token (a streamable HTTP server), and team-c none. The fake server's
// `whoami` answers a hash of the credential it got, never the credential.
#include <dirent.h>
#include <sys/stat.h>

#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "executor_service/tools/mcp/testing/node_http_server.h"
#include "gtest/gtest.h"
#include "rein/v1/executor.grpc.pb.h"
#include "tests/cluster.h"

namespace rein::testing {
namespace {

// Two calls, one per server, then done.
constexpr const char* kScript = R"({
  "plan": [{"when": {"completed_contains": "http"}, "reply": {"goalAchieved": true}},
           {"reply": {"subtasks": [
             {"id": "env", "description": "whoami over stdio", "allowedTools": ["team__whoami"]},
             {"id": "http", "description": "whoami over http", "allowedTools": ["web__whoami"]}]}}],
  "decide": [{"when": {"subtask": "env"}, "reply": {"toolCall": {"tool": "team__whoami", "args": {}}}},
             {"when": {"subtask": "http"}, "reply": {"toolCall": {"tool": "web__whoami", "args": {}}}}],
  "evaluate": [{"when": {"action_ok": true}, "reply": {"status": "COMPLETED", "summary": "${observation}"}},
               {"reply": {"status": "FAILED", "summary": "${observation}"}}]
})";

// The credentials, and the first 16 hex digits of the SHA-256 of each (what `whoami` shows):
// `printf %s team-a-secret-7f3e | sha256sum | cut -c1-16`.
struct Credential {
  const char* value;
  const char* hash;
};
constexpr Credential kSecretA = {"team-a-secret-7f3e", "809030eb8162deb2"};
constexpr Credential kSecretB = {"team-b-secret-91c2", "6c4f61e8c0b17492"};
constexpr Credential kTokenA = {"team-a-token-0d4b", "872f686b5fdd97d3"};
constexpr Credential kTokenB = {"team-b-token-6e1a", "85adab1437389a02"};

std::string RealPath(const std::string& path) {
  char* real = realpath(path.c_str(), nullptr);
  std::string out = real != nullptr ? real : path;
  free(real);
  return out;
}

std::string Write(const std::string& path, const std::string& content) {
  std::ofstream(path) << content;
  return path;
}

// Every regular file under `dir` (recursively), but those under `skip`.
void Files(const std::string& dir, const std::string& skip, std::vector<std::string>* out) {
  if (dir == skip) return;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return;
  while (struct dirent* entry = readdir(d)) {
    const std::string name = entry->d_name;
    if (name == "." || name == "..") continue;
    const std::string path = dir + "/" + name;
    struct stat st;
    if (lstat(path.c_str(), &st) != 0) continue;
    if (S_ISDIR(st.st_mode)) Files(path, skip, out);
    if (S_ISREG(st.st_mode)) out->push_back(path);
  }
  closedir(d);
}

class McpNamespaceEndToEndTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = absl::StrCat(getenv("TEST_TMPDIR"), "/mcp-namespaces");
    secrets_ = dir_ + "/secrets";
    mkdir(dir_.c_str(), 0755);
    mkdir(secrets_.c_str(), 0700);
    const std::string root = dir_ + "/workspaces";
    mkdir(root.c_str(), 0755);
    for (const char* ns : {"team-a", "team-b", "team-c"}) {
      const std::string folder = absl::StrCat(root, "/", ns);
      mkdir(folder.c_str(), 0755);
      Write(folder + "/.rein-namespace", "");
      mkdir((folder + "/repo").c_str(), 0777);
      chmod((folder + "/repo").c_str(), 0777);  // the sandbox's uid may write there
    }
    const std::string server =
        RealPath(RunfilePath("executor_service/tools/mcp/testing/fake_mcp_server.js"));
    http_ = std::make_unique<NodeHttpServer>(server, std::vector<std::string>{"--http={port}"});
    ASSERT_TRUE(http_->up());
    auto file = [&](const std::string& name, const Credential& credential) {
      return Write(absl::StrCat(secrets_, "/", name), credential.value);
    };
    const std::string config = dir_ + "/mcp.json";
    std::ofstream(config) << absl::StrCat(
        R"({"servers": [{"name": "team", "transport": "stdio", "command": ["node", ")", server,
        R"("], "read_only_paths": [")", server.substr(0, server.rfind('/')),
        R"("], "trust_read_only_hint": true, "namespaces": {)",
        R"("team-a": {"env": {"FAKE_SECRET": {"file": ")", file("a.key", kSecretA), R"("}}},)",
        R"("team-b": {"env": {"FAKE_SECRET": {"file": ")", file("b.key", kSecretB), R"("}}}}},)",
        R"({"name": "web", "transport": "http", "url": ")", http_->url(),
        R"(", "trust_read_only_hint": true, "namespaces": {)", R"("team-a": {"token_file": ")",
        file("a.token", kTokenA), R"("},)", R"("team-b": {"token_file": ")",
        file("b.token", kTokenB), R"("}}}]})");
    Cluster::Options options;
    options.dir = dir_;
    options.script_json = kScript;
    options.executor_flags = {"--sandbox=bwrap", "--mcp_config=" + config};
    cluster_ = std::make_unique<Cluster>(options);
    ASSERT_TRUE(cluster_->Start()) << cluster_->Logs();
    executor_ = rein::v1::Executor::NewStub(
        grpc::CreateChannel(cluster_->executor_target(), grpc::InsecureChannelCredentials()));
  }

  // A run of `ns` (the test's caller is admin: no tokens file) in its workspace `repo`.
  rein::v1::RunSpec Spec(const std::string& ns, std::vector<std::string> tools) {
    rein::v1::RunSpec spec;
    spec.set_goal("say who you are");
    spec.set_workspace("repo");
    spec.set_namespace_(ns);
    for (const std::string& tool : tools) spec.add_tools(tool);
    spec.mutable_limits()->mutable_deadline()->set_seconds(120);
    return spec;
  }

  // Runs `ns`'s run to its end; returns "tool observation" per tool call, and keeps its events.
  std::vector<std::string> RunToEnd(const std::string& ns) {
    absl::StatusOr<rein::v1::Run> run =
        cluster_->StartRun(Spec(ns, {"team__whoami", "web__whoami"}));
    EXPECT_TRUE(run.ok()) << run.status();
    if (!run.ok()) return {};
    std::vector<rein::v1::RunEvent> events;
    EXPECT_TRUE(cluster_->Watch(run->run_id(), 0, absl::Seconds(90), &events).ok());
    EXPECT_FALSE(events.empty());
    if (!events.empty()) {
      EXPECT_EQ(events.back().finished().outcome().reason(), rein::v1::GOAL_ACHIEVED)
          << events.back().DebugString() << cluster_->Logs();
    }
    std::vector<std::string> results;
    for (const rein::v1::RunEvent& event : events) {
      absl::StrAppend(&shown_, event.DebugString());
      if (event.has_tool_result()) {
        const rein::v1::Action& action = event.tool_result().action();
        results.push_back(absl::StrCat(action.tool(), " ", action.observation()));
      }
    }
    absl::StatusOr<rein::v1::Run> got = cluster_->GetRun(run->run_id());
    if (got.ok()) absl::StrAppend(&shown_, got->DebugString());
    return results;
  }

  // What `reinctl tools --namespace=ns` printed about the executor, and its exit status.
  std::string ReinctlTools(const std::string& ns, int* exit_status) {
    const std::string out = absl::StrCat(dir_, "/reinctl-tools-", ++reinctl_runs_, ".out");
    Process reinctl("reinctl",
                    {RunfilePath("cli/reinctl"), "tools",
                     "--executor=" + cluster_->executor_target(), "--namespace=" + ns},
                    out);
    EXPECT_TRUE(reinctl.Start());
    *exit_status = reinctl.Wait(absl::Seconds(30));
    return ReadFile(out);
  }

  // The executor's ListTools for `ns`: the names offered.
  std::vector<std::string> Listed(const std::string& ns) {
    rein::v1::ListToolsRequest request;
    request.set_namespace_(ns);
    rein::v1::ListToolsResponse reply;
    grpc::ClientContext context;
    const grpc::Status status = executor_->ListTools(&context, request, &reply);
    EXPECT_TRUE(status.ok()) << status.error_message();
    absl::StrAppend(&shown_, reply.DebugString());
    std::vector<std::string> names;
    for (const rein::v1::ToolSpec& tool : reply.tools()) names.push_back(tool.name());
    return names;
  }

  // An Execute straight to the executor, as a confused or hostile router would send it.
  grpc::Status Execute(const std::string& ns, const std::string& tool) {
    rein::v1::ExecuteRequest request;
    request.set_call_id(absl::StrCat("direct-", ns, "-", tool));
    request.set_run_id("direct");
    request.set_workspace("repo");
    request.set_namespace_(ns);
    request.set_tool(tool);
    request.set_args_json("{}");
    rein::v1::ExecuteResponse reply;
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    return executor_->Execute(&context, request, &reply);
  }

  std::string dir_, secrets_;
  int reinctl_runs_ = 0;
  std::string shown_;  // everything the services showed: events, runs, tool lists
  std::unique_ptr<NodeHttpServer> http_;
  std::unique_ptr<Cluster> cluster_;
  std::unique_ptr<rein::v1::Executor::Stub> executor_;
};

bool Has(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

TEST_F(McpNamespaceEndToEndTest, EachNamespaceCallsWithItsOwnCredentialsAndOthersCannot) {
  // team-a's run: its env secret reaches the stdio server, its token the HTTP server.
  EXPECT_EQ(RunToEnd("team-a"), (std::vector<std::string>{
                                    absl::StrCat("team__whoami credential sha256:", kSecretA.hash),
                                    absl::StrCat("web__whoami credential sha256:", kTokenA.hash)}))
      << cluster_->Logs();
  // team-b's, on the same executor and servers: its own.
  EXPECT_EQ(RunToEnd("team-b"), (std::vector<std::string>{
                                    absl::StrCat("team__whoami credential sha256:", kSecretB.hash),
                                    absl::StrCat("web__whoami credential sha256:", kTokenB.hash)}))
      << cluster_->Logs();

  // team-c has no credentials: its run is not offered the tools...
  absl::StatusOr<rein::v1::Run> named = cluster_->StartRun(Spec("team-c", {"team__whoami"}));
  EXPECT_EQ(named.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(named.status().message(), "unknown tool \"team__whoami\""))
      << named.status();
  rein::v1::RunSpec spec = Spec("team-c", {});
  spec.add_pause_points(rein::v1::AFTER_PLAN);
  absl::StatusOr<rein::v1::Run> run = cluster_->StartRun(spec);
  ASSERT_TRUE(run.ok()) << run.status();
  absl::StatusOr<rein::v1::Run> paused =
      cluster_->WaitForStage(run->run_id(), rein::v1::PAUSED, absl::Seconds(60));
  ASSERT_TRUE(paused.ok()) << paused.status();
  ASSERT_GT(paused->state().tools_size(), 0) << paused->DebugString();
  for (const rein::v1::ToolSpec& tool : paused->state().tools()) {
    EXPECT_EQ(tool.origin(), "builtin") << tool.name();
  }
  // ...nor listed by the executor (neither is `default`)...
  for (const char* ns : {"team-c", ""}) {
    const std::vector<std::string> names = Listed(ns);
    EXPECT_TRUE(Has(names, "read_file")) << ns;
    EXPECT_FALSE(Has(names, "team__whoami") || Has(names, "web__whoami")) << ns;
  }
  EXPECT_TRUE(Has(Listed("team-a"), "team__whoami"));
  // reinctl shows each namespace its own offer, and names a bad namespace.
  int status = -1;
  const std::string team_a = ReinctlTools("team-a", &status);
  EXPECT_EQ(status, 0) << team_a;
  EXPECT_TRUE(absl::StrContains(team_a, "team__whoami")) << team_a;
  const std::string team_c = ReinctlTools("team-c", &status);
  EXPECT_EQ(status, 0) << team_c;
  EXPECT_TRUE(absl::StrContains(team_c, "read_file")) << team_c;
  EXPECT_FALSE(absl::StrContains(team_c, "whoami")) << team_c;
  const std::string bad = ReinctlTools("Team A", &status);
  EXPECT_NE(status, 0) << bad;
  EXPECT_TRUE(absl::StrContains(bad, "namespace")) << bad;
  absl::StrAppend(&shown_, team_a, team_c, bad);
  // ...and a call naming one is answered as a tool that does not exist, word for word.
  const grpc::Status hidden = Execute("team-c", "team__whoami");
  const grpc::Status unknown = Execute("team-c", "team__whoamx");
  EXPECT_EQ(hidden.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  std::string expected = unknown.error_message();
  expected.replace(expected.find("whoamx"), 6, "whoami");
  EXPECT_EQ(hidden.error_message(), expected);
  EXPECT_FALSE(absl::StrContains(hidden.error_message(), "web__whoami"));
  EXPECT_EQ(Execute("", "web__whoami").error_code(), grpc::StatusCode::INVALID_ARGUMENT);

  // No credential appears in anything shown (events, runs, tool lists, errors), in the logs, or
  // in any file the services wrote (the store, the call journal, workspaces, logs).
  absl::StrAppend(&shown_, hidden.error_message(), cluster_->Logs());
  std::vector<std::string> files;
  Files(dir_, secrets_, &files);
  ASSERT_GT(files.size(), 3u);
  for (const Credential& credential : {kSecretA, kSecretB, kTokenA, kTokenB}) {
    EXPECT_FALSE(absl::StrContains(shown_, credential.value)) << credential.value;
    for (const std::string& path : files) {
      EXPECT_FALSE(absl::StrContains(ReadFile(path), credential.value))
          << credential.value << " in " << path;
    }
  }
}

}  // namespace
}  // namespace rein::testing
