// MCP tools end to end: the three real services, the executor under bubblewrap with
// --mcp_config, the scripted planner calling a read-only and a mutating MCP tool.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "rein/v1/executor.grpc.pb.h"
#include "tests/cluster.h"

namespace rein::testing {
namespace {

constexpr const char* kScript = R"({
  "plan": [{"when": {"completed_contains": "write"}, "reply": {"goalAchieved": true}},
           {"reply": {"subtasks": [
             {"id": "read", "description": "echo", "allowedTools": ["fake__echo"]},
             {"id": "write", "description": "note", "allowedTools": ["fake__write_note"]}]}}],
  "decide": [{"when": {"subtask": "read"}, "reply": {"toolCall": {"tool": "fake__echo", "args": {"message": "hi"}}}},
             {"when": {"subtask": "write"}, "reply": {"toolCall": {"tool": "fake__write_note", "args": {"message": "from rein"}}}}],
  "evaluate": [{"when": {"action_ok": true}, "reply": {"status": "COMPLETED", "summary": "${observation}"}},
               {"reply": {"status": "FAILED", "summary": "${observation}"}}]
})";

// One mutating call whose server dies mid-call.
constexpr const char* kCrashScript = R"({
  "plan": [{"reply": {"subtasks": [{"id": "crash", "description": "crash", "allowedTools": ["fake__crash"]}]}}],
  "decide": [{"reply": {"toolCall": {"tool": "fake__crash", "args": {}}}}],
  "evaluate": [{"reply": {"status": "FAILED", "summary": "${observation}"}}]
})";

// A read-only MCP tool, then a mutating declared tool (examples/declared_tools) in one run.
constexpr const char* kMixedScript = R"({
  "plan": [{"when": {"completed_contains": "note"}, "reply": {"goalAchieved": true}},
           {"reply": {"subtasks": [
             {"id": "read", "description": "echo", "allowedTools": ["fake__echo"]},
             {"id": "note", "description": "note", "allowedTools": ["append_note"]}]}}],
  "decide": [{"when": {"subtask": "read"}, "reply": {"toolCall": {"tool": "fake__echo", "args": {"message": "hi"}}}},
             {"when": {"subtask": "note"}, "reply": {"toolCall": {"tool": "append_note", "args": {"text": "- noted by rein"}}}}],
  "evaluate": [{"when": {"action_ok": true}, "reply": {"status": "COMPLETED", "summary": "${observation}"}},
               {"reply": {"status": "FAILED", "summary": "${observation}"}}]
})";

std::string RealPath(const std::string& path) {
  char* real = realpath(path.c_str(), nullptr);
  std::string out = real != nullptr ? real : path;
  free(real);
  return out;
}

class McpEndToEndTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = absl::StrCat(getenv("TEST_TMPDIR"), "/",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    mkdir(dir_.c_str(), 0755);
    mkdir((dir_ + "/workspaces").c_str(), 0755);
    ws_ = dir_ + "/workspaces/repo";
    mkdir(ws_.c_str(), 0777);
    chmod(ws_.c_str(), 0777);  // the sandbox's uid writes here
    const std::string server =
        RealPath(RunfilePath("executor_service/tools/mcp/testing/fake_mcp_server.js"));
    const std::string config = dir_ + "/mcp.json";
    std::ofstream(config) << absl::StrCat(
        R"({"servers": [{"name": "fake", "transport": "stdio", "command": ["node", ")", server,
        R"("], "read_only_paths": [")", server.substr(0, server.rfind('/')),
        R"("], "trust_read_only_hint": true, "tools": {"crash": {"mutating": true}}}]})");
    Cluster::Options options;
    options.dir = dir_;
    const std::string test = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    options.script_json = absl::StrContains(test, "Recovery")       ? kCrashScript
                          : absl::StrContains(test, "DeclaredTool") ? kMixedScript
                                                                    : kScript;
    options.executor_flags = {"--sandbox=bwrap", "--mcp_config=" + config};
    if (absl::StrContains(test, "DeclaredTool")) {
      options.executor_flags.push_back("--tools_dir=" +
                                       RealPath(RunfilePath("examples/declared_tools/tools")));
    }
    cluster_ = std::make_unique<Cluster>(options);
    ASSERT_TRUE(cluster_->Start()) << cluster_->Logs();
  }

  rein::v1::RunSpec Spec() {
    rein::v1::RunSpec spec;
    spec.set_goal("echo, then leave a note");
    spec.set_workspace("repo");
    spec.add_tools("fake__echo");
    spec.add_tools("fake__write_note");
    spec.mutable_limits()->mutable_deadline()->set_seconds(120);
    return spec;
  }

  std::string dir_, ws_;
  std::unique_ptr<Cluster> cluster_;
};

