// Tests of MCP tools against a hostile server (executor_service/tools/mcp/testing/
// hostile_mcp_server.js) through the ToolExecutor, over stdio in the real sandbox and over
// streamable HTTP: a reply or an inputSchema nested 100,000 deep, a 64 MiB message and an
// endless stream of notifications are each refused naming the bound, the executor's memory
// stays bounded and its next call works; a tool's readOnlyHint is shown, not trusted, unless
// the config opts in.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "executor_service/testing/temp_workspace.h"
#include "executor_service/tool_executor.h"
#include "executor_service/tools/mcp/mcp_client.h"
#include "executor_service/tools/mcp/testing/node_http_server.h"
#include "gtest/gtest.h"

namespace rein {
namespace {

using nlohmann::json;
using ::rein::testing::TempWorkspace;

std::string RealPath(const std::string& path) {
  char* real = realpath(path.c_str(), nullptr);
  std::string out = real != nullptr ? real : path;
  free(real);
  return out;
}
std::string HostileServer() {
  return RealPath(absl::StrCat(std::getenv("TEST_SRCDIR"),
                               "/rein/executor_service/tools/mcp/testing/hostile_mcp_server.js"));
}
std::string Instance() { return absl::StrCat("--instance=mcp_hostile_test-", getpid()); }

std::string WriteTemp(const std::string& name, const std::string& content) {
  const std::string path = absl::StrCat(std::getenv("TEST_TMPDIR"), "/", name);
  std::ofstream(path) << content;
  return path;
}

// This process's resident memory in KiB (VmRSS of /proc/self/status).
int64_t RssKiB() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (absl::StartsWith(line, "VmRSS:")) {
      int64_t kib = 0;
      std::istringstream(line.substr(6)) >> kib;
      return kib;
    }
  }
  return -1;
}

json StdioConfig(const std::string& name) {
  const std::string script = HostileServer();
  return {{"name", name},
          {"transport", "stdio"},
          {"command", {"node", script, Instance()}},
          {"read_only_paths", {script.substr(0, script.rfind('/'))}},
          {"timeout_seconds", 30}};
}

absl::StatusOr<std::unique_ptr<ToolExecutor>> MakeExecutor(const TempWorkspace& temp,
                                                           const std::vector<json>& servers) {
  ExecutorOptions options;
  options.workspace_root = temp.root();
  options.executor_id = "test-executor";
  options.mcp_config = WriteTemp("mcp.json", json{{"servers", servers}}.dump());
  return ToolExecutor::Create(options);
}

ToolResult Call(ToolExecutor& executor, const std::string& tool,
                absl::Duration timeout = absl::ZeroDuration()) {
  static int calls = 0;
  ExecuteCall call;
  call.call_id = absl::StrCat("call-", ++calls);
  call.workspace = TempWorkspace::kName;
  call.tool = tool;
  call.args_json = "{}";
  call.timeout = timeout;
  absl::StatusOr<ToolResult> result = executor.Execute(call);
  EXPECT_TRUE(result.ok()) << result.status();
  return result.ok() ? *result : ToolResult::Failure(result.status());
}

const ToolSpec* Find(const ToolExecutor& executor, const std::string& name) {
  static std::vector<ToolSpec> specs;
  specs = executor.ListTools();
  for (const ToolSpec& spec : specs) {
    if (spec.name == name) return &spec;
  }
  return nullptr;
}

// The hostile server over streamable HTTP on a free port, killed on destruction.
class HttpServer {
 public:
  explicit HttpServer(const std::string& extra_arg = "")
      : server_(HostileServer(), extra_arg.empty()
                                     ? std::vector<std::string>{"--http={port}"}
                                     : std::vector<std::string>{"--http={port}", extra_arg}) {}
  bool up() const { return server_.up(); }
  json Config(const std::string& name) const {
    return {{"name", name}, {"transport", "http"}, {"url", server_.url()}, {"timeout_seconds", 20}};
  }

 private:
  testing::NodeHttpServer server_;
};

void ExpectRefused(const ToolResult& result, const std::string& code, const std::string& bound) {
  EXPECT_FALSE(result.ok);
  EXPECT_EQ(result.error_code, code) << result.error_message;
  EXPECT_TRUE(absl::StrContains(result.error_message, "MCP server \"hostile\""))
      << result.error_message;
  EXPECT_TRUE(absl::StrContains(result.error_message, bound)) << result.error_message;
}

TEST(McpHostileTest, StdioAttacksAreRefusedAndTheNextCallWorks) {
  TempWorkspace temp;
  json config = StdioConfig("hostile");
  config["tools"] = {{"peek", {{"mutating", false}}}};
  absl::StatusOr<std::unique_ptr<ToolExecutor>> executor = MakeExecutor(temp, {config});
  ASSERT_TRUE(executor.ok()) << executor.status();
  ToolExecutor& ex = **executor;

  ExpectRefused(Call(ex, "hostile__deep_reply"), "MCP_PROTOCOL_ERROR",
                absl::StrCat("nested deeper than ", kMaxMcpMessageDepth, " levels"));
  ExpectRefused(Call(ex, "hostile__huge"), "OUTPUT_TOO_LARGE", "the cap is");
  ExpectRefused(Call(ex, "hostile__flood"), "OUTPUT_TOO_LARGE",
                absl::StrCat("more than ", kMaxMcpMessagesPerRequest, " messages"));
  // A later tools/list (every call checks the tool) with a deep inputSchema.
  temp.WriteFile(".deep_schema", "");
  ExpectRefused(Call(ex, "hostile__peek"), "MCP_PROTOCOL_ERROR",
                absl::StrCat("nested deeper than ", kMaxMcpMessageDepth, " levels"));
  std::remove(temp.Path(".deep_schema").c_str());
  ToolResult peek = Call(ex, "hostile__peek");
  EXPECT_TRUE(peek.ok) << peek.error_message;
  EXPECT_EQ(peek.output, "peeked");
}

