// Declared tools run for real (bubblewrap, through ToolExecutor with --tools_dir): values reach
// the program as literal arguments, a missing program is a clear failure, and the sandbox
// holds as it does for run_command (no writes outside the workspace, no network, the timeout,
// the output cap and --max_concurrent).
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "executor_service/testing/loopback_listener.h"
#include "executor_service/testing/temp_workspace.h"
#include "executor_service/tool_executor.h"
#include "gtest/gtest.h"

namespace rein {
namespace {

using nlohmann::json;
using ::rein::testing::TempWorkspace;

json Tool(const std::string& name, bool mutating, json properties, json required, json argv) {
  return {{"name", name},
          {"description", absl::StrCat("test tool ", name)},
          {"mutating", mutating},
          {"input_schema",
           {{"type", "object"},
            {"additionalProperties", false},
            {"properties", std::move(properties)},
            {"required", std::move(required)}}},
          {"argv", std::move(argv)}};
}

std::string ReadHostFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class DeclaredToolSandboxTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tools_dir_ = absl::StrCat(temp_.root(), "/../tools-",
                              ::testing::UnitTest::GetInstance()->current_test_info()->name());
    ASSERT_EQ(mkdir(tools_dir_.c_str(), 0755), 0);
    const json text = {{"type", "string"}};
    Write(Tool("show_args", false, {{"a", text}, {"b", text}}, {"a"},
               {"printf", "[%s]\\n", "{a}", {{"template", "{b}"}, {"optional", true}}}));
    Write(Tool("append_line", true, {{"line", text}, {"file", text}}, {"line", "file"},
               {"/bin/sh", "-c", "printf '%s\\n' \"$1\" >> \"$2\"", "sh", "{line}", "{file}"}));
    Write(Tool("connect", false, {{"port", {{"type", "integer"}}}}, {"port"},
               {"bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/$1 && echo CONNECTED || echo refused",
                "bash", "{port}"}));
    Write(Tool("missing", false, json::object(), json::array(), {"rein-no-such-program"}));
    json sleeper = Tool("sleeper", false, {{"seconds", {{"type", "integer"}}}}, {"seconds"},
                        {"sleep", "{seconds}"});
    sleeper["timeout_seconds"] = 1;
    Write(sleeper);
    Write(Tool("count", false, {{"n", {{"type", "integer"}}}}, {"n"}, {"seq", "{n}"}));
    executor_ = MakeExecutor(SandboxOptions());
  }

  void Write(const json& tool) {
    std::ofstream(absl::StrCat(tools_dir_, "/", tool["name"].get<std::string>(), ".json"))
        << tool.dump(2);
  }

  std::unique_ptr<ToolExecutor> MakeExecutor(SandboxOptions sandbox) {
    ExecutorOptions options;
    options.workspace_root = temp_.root();
    options.sandbox = std::move(sandbox);
    options.tools_dir = tools_dir_;
    absl::StatusOr<std::unique_ptr<ToolExecutor>> executor = ToolExecutor::Create(options);
    EXPECT_TRUE(executor.ok()) << executor.status();
    if (!executor.ok()) return nullptr;
    EXPECT_EQ((*executor)->sandbox().state(), Sandbox::State::kBwrap);
    return *std::move(executor);
  }

  ToolResult Call(const std::string& tool, const json& args, ToolExecutor* executor = nullptr,
                  int64_t max_output_bytes = 0) {
    ExecuteCall call;
    call.call_id = "call-1";
    call.workspace = TempWorkspace::kName;
    call.tool = tool;
    call.args_json = args.dump();
    call.max_output_bytes = max_output_bytes;
    absl::StatusOr<ToolResult> result = (executor ? executor : executor_.get())->Execute(call);
    EXPECT_TRUE(result.ok()) << result.status();
    return result.ok() ? *result : ToolResult::Failure(result.status());
  }

  TempWorkspace temp_;
  std::string tools_dir_;
  std::unique_ptr<ToolExecutor> executor_;
};

TEST_F(DeclaredToolSandboxTest, ListedWithTheirOriginNextToTheBuiltins) {
  bool saw_builtin = false, saw_declared = false;
  for (const ToolSpec& spec : executor_->ListTools()) {
    if (spec.name == "run_command") saw_builtin = spec.origin == "builtin";
    if (spec.name == "append_line") {
      saw_declared = spec.origin == "declared:append_line.json" && spec.mutating;
    }
  }
  EXPECT_TRUE(saw_builtin);
  EXPECT_TRUE(saw_declared);
}

TEST_F(DeclaredToolSandboxTest, InjectionAttemptsArriveAsOneLiteralArgument) {
  for (const std::string value :
       {"x; touch pwned", "$(touch pwned)", "`touch pwned`", "a\nb", "x | tee pwned", "*"}) {
    ToolResult result = Call("show_args", {{"a", value}});
    ASSERT_TRUE(result.ok) << value << ": " << result.error_message;
    EXPECT_EQ(result.output, absl::StrCat("[", value, "]\n"));
  }
  EXPECT_NE(access(temp_.Path("pwned").c_str(), F_OK), 0);
  ToolResult two = Call("show_args", {{"a", "one two"}, {"b", "three"}});
  EXPECT_EQ(two.output, "[one two]\n[three]\n");
  ToolResult flag = Call("show_args", {{"a", "--version"}});
  EXPECT_FALSE(flag.ok);
  EXPECT_EQ(flag.error_code, "INVALID_ARGUMENT");
  EXPECT_EQ(flag.output, "");
  EXPECT_EQ(Call("show_args", {{"a", std::string("a\0b", 3)}}).error_code, "INVALID_ARGUMENT");
  EXPECT_EQ(Call("show_args", {{"a", std::string(140000, 'x')}}).error_code, "INVALID_ARGUMENT");
  // Validated against the declared schema before anything runs.
  EXPECT_EQ(Call("show_args", {{"a", 5}}).error_code, "INVALID_ARGUMENT");
  EXPECT_EQ(Call("show_args", {{"a", "x"}, {"c", "y"}}).error_code, "INVALID_ARGUMENT");
}