TEST_F(McpEndToEndTest, RunCallsMcpToolsAndPausesBeforeTheMutatingOne) {
  rein::v1::RunSpec spec = Spec();
  spec.add_pause_points(rein::v1::BEFORE_MUTATING_TOOL);
  absl::StatusOr<rein::v1::Run> run = cluster_->StartRun(spec);
  ASSERT_TRUE(run.ok()) << run.status();
  absl::StatusOr<rein::v1::Run> paused =
      cluster_->WaitForStage(run->run_id(), rein::v1::PAUSED, absl::Seconds(60));
  ASSERT_TRUE(paused.ok());
  ASSERT_EQ(paused->state().stage(), rein::v1::PAUSED) << cluster_->Logs();
  EXPECT_EQ(paused->state().pause().point(), rein::v1::BEFORE_MUTATING_TOOL);
  EXPECT_EQ(paused->state().pause().pending_call().tool(), "fake__write_note");
  // The run pinned its tools with their schema hashes at start.
  for (const rein::v1::ToolSpec& tool : paused->state().tools()) {
    EXPECT_TRUE(absl::StartsWith(tool.schema_hash(), "sha256:")) << tool.DebugString();
    EXPECT_EQ(tool.origin(), "mcp:fake");
  }
  struct stat st;
  EXPECT_NE(stat((ws_ + "/note.txt").c_str(), &st), 0);  // nothing written before review
  ASSERT_TRUE(cluster_->Approve(*paused).ok());
  std::vector<rein::v1::RunEvent> events;
  ASSERT_TRUE(cluster_->Watch(run->run_id(), 0, absl::Seconds(60), &events).ok());
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().finished().outcome().reason(), rein::v1::GOAL_ACHIEVED)
      << events.back().DebugString() << cluster_->Logs();
  std::vector<std::string> results;
  for (const rein::v1::RunEvent& event : events) {
    if (event.has_tool_result()) {
      const rein::v1::Action& action = event.tool_result().action();
      results.push_back(absl::StrCat(action.tool(), " ", action.ok(), " ", action.observation()));
    }
  }
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0], "fake__echo 1 echo: hi");
  EXPECT_EQ(results[1], "fake__write_note 1 wrote note.txt");
  EXPECT_EQ(ReadFile(ws_ + "/note.txt"), "from rein");
}

TEST_F(McpEndToEndTest, RunCallsAnMcpToolAndADeclaredToolPausingBeforeTheMutatingOne) {
  rein::v1::RunSpec spec;
  spec.set_goal("echo, then append a note");
  spec.set_workspace("repo");
  spec.add_tools("fake__echo");
  spec.add_tools("append_note");
  spec.mutable_limits()->mutable_deadline()->set_seconds(120);
  spec.add_pause_points(rein::v1::BEFORE_MUTATING_TOOL);
  absl::StatusOr<rein::v1::Run> run = cluster_->StartRun(spec);
  ASSERT_TRUE(run.ok()) << run.status();
  absl::StatusOr<rein::v1::Run> paused =
      cluster_->WaitForStage(run->run_id(), rein::v1::PAUSED, absl::Seconds(60));
  ASSERT_TRUE(paused.ok());
  ASSERT_EQ(paused->state().stage(), rein::v1::PAUSED) << cluster_->Logs();
  EXPECT_EQ(paused->state().pause().point(), rein::v1::BEFORE_MUTATING_TOOL);
  EXPECT_EQ(paused->state().pause().pending_call().tool(), "append_note");
  std::map<std::string, std::string> origins;
  for (const rein::v1::ToolSpec& tool : paused->state().tools())
    origins[tool.name()] = tool.origin();
  EXPECT_EQ(origins["fake__echo"], "mcp:fake");
  EXPECT_EQ(origins["append_note"], "declared:append_note.json");
  struct stat st;
  EXPECT_NE(stat((ws_ + "/NOTES.md").c_str(), &st), 0);  // nothing written before review
  ASSERT_TRUE(cluster_->Approve(*paused).ok());
  std::vector<rein::v1::RunEvent> events;
  ASSERT_TRUE(cluster_->Watch(run->run_id(), 0, absl::Seconds(60), &events).ok());
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().finished().outcome().reason(), rein::v1::GOAL_ACHIEVED)
      << events.back().DebugString() << cluster_->Logs();
  std::vector<std::string> tools;
  for (const rein::v1::RunEvent& event : events) {
    if (event.has_tool_result() && event.tool_result().action().ok()) {
      tools.push_back(event.tool_result().action().tool());
    }
  }
  EXPECT_EQ(tools, (std::vector<std::string>{"fake__echo", "append_note"}));
  EXPECT_EQ(ReadFile(ws_ + "/NOTES.md"), "- noted by rein\n");
}