TEST(McpHostileTest, HttpFloodIsCutWithMemoryBoundedAndOtherAttacksRefused) {
  HttpServer server;
  ASSERT_TRUE(server.up());
  TempWorkspace temp;
  absl::StatusOr<std::unique_ptr<ToolExecutor>> executor =
      MakeExecutor(temp, {server.Config("hostile")});
  ASSERT_TRUE(executor.ok()) << executor.status();
  ToolExecutor& ex = **executor;

  const int64_t before = RssKiB();
  const absl::Time start = absl::Now();
  ToolResult flood = Call(ex, "hostile__flood", absl::Seconds(15));
  const absl::Duration took = absl::Now() - start;
  const int64_t after = RssKiB();
  ExpectRefused(flood, "OUTPUT_TOO_LARGE", "(the cap per request); disconnected");
  EXPECT_FALSE(flood.timed_out);  // cut at the bound, long before the deadline
  EXPECT_LT(took, absl::Seconds(10));
  EXPECT_LT(after - before, 64 << 10) << "VmRSS grew from " << before << " to " << after << " KiB";

  ExpectRefused(Call(ex, "hostile__deep_reply"), "MCP_PROTOCOL_ERROR",
                absl::StrCat("nested deeper than ", kMaxMcpMessageDepth, " levels"));
  ExpectRefused(Call(ex, "hostile__huge"), "OUTPUT_TOO_LARGE", "the cap is");
  ToolResult peek = Call(ex, "hostile__peek");
  EXPECT_TRUE(peek.ok) << peek.error_message;
}

TEST(McpHostileTest, DeepInputSchemaIsRefusedOnALaterListingAndAtStart) {
  const std::string bound = absl::StrCat("nested deeper than ", kMaxMcpMessageDepth, " levels");
  HttpServer later("--deep-schema-after=1");
  HttpServer at_start("--deep-schema-after=0");
  ASSERT_TRUE(later.up() && at_start.up());
  TempWorkspace temp;
  absl::StatusOr<std::unique_ptr<ToolExecutor>> executor =
      MakeExecutor(temp, {later.Config("hostile")});
  ASSERT_TRUE(executor.ok()) << executor.status();
  for (int i = 0; i < 2; ++i) {
    ExpectRefused(Call(**executor, "hostile__peek"), "MCP_PROTOCOL_ERROR", bound);
  }
  // At start the executor refuses to start half-configured, naming the server and the bound.
  absl::StatusOr<std::unique_ptr<ToolExecutor>> refused =
      MakeExecutor(temp, {at_start.Config("hostile")});
  EXPECT_FALSE(refused.ok());
  EXPECT_TRUE(absl::StrContains(refused.status().message(), "MCP server \"hostile\""))
      << refused.status();
  EXPECT_TRUE(absl::StrContains(refused.status().message(), bound)) << refused.status();
}

TEST(McpHostileTest, ReadOnlyHintIsShownNotTrustedUnlessTheConfigOptsIn) {
  TempWorkspace temp;
  json trusting = StdioConfig("trusting");
  trusting["trust_read_only_hint"] = true;
  json overridden = StdioConfig("overridden");
  overridden["trust_read_only_hint"] = true;
  overridden["tools"] = {{"peek", {{"mutating", true}}}};
  absl::StatusOr<std::unique_ptr<ToolExecutor>> executor =
      MakeExecutor(temp, {StdioConfig("hostile"), trusting, overridden});
  ASSERT_TRUE(executor.ok()) << executor.status();
  const ToolSpec* by_default = Find(**executor, "hostile__peek");
  ASSERT_NE(by_default, nullptr);
  EXPECT_TRUE(by_default->mutating);
  EXPECT_TRUE(absl::StrContains(by_default->description, "readOnlyHint"))
      << by_default->description;
  EXPECT_TRUE(absl::StrContains(by_default->description, "treated as mutating"));
  EXPECT_TRUE(Find(**executor, "hostile__deep_reply")->mutating);  // no hint: mutating
  const ToolSpec* trusted = Find(**executor, "trusting__peek");
  ASSERT_NE(trusted, nullptr);
  EXPECT_FALSE(trusted->mutating);
  EXPECT_TRUE(absl::StrContains(trusted->description, "trusted by the executor's config"));
  EXPECT_TRUE(Find(**executor, "trusting__huge")->mutating);    // no hint: still mutating
  EXPECT_TRUE(Find(**executor, "overridden__peek")->mutating);  // the per-tool key wins
  // Mutating by default, and it runs like any mutating tool.
  ToolResult peek = Call(**executor, "hostile__peek");
  EXPECT_TRUE(peek.ok) << peek.error_message;
}

}  // namespace
}  // namespace rein