TEST_F(DeclaredToolSandboxTest, AMissingProgramIsAFailedCallSayingSo) {
  ToolResult result = Call("missing", json::object());
  EXPECT_FALSE(result.ok);
  EXPECT_EQ(result.error_code, "NOT_FOUND");
  EXPECT_TRUE(
      absl::StrContains(result.error_message, "program \"rein-no-such-program\" is not installed"))
      << result.error_message;
}

TEST_F(DeclaredToolSandboxTest, WritesLandInTheWorkspaceAndNowhereElse) {
  ToolResult result = Call("append_line", {{"line", "hello"}, {"file", "notes.txt"}});
  ASSERT_TRUE(result.ok) << result.error_message << result.output;
  EXPECT_EQ(ReadHostFile(temp_.Path("notes.txt")), "hello\n");
  const std::string outside = ReadHostFile(temp_.root() + "/outside.txt");
  const std::string secret = ReadHostFile(temp_.root() + "/ws2/secret.txt");
  for (const std::string& target :
       std::vector<std::string>{"../outside.txt", "../ws2/secret.txt", "/etc/passwd", "/usr/pwned",
                                temp_.root() + "/outside.txt"}) {
    ToolResult escape = Call("append_line", {{"line", "pwned"}, {"file", target}});
    EXPECT_FALSE(escape.ok) << target << ": " << escape.output;
    EXPECT_EQ(escape.error_code, "NONZERO_EXIT") << target;
  }
  EXPECT_EQ(ReadHostFile(temp_.root() + "/outside.txt"), outside);
  EXPECT_EQ(ReadHostFile(temp_.root() + "/ws2/secret.txt"), secret);
  // /tmp is private to the call.
  const std::string marker = absl::StrCat("/tmp/rein-declared-", getpid());
  EXPECT_TRUE(Call("append_line", {{"line", "x"}, {"file", marker}}).ok);
  EXPECT_NE(access(marker.c_str(), F_OK), 0);
}

TEST_F(DeclaredToolSandboxTest, NetworkIsUnreachable) {
  ::rein::testing::LoopbackListener listener;
  ASSERT_NE(listener.port(), 0);
  ToolResult result = Call("connect", {{"port", listener.port()}});
  EXPECT_FALSE(absl::StrContains(result.output, "CONNECTED")) << result.output;
  EXPECT_TRUE(absl::StrContains(result.output, "refused")) << result.output;
}

TEST_F(DeclaredToolSandboxTest, TheDeclaredTimeoutKillsTheCall) {
  const absl::Time start = absl::Now();
  ToolResult result = Call("sleeper", {{"seconds", 30}});
  EXPECT_TRUE(result.timed_out);
  EXPECT_EQ(result.error_code, "TIMEOUT");
  EXPECT_TRUE(absl::StartsWith(result.error_message, "sleeper: timed out")) << result.error_message;
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
}

TEST_F(DeclaredToolSandboxTest, OutputIsCappedWithAVisibleMarker) {
  ToolResult result = Call("count", {{"n", 100000}}, nullptr, /*max_output_bytes=*/1000);
  EXPECT_TRUE(result.ok) << result.error_message;
  EXPECT_TRUE(result.truncated);
  EXPECT_TRUE(absl::StrContains(result.output, "[output truncated: ")) << result.output;
  EXPECT_LT(result.output.size(), 1200u);
}

TEST_F(DeclaredToolSandboxTest, CallsCountAgainstMaxConcurrent) {
  SandboxOptions options;
  options.max_concurrent = 1;
  std::unique_ptr<ToolExecutor> one = MakeExecutor(options);
  ASSERT_NE(one, nullptr);
  std::thread slow([&] { Call("sleeper", {{"seconds", 3}}, one.get()); });
  absl::SleepFor(absl::Milliseconds(300));
  ExecuteCall call;
  call.call_id = "call-2";
  call.workspace = TempWorkspace::kName;
  call.tool = "show_args";
  call.args_json = R"({"a": "x"})";
  EXPECT_EQ(one->Execute(call).status().code(), absl::StatusCode::kResourceExhausted);
  slow.join();
  EXPECT_TRUE(one->Execute(call).ok());
}

TEST_F(DeclaredToolSandboxTest, UnsandboxedModeSaysSoInEveryDeclaredToolReply) {
  ExecutorOptions options;
  options.workspace_root = temp_.root();
  options.sandbox.mode = SandboxMode::kNone;
  options.sandbox.allow_unsandboxed = true;
  options.tools_dir = tools_dir_;
  absl::StatusOr<std::unique_ptr<ToolExecutor>> bare = ToolExecutor::Create(options);
  ASSERT_TRUE(bare.ok()) << bare.status();
  ToolResult result = Call("show_args", {{"a", "x"}}, bare->get());  // read-only, yet a program
  EXPECT_EQ(result.output, absl::StrCat("[x]\n", kUnsandboxedNote, "\n"));
}

}  // namespace
}  // namespace rein