TEST_F(McpEndToEndTest, ToolChangedMidRunIsAFailedCallNotASilentChange) {
  rein::v1::RunSpec spec = Spec();
  spec.add_pause_points(rein::v1::BEFORE_TOOL);
  absl::StatusOr<rein::v1::Run> run = cluster_->StartRun(spec);
  ASSERT_TRUE(run.ok()) << run.status();
  absl::StatusOr<rein::v1::Run> paused =
      cluster_->WaitForStage(run->run_id(), rein::v1::PAUSED, absl::Seconds(60));
  ASSERT_TRUE(paused.ok());
  ASSERT_EQ(paused->state().pause().pending_call().tool(), "fake__echo") << cluster_->Logs();
  // The server's tools change while the run waits (it also sends list_changed).
  std::ofstream(ws_ + "/.schema_v2") << "";
  ASSERT_TRUE(cluster_->Approve(*paused).ok());
  absl::StatusOr<rein::v1::Run> next =
      cluster_->WaitForStage(run->run_id(), rein::v1::PAUSED, absl::Seconds(60));
  ASSERT_TRUE(next.ok());
  ASSERT_GT(next->state().recent_actions_size(), 0) << next->DebugString();
  const rein::v1::Action& action = next->state().recent_actions(0);
  EXPECT_EQ(action.tool(), "fake__echo");
  EXPECT_FALSE(action.ok());
  EXPECT_TRUE(absl::StrContains(action.error(), "schema of tool fake__echo changed"))
      << action.DebugString();
}

TEST_F(McpEndToEndTest, ServerDyingDuringAMutatingCallPausesForRecovery) {
  rein::v1::RunSpec spec = Spec();
  spec.add_tools("fake__crash");
  absl::StatusOr<rein::v1::Run> run = cluster_->StartRun(spec);
  ASSERT_TRUE(run.ok()) << run.status();
  absl::StatusOr<rein::v1::Run> paused =
      cluster_->WaitForStage(run->run_id(), rein::v1::PAUSED, absl::Seconds(60));
  ASSERT_TRUE(paused.ok());
  ASSERT_EQ(paused->state().stage(), rein::v1::PAUSED) << cluster_->Logs();
  EXPECT_EQ(paused->state().pause().reason(), rein::v1::RECOVERY) << paused->DebugString();
  EXPECT_EQ(paused->state().pause().pending_call().tool(), "fake__crash");
}

// VmRSS of process `pid` in KiB (-1 when it is gone).
int64_t RssKiB(pid_t pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(in, line)) {
    if (absl::StartsWith(line, "VmRSS:")) return std::stoll(line.substr(6));
  }
  return -1;
}

