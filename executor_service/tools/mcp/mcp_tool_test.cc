// Tests of MCP tools through the ToolExecutor, against real servers in the real sandbox: the
// project's fake server (executor_service/tools/mcp/testing) and the pinned reference server
// (third_party/mcp, installed by ./dev setup), over stdio and streamable HTTP.
#include "executor_service/tools/mcp/mcp_tool.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/time/clock.h"
#include "executor_service/testing/host_processes.h"
#include "executor_service/testing/temp_workspace.h"
#include "executor_service/tool_executor.h"
#include "executor_service/tools/json_schema.h"
#include "executor_service/tools/mcp/testing/node_http_server.h"
#include "gtest/gtest.h"
#include "trace/span_context.h"
#include "trace/tracer.h"

namespace rein {
namespace {

using nlohmann::json;
using ::rein::testing::HostProcessWithCmdline;
using ::rein::testing::TempWorkspace;

constexpr const char* kSecret = "s3cr3t-token-value-4711";

std::string RealPath(const std::string& path) {
  char* real = realpath(path.c_str(), nullptr);
  std::string out = real != nullptr ? real : path;
  free(real);
  return out;
}
std::string Dir(const std::string& path) { return path.substr(0, path.rfind('/')); }
std::string Runfile(const std::string& rel) {
  return RealPath(absl::StrCat(std::getenv("TEST_SRCDIR"), "/rein/", rel));
}
std::string FakeServer() {
  return Runfile("executor_service/tools/mcp/testing/fake_mcp_server.js");
}
// An argument only this process's fake servers carry, to tell them from those of another test
// running the same script at the same time.
std::string Instance() { return absl::StrCat("--instance=mcp_tool_test-", getpid()); }
std::string McpDir() { return Dir(Runfile("third_party/mcp/package.json")); }
std::string Everything() {
  return McpDir() + "/node_modules/@modelcontextprotocol/server-everything/dist/index.js";
}

std::string WriteTemp(const std::string& name, const std::string& content) {
  const std::string path = absl::StrCat(std::getenv("TEST_TMPDIR"), "/", name);
  std::ofstream(path) << content;
  return path;
}

json FakeConfig(const std::string& name, std::vector<std::string> extra_args = {}) {
  json command = {"node", FakeServer(), Instance()};
  for (const std::string& arg : extra_args) command.push_back(arg);
  return {{"name", name},
          {"transport", "stdio"},
          {"command", command},
          {"read_only_paths", {Dir(FakeServer())}},
          {"env", {{"FAKE_SECRET", {{"file", WriteTemp("secret.txt", kSecret)}}}}},
          {"timeout_seconds", 20},
          {"trust_read_only_hint", true},
          {"tools", {{"fail", {{"mutating", true}}}}}};
}

absl::StatusOr<std::unique_ptr<ToolExecutor>> MakeExecutor(const TempWorkspace& temp,
                                                           const std::vector<json>& list) {
  json servers = json::array();
  for (const json& server : list) servers.push_back(server);
  ExecutorOptions options;
  options.workspace_root = temp.root();
  options.executor_id = "test-executor";
  options.mcp_config = WriteTemp("mcp.json", json{{"servers", servers}}.dump());
  return ToolExecutor::Create(options);
}

class McpToolTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    temp_ = new TempWorkspace();
    json everything = {{"name", "everything"},
                       {"transport", "stdio"},
                       {"command", {"node", Everything(), "stdio"}},
                       {"read_only_paths", {McpDir()}},
                       {"trust_read_only_hint", true}};
    const std::string fs_server =
        McpDir() + "/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js";
    json fs = {{"name", "fs"},
               {"transport", "stdio"},
               {"command", {"node", fs_server, "/workspace"}},
               {"read_only_paths", {McpDir()}},
               {"trust_read_only_hint", true}};
    json networked = FakeConfig("netfake");
    networked["network"] = true;
    networked["tools"]["crash"] = {{"mutating", true}};
    absl::StatusOr<std::unique_ptr<ToolExecutor>> executor =
        MakeExecutor(*temp_, {FakeConfig("fake"), everything, fs, networked});
    ASSERT_TRUE(executor.ok()) << executor.status();
    executor_ = executor->release();
  }
  static void TearDownTestSuite() {
    delete executor_;
    delete temp_;
  }

  ToolResult Call(const std::string& tool, const json& args, absl::Duration timeout = {},
                  int64_t max_output_bytes = 0, const std::string& pinned = "") {
    ExecuteCall call;
    call.call_id = "call-1";
    call.workspace = TempWorkspace::kName;
    call.tool = tool;
    call.args_json = args.dump();
    call.timeout = timeout;
    call.max_output_bytes = max_output_bytes;
    call.tool_schema_hash = pinned;
    absl::StatusOr<ToolResult> result = executor_->Execute(call);
    EXPECT_TRUE(result.ok()) << result.status();
    return result.ok() ? *result : ToolResult::Failure(result.status());
  }

  const ToolSpec* Find(const std::string& name) {
    static std::vector<ToolSpec> specs;
    specs = executor_->ListTools();
    for (const ToolSpec& spec : specs) {
      if (spec.name == name) return &spec;
    }
    return nullptr;
  }

  static TempWorkspace* temp_;
  static ToolExecutor* executor_;
};

TempWorkspace* McpToolTest::temp_ = nullptr;
ToolExecutor* McpToolTest::executor_ = nullptr;

TEST_F(McpToolTest, ListsEveryPageWithOriginAndMutating) {
  ASSERT_NE(Find("fake__echo"), nullptr);
  ASSERT_NE(Find("fake__env"), nullptr);  // on the last page
  EXPECT_EQ(Find("fake__echo")->origin, "mcp:fake");
  EXPECT_FALSE(Find("fake__echo")->mutating);       // readOnlyHint, trusted by the config
  EXPECT_TRUE(Find("fake__write_note")->mutating);  // no hint
  EXPECT_TRUE(Find("fake__fail")->mutating);        // the config's override
  EXPECT_EQ(Find("fake__fancy"), nullptr);          // anyOf: refused, not loosely validated
  ASSERT_NE(Find("everything__echo"), nullptr);
  EXPECT_TRUE(Find("everything__toggle-simulated-logging")->mutating);
  EXPECT_EQ(Find("read_file")->origin, "builtin");
  for (const ToolSpec& spec : executor_->ListTools()) {
    EXPECT_FALSE(absl::StrContains(spec.description + spec.input_schema.dump(), kSecret));
  }
}

TEST_F(McpToolTest, TextResultWhileRefusingSamplingAndIgnoringStrayReplies) {
  ToolResult result = Call("fake__echo", {{"message", "hi"}});
  EXPECT_TRUE(result.ok) << result.error_message;
  EXPECT_EQ(result.output, "echo: hi");
}

TEST_F(McpToolTest, ServerReceivesTheCallsTraceContextInMeta) {
  // What the executor's adapter sets around a call: the execute_tool span's context.
  const std::string traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  ToolResult traced;
  {
    trace::ScopedContext scope(*trace::ParseTraceparent(traceparent));
    traced = Call("fake__meta", json::object());
  }
  ASSERT_TRUE(traced.ok) << traced.error_message;
  const json meta = json::parse(traced.output);
  EXPECT_EQ(meta.value("traceparent", ""), traceparent) << traced.output;
  EXPECT_TRUE(meta.contains("progressToken"));
  ToolResult untraced = Call("fake__meta", json::object());
  ASSERT_TRUE(untraced.ok) << untraced.error_message;
  EXPECT_FALSE(json::parse(untraced.output).contains("traceparent")) << untraced.output;
}