// The real rein-executor against the hostile MCP server (executor_service/tools/mcp/testing/
// hostile_mcp_server.js) over stdio in bubblewrap and over streamable HTTP: each attack is a
// failed call naming its bound; the executor stays up, its memory bounded, and serves on.
TEST(McpHostileEndToEndTest, HostileRepliesAreRefusedAndTheExecutorStaysUpAndSmall) {
  const std::string dir = absl::StrCat(getenv("TEST_TMPDIR"), "/hostile");
  mkdir(dir.c_str(), 0755);
  mkdir((dir + "/workspaces").c_str(), 0755);
  mkdir((dir + "/workspaces/repo").c_str(), 0777);
  chmod((dir + "/workspaces/repo").c_str(), 0777);
  const std::string server =
      RealPath(RunfilePath("executor_service/tools/mcp/testing/hostile_mcp_server.js"));
  const int port = FreePort();
  Process http("hostile-http", {"/usr/bin/env", "node", server, absl::StrCat("--http=", port)},
               dir + "/hostile-http.log");
  ASSERT_TRUE(http.Start());
  bool up = false;
  for (int i = 0; i < 150 && !up; ++i) {
    sockaddr_in address = {};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = htons(static_cast<uint16_t>(port));
    const int s = socket(AF_INET, SOCK_STREAM, 0);
    up = connect(s, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
    close(s);
    if (!up) absl::SleepFor(absl::Milliseconds(100));
  }
  ASSERT_TRUE(up) << ReadFile(dir + "/hostile-http.log");
  const std::string config = dir + "/mcp.json";
  std::ofstream(config) << absl::StrCat(
      R"({"servers": [{"name": "hostile", "transport": "stdio", "command": ["node", ")", server,
      R"("], "read_only_paths": [")", server.substr(0, server.rfind('/')), R"("]},)",
      R"({"name": "web", "transport": "http", "url": "http://127.0.0.1:)", port,
      R"(/mcp", "timeout_seconds": 20, "startup_timeout_seconds": 20}]})");
  Cluster::Options options;
  options.dir = dir;
  options.script_json = kScript;
  options.executor_flags = {"--sandbox=bwrap", "--mcp_config=" + config};
  Cluster cluster(options);
  ASSERT_TRUE(cluster.Start()) << cluster.Logs();
  auto executor = rein::v1::Executor::NewStub(
      grpc::CreateChannel(cluster.executor_target(), grpc::InsecureChannelCredentials()));
  int calls = 0;
  auto call = [&](const std::string& tool) {
    rein::v1::ExecuteRequest request;
    request.set_call_id(absl::StrCat("hostile-", ++calls));
    request.set_run_id("hostile-run");
    request.set_workspace("repo");
    request.set_tool(tool);
    request.set_args_json("{}");
    rein::v1::ExecuteResponse response;
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    const grpc::Status status = executor->Execute(&context, request, &response);
    EXPECT_TRUE(status.ok()) << tool << ": " << status.error_message() << cluster.Logs();
    return response;
  };
  auto refused = [&](const std::string& tool, const std::string& code, const std::string& bound) {
    rein::v1::ExecuteResponse response = call(tool);
    EXPECT_FALSE(response.ok()) << tool;
    EXPECT_EQ(response.error().code(), code) << tool << ": " << response.error().message();
    EXPECT_TRUE(absl::StrContains(response.error().message(), bound))
        << tool << ": " << response.error().message();
  };

  rein::v1::ListToolsResponse tools;
  grpc::ClientContext list_context;
  ASSERT_TRUE(executor->ListTools(&list_context, rein::v1::ListToolsRequest(), &tools).ok());
  bool peek_listed = false;
  for (const rein::v1::ToolSpec& tool : tools.tools()) {
    if (tool.name() != "hostile__peek") continue;
    peek_listed = true;
    EXPECT_TRUE(tool.mutating());  // its readOnlyHint is shown, not trusted
  }
  EXPECT_TRUE(peek_listed);

  const pid_t pid = cluster.executor(0)->pid();
  const int64_t before = RssKiB(pid);
  refused("web__flood", "OUTPUT_TOO_LARGE", "(the cap per request); disconnected");
  refused("web__deep_reply", "MCP_PROTOCOL_ERROR", "nested deeper than 64 levels");
  refused("hostile__deep_reply", "MCP_PROTOCOL_ERROR", "nested deeper than 64 levels");
  refused("hostile__huge", "OUTPUT_TOO_LARGE", "the cap is");
  refused("hostile__flood", "OUTPUT_TOO_LARGE", "messages without answering");
  const int64_t after = RssKiB(pid);
  ASSERT_GT(after, 0) << "the executor died" << cluster.Logs();
  EXPECT_LT(after - before, 64 << 10) << "VmRSS " << before << " -> " << after << " KiB";
  rein::v1::ExecuteResponse peek = call("hostile__peek");
  EXPECT_TRUE(peek.ok()) << peek.error().message();
  EXPECT_EQ(peek.output(), "peeked");
  http.Kill(SIGKILL);
  http.Wait(absl::Seconds(5));
}

}  // namespace
}  // namespace rein::testing