TEST_F(McpToolTest, StructuredResult) {
  ToolResult result = Call("fake__structured", json::object());
  EXPECT_TRUE(result.ok) << result.error_message;
  EXPECT_TRUE(absl::StrContains(result.structured_content_json, "sunny"));
  EXPECT_TRUE(absl::StrContains(result.output, "sunny"));
}

TEST_F(McpToolTest, IsErrorIsAFailedCall) {
  ToolResult result = Call("fake__fail", json::object());
  EXPECT_FALSE(result.ok);
  EXPECT_EQ(result.error_code, "TOOL_ERROR");
  EXPECT_EQ(result.output, "it went wrong");
}

TEST_F(McpToolTest, ArgumentsAreValidatedBeforeSending) {
  ToolResult result = Call("fake__echo", {{"message", 5}});
  EXPECT_FALSE(result.ok);
  EXPECT_EQ(result.error_code, "INVALID_ARGUMENT");
  EXPECT_TRUE(absl::StrContains(result.error_message, "args.message")) << result.error_message;
}

TEST_F(McpToolTest, TenMegabyteResultIsCappedNotBuffered) {
  ToolResult result = Call("fake__big", json::object(), absl::ZeroDuration(), 64 << 10);
  EXPECT_FALSE(result.ok);
  EXPECT_TRUE(result.truncated);
  EXPECT_EQ(result.error_code, "OUTPUT_TOO_LARGE") << result.error_message;
}

TEST_F(McpToolTest, HangTimesOutSendsCancelledAndLeavesNoProcess) {
  ToolResult result = Call("fake__hang", json::object(), absl::Seconds(3));
  EXPECT_FALSE(result.ok);
  EXPECT_TRUE(result.timed_out);
  EXPECT_EQ(result.error_code, "TIMEOUT");
  std::ifstream cancelled(temp_->Path("cancelled.txt"));
  std::stringstream text;
  text << cancelled.rdbuf();
  EXPECT_TRUE(absl::StrContains(text.str(), "requestId")) << text.str();
  EXPECT_FALSE(HostProcessWithCmdline(Instance()));
}

TEST_F(McpToolTest, CrashMidCallIsAToolFailureAndTheNextCallGetsAFreshServer) {
  ToolResult result = Call("fake__crash", json::object());
  EXPECT_FALSE(result.ok);
  EXPECT_EQ(result.error_code, "UNAVAILABLE");
  EXPECT_TRUE(absl::StrContains(result.error_message, "exit status 3")) << result.error_message;
  EXPECT_TRUE(Call("fake__echo", {{"message", "again"}}).ok);
}

TEST_F(McpToolTest, CrashDuringAMutatingCallIsAnUnknownOutcome) {
  ExecuteCall call;
  call.call_id = "call-crash";
  call.workspace = TempWorkspace::kName;
  call.tool = "netfake__crash";
  call.args_json = "{}";
  absl::StatusOr<ExecuteOutcome> outcome = executor_->ExecuteOnce(call);
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_TRUE(outcome->outcome_unknown);
  EXPECT_FALSE(outcome->result.ok);
  EXPECT_EQ(outcome->result.error_code, "OUTCOME_UNKNOWN");
  EXPECT_TRUE(absl::StrContains(outcome->result.error_message, "may have taken effect"))
      << outcome->result.error_message;
  // The journal keeps the answer: the same call_id again is unknown, never run a second time.
  absl::StatusOr<ExecuteOutcome> again = executor_->ExecuteOnce(call);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(again->outcome_unknown);
  EXPECT_FALSE(again->replayed);
}

TEST_F(McpToolTest, ServerCannotReadOutsideTheWorkspace) {
  ToolResult result = Call("fake__read_path", {{"path", temp_->root() + "/outside.txt"}});
  EXPECT_FALSE(result.ok);
  EXPECT_TRUE(absl::StrContains(result.output, "refused")) << result.output;
}

TEST_F(McpToolTest, ServerCannotReachTheNetwork) {
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address = {};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  ASSERT_EQ(listen(listener, 4), 0);
  socklen_t size = sizeof(address);
  getsockname(listener, reinterpret_cast<sockaddr*>(&address), &size);
  ToolResult result =
      Call("fake__connect", {{"host", "127.0.0.1"}, {"port", ntohs(address.sin_port)}});
  close(listener);
  EXPECT_FALSE(result.ok);
  EXPECT_TRUE(absl::StrContains(result.output, "refused")) << result.output;
}

TEST_F(McpToolTest, NetworkGrantedInTheConfigReachesTheHost) {
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address = {};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  ASSERT_EQ(listen(listener, 4), 0);
  socklen_t size = sizeof(address);
  getsockname(listener, reinterpret_cast<sockaddr*>(&address), &size);
  ToolResult result =
      Call("netfake__connect", {{"host", "127.0.0.1"}, {"port", ntohs(address.sin_port)}});
  close(listener);
  EXPECT_TRUE(result.ok) << result.output << result.error_message;
  EXPECT_EQ(result.output, "connected");
}

TEST_F(McpToolTest, FilesystemServerIsConfinedToTheWorkspace) {
  temp_->WriteFile("hello.txt", "hello from the workspace\n");
  ToolResult inside = Call("fs__read_text_file", {{"path", "/workspace/hello.txt"}});
  EXPECT_TRUE(inside.ok) << inside.output << inside.error_message;
  EXPECT_TRUE(absl::StrContains(inside.output, "hello from the workspace")) << inside.output;
  EXPECT_TRUE(Find("fs__write_file")->mutating);
  EXPECT_FALSE(Find("fs__read_text_file")->mutating);
  ToolResult outside = Call("fs__read_text_file", {{"path", temp_->root() + "/outside.txt"}});
  EXPECT_FALSE(outside.ok);
}

TEST_F(McpToolTest, SecretsFromFilesAreRedacted) {
  ToolResult result = Call("fake__env", json::object());
  EXPECT_TRUE(result.ok) << result.error_message;
  EXPECT_FALSE(absl::StrContains(result.output, kSecret));
  EXPECT_TRUE(absl::StrContains(result.output, "[redacted]")) << result.output;
}

TEST_F(McpToolTest, MutatingToolWritesTheWorkspace) {
  ToolResult result = Call("fake__write_note", {{"message", "noted"}});
  EXPECT_TRUE(result.ok) << result.error_message;
  std::ifstream note(temp_->Path("note.txt"));
  std::string content;
  std::getline(note, content);
  EXPECT_EQ(content, "noted");
}

TEST_F(McpToolTest, PinnedSchemaHashHoldsAndAChangedSchemaIsRefused) {
  const std::string pinned = SchemaHash(Find("fake__echo")->input_schema);
  EXPECT_TRUE(Call("fake__echo", {{"message", "a"}}, {}, 0, pinned).ok);
  ToolResult stale = Call("fake__echo", {{"message", "a"}}, {}, 0, "sha256:00");
  EXPECT_EQ(stale.error_code, "FAILED_PRECONDITION");
  EXPECT_TRUE(absl::StrContains(stale.error_message, "changed since the run started"));
  // The server changes the tool mid-run (and says so with list_changed): refused, not used.
  temp_->WriteFile(".schema_v2", "");
  ToolResult changed = Call("fake__echo", {{"message", "a"}}, {}, 0, pinned);
  std::remove(temp_->Path(".schema_v2").c_str());
  EXPECT_FALSE(changed.ok);
  EXPECT_EQ(changed.error_code, "FAILED_PRECONDITION");
  EXPECT_TRUE(absl::StrContains(changed.error_message, "schema of tool fake__echo changed"))
      << changed.error_message;
}

TEST_F(McpToolTest, ReferenceServerOverStdio) {
  ToolResult echo = Call("everything__echo", {{"message", "hello there"}});
  EXPECT_TRUE(echo.ok) << echo.error_message;
  EXPECT_TRUE(absl::StrContains(echo.output, "hello there")) << echo.output;
  ToolResult weather = Call("everything__get-structured-content", {{"location", "Chicago"}});
  EXPECT_TRUE(weather.ok) << weather.error_message;
  EXPECT_TRUE(absl::StrContains(weather.structured_content_json, "temperature"));
}

TEST(McpToolNameTest, LongOrOddNamesAreShortenedDeterministically) {
  EXPECT_EQ(McpToolName("fs", "read_file"), "fs__read_file");
  const std::string long_a = McpToolName("server", std::string(70, 'a'));
  const std::string long_b = McpToolName("server", std::string(71, 'a'));
  EXPECT_EQ(long_a.size(), 64u);
  EXPECT_NE(long_a, long_b);
  EXPECT_EQ(long_a, McpToolName("server", std::string(70, 'a')));
  const std::string dotted = McpToolName("s", "get.weather now");
  EXPECT_TRUE(absl::StartsWith(dotted, "s__get_weather_now_")) << dotted;
}

TEST(McpStartTest, UnreachableHttpServerRefusesStartWithoutTheToken) {
  TempWorkspace temp;
  const int probe = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address = {};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(probe, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  socklen_t size = sizeof(address);
  getsockname(probe, reinterpret_cast<sockaddr*>(&address), &size);
  close(probe);  // nothing listens there now
  json http = {{"name", "down"},
               {"transport", "http"},
               {"url", absl::StrCat("http://127.0.0.1:", ntohs(address.sin_port), "/mcp")},
               {"token_file", WriteTemp("token.txt", kSecret)},
               {"startup_timeout_seconds", 5}};
  absl::StatusOr<std::unique_ptr<ToolExecutor>> executor = MakeExecutor(temp, {http});
  EXPECT_EQ(executor.status().code(), absl::StatusCode::kUnavailable) << executor.status();
  EXPECT_TRUE(absl::StrContains(executor.status().message(), "MCP server \"down\""));
  EXPECT_FALSE(absl::StrContains(executor.status().message(), kSecret));
}

TEST(McpStartTest, UnsupportedProtocolVersionRefusesStart) {
  TempWorkspace temp;
  absl::StatusOr<std::unique_ptr<ToolExecutor>> executor =
      MakeExecutor(temp, {FakeConfig("old", {"--version=1999-01-01"})});
  EXPECT_EQ(executor.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(absl::StrContains(executor.status().message(), "1999-01-01")) << executor.status();
  EXPECT_TRUE(absl::StrContains(executor.status().message(), "mcp.json")) << executor.status();
}

TEST(McpStartTest, BadConfigRefusesStartNamingTheField) {
  TempWorkspace temp;
  absl::StatusOr<std::unique_ptr<ToolExecutor>> executor =
      MakeExecutor(temp, {{{"name", "x"}, {"transport", "stdio"}}});
  EXPECT_EQ(executor.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(executor.status().message(), "servers[0] (x).command"))
      << executor.status();
}

TEST(McpStartTest, MalformedReplyIsAProtocolError) {
  TempWorkspace temp;
  absl::StatusOr<std::unique_ptr<ToolExecutor>> executor =
      MakeExecutor(temp, {FakeConfig("bad", {"--malformed"})});
  ASSERT_TRUE(executor.ok()) << executor.status();
  ExecuteCall call;
  call.call_id = "c";
  call.workspace = TempWorkspace::kName;
  call.tool = "bad__echo";
  call.args_json = R"({"message":"x"})";
  absl::StatusOr<ToolResult> result = (*executor)->Execute(call);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_FALSE(result->ok);
  EXPECT_EQ(result->error_code, "MCP_PROTOCOL_ERROR") << result->error_message;
}

TEST(McpStartTest, ReferenceServerOverStreamableHttp) {
  // The reference server on a free port ($PORT).
  auto server = std::make_unique<testing::NodeHttpServer>(
      Everything(), std::vector<std::string>{"streamableHttp"});
  ASSERT_TRUE(server->up()) << "the reference server did not listen on " << server->port();
  TempWorkspace temp;
  json http = {{"name", "web"},
               {"transport", "http"},
               {"url", server->url()},
               {"token_file", WriteTemp("token.txt", kSecret)}};
  absl::StatusOr<std::unique_ptr<ToolExecutor>> executor = MakeExecutor(temp, {http});
  ASSERT_TRUE(executor.ok()) << executor.status();
  ExecuteCall call;
  call.call_id = "c";
  call.workspace = TempWorkspace::kName;
  call.tool = "web__echo";
  call.args_json = R"({"message":"over http"})";
  absl::StatusOr<ToolResult> result = (*executor)->Execute(call);
  call.tool = "web__get-structured-content";
  call.args_json = R"({"location":"New York"})";
  absl::StatusOr<ToolResult> weather = (*executor)->Execute(call);
  // Progress notifications arrive as SSE events before the reply.
  call.tool = "web__trigger-long-running-operation";
  call.args_json = R"({"duration":1,"steps":2})";
  absl::StatusOr<ToolResult> progress = (*executor)->Execute(call);
  call.args_json = R"({"duration":30,"steps":2})";
  call.timeout = absl::Seconds(2);
  absl::StatusOr<ToolResult> timeout = (*executor)->Execute(call);
  server.reset();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->ok) << result->error_message;
  EXPECT_TRUE(absl::StrContains(result->output, "over http")) << result->output;
  ASSERT_TRUE(weather.ok()) << weather.status();
  EXPECT_TRUE(absl::StrContains(weather->structured_content_json, "temperature"));
  ASSERT_TRUE(progress.ok()) << progress.status();
  EXPECT_TRUE(progress->ok) << progress->error_message;
  EXPECT_TRUE(absl::StrContains(progress->output, "completed")) << progress->output;
  ASSERT_TRUE(timeout.ok()) << timeout.status();
  EXPECT_TRUE(timeout->timed_out);
  EXPECT_EQ(timeout->error_code, "TIMEOUT") << timeout->error_message;
}

// Credentials per namespace: each namespace's calls run with its own; a namespace without
// any neither sees the server's tools nor can call them. The fake server's `whoami` answers
// the first 16 hex digits of the SHA-256 of what it was given ($FAKE_SECRET, the bearer token).
TEST(McpNamespaceTest, EachNamespaceRunsWithItsOwnCredentialsAndOthersSeeNothing) {
  auto server = std::make_unique<testing::NodeHttpServer>(
      FakeServer(), std::vector<std::string>{"--http={port}", Instance()});
  ASSERT_TRUE(server->up()) << "the fake server did not listen on " << server->port();
  TempWorkspace temp;
  json team = FakeConfig("team");
  team.erase("env");
  team["namespaces"] = {
      {"team-a",
       {{"env", {{"FAKE_SECRET", {{"file", WriteTemp("a.key", "team-a-secret-7f3e\n")}}}}}}},
      {"team-b",
       {{"env", {{"FAKE_SECRET", {{"file", WriteTemp("b.key", "team-b-secret-91c2")}}}}}}}};
  json web = {{"name", "web"},
              {"transport", "http"},
              {"url", server->url()},
              {"namespaces",
               {{"team-a", {{"token_file", WriteTemp("a.token", "team-a-token-0d4b")}}},
                {"team-b", {{"token_file", WriteTemp("b.token", "team-b-token-6e1a")}}}}}};
  json shared = FakeConfig("shared");
  absl::StatusOr<std::unique_ptr<ToolExecutor>> executor = MakeExecutor(temp, {team, web, shared});
  auto call = [&](const std::string& ns, const std::string& tool) {
    ExecuteCall c;
    c.call_id = "c";
    c.workspace = TempWorkspace::kName;
    c.namespace_name = ns;
    c.tool = tool;
    return (*executor)->Execute(c);
  };
  auto names = [&](const std::string& ns) {
    std::set<std::string> out;
    for (const ToolSpec& spec : (*executor)->ListTools(ns)) out.insert(spec.name);
    return out;
  };
  std::vector<absl::StatusOr<ToolResult>> results;
  if (executor.ok()) {
    for (const char* ns : {"team-a", "team-b"}) {
      for (const char* tool : {"team__whoami", "web__whoami", "team__env"}) {
        results.push_back(call(ns, tool));
      }
    }
  }
  server.reset();
  ASSERT_TRUE(executor.ok()) << executor.status();
  ASSERT_EQ(results.size(), 6u);
  for (const auto& result : results) ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(results[0]->output, "credential sha256:809030eb8162deb2");  // team-a-secret-7f3e
  EXPECT_EQ(results[1]->output, "credential sha256:872f686b5fdd97d3");  // team-a-token-0d4b
  EXPECT_EQ(results[2]->output, "secret is [redacted]");
  EXPECT_EQ(results[3]->output, "credential sha256:6c4f61e8c0b17492");  // team-b-secret-91c2
  EXPECT_EQ(results[4]->output, "credential sha256:85adab1437389a02");  // team-b-token-6e1a
  EXPECT_EQ(results[5]->output, "secret is [redacted]");

  // Listing: the namespaces with credentials see the servers' tools; the others do not.
  EXPECT_EQ(names("team-a").count("team__whoami"), 1u);
  EXPECT_EQ(names("team-b").count("web__whoami"), 1u);
  for (const char* ns : {"team-c", "", "default"}) {
    const std::set<std::string> seen = names(ns);
    EXPECT_EQ(seen.count("team__whoami") + seen.count("web__whoami") + seen.count("team__echo"), 0u)
        << ns;
    EXPECT_EQ(seen.count("shared__whoami"), 1u) << ns;  // a server without `namespaces`
    EXPECT_EQ(seen.count("read_file"), 1u) << ns;
  }
  // Calling: another namespace's tool is answered word for word as a tool that does not exist.
  absl::StatusOr<ToolResult> hidden = call("team-c", "team__whoami");
  absl::StatusOr<ToolResult> unknown = call("team-c", "team__whoamx");
  EXPECT_EQ(hidden.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(std::string(hidden.status().message()),
            absl::StrReplaceAll(unknown.status().message(), {{"whoamx", "whoami"}}));
  EXPECT_FALSE(absl::StrContains(hidden.status().message(), "team__echo"));  // not listed
  EXPECT_FALSE(absl::StrContains(hidden.status().message(), "web__"));
  EXPECT_EQ(call("", "web__whoami").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(call("Team_A", "shared__whoami").status().code(),
            absl::StatusCode::kInvalidArgument);  // a malformed namespace
}

TEST(McpNamespaceTest, ANamespaceWhoseCredentialsCannotListRefusesTheStart) {
  TempWorkspace temp;
  json web = {{"name", "web"},
              {"transport", "http"},
              {"url", absl::StrCat("http://127.0.0.1:", testing::FreeLoopbackPort(), "/mcp")},
              {"startup_timeout_seconds", 5},
              {"namespaces", {{"team-b", {{"token_file", WriteTemp("b.token", kSecret)}}}}}};
  absl::StatusOr<std::unique_ptr<ToolExecutor>> executor = MakeExecutor(temp, {web});
  ASSERT_FALSE(executor.ok());
  EXPECT_TRUE(absl::StrContains(executor.status().message(), "MCP server \"web\""))
      << executor.status();
  EXPECT_TRUE(absl::StrContains(executor.status().message(), "with namespace team-b's credentials"))
      << executor.status();
  EXPECT_FALSE(absl::StrContains(executor.status().message(), kSecret));
}

}  // namespace
}  // namespace rein
