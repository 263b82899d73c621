// Tests of the MCP client's protocol logic over a scripted transport (no processes).
#include "executor_service/tools/mcp/mcp_client.h"

#include <deque>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "trace/span_context.h"
#include "trace/tracer.h"

namespace rein {
namespace {

using nlohmann::json;

// Answers each request with what `script` returns (raw lines); records what was sent.
class ScriptedTransport final : public McpTransport {
 public:
  using Script = std::function<std::vector<std::string>(const json& request)>;
  explicit ScriptedTransport(Script script) : script_(std::move(script)) {}

  absl::Status Send(const std::string& message, absl::Time /*deadline*/) override {
    json parsed = json::parse(message);
    sent.push_back(parsed);
    if (parsed.contains("method") && parsed.contains("id")) {
      for (std::string& line : script_(parsed)) queue_.push_back(std::move(line));
    }
    return absl::OkStatus();
  }
  absl::StatusOr<std::string> Receive(absl::Time /*deadline*/) override {
    if (queue_.empty()) return absl::DeadlineExceededError("nothing more");
    std::string next = queue_.front();
    queue_.pop_front();
    return next;
  }
  void SetProtocolVersion(const std::string& version) override { version_set = version; }

  std::vector<json> sent;
  std::string version_set;

 private:
  Script script_;
  std::deque<std::string> queue_;
};

std::string Reply(const json& request, json result) {
  return json{{"jsonrpc", "2.0"}, {"id", request["id"]}, {"result", std::move(result)}}.dump();
}

std::vector<std::string> Initialized(const json& request, const std::string& version) {
  return {Reply(request, {{"protocolVersion", version}, {"serverInfo", {{"name", "s"}}}})};
}

absl::Time Soon() { return absl::Now() + absl::Seconds(5); }

TEST(McpClientTest, InitializeAcceptsThePreviousVersionAndSendsInitialized) {
  ScriptedTransport transport([](const json& r) { return Initialized(r, "2025-03-26"); });
  McpClient client(&transport);
  ASSERT_TRUE(client.Initialize(Soon()).ok());
  EXPECT_EQ(client.protocol_version(), "2025-03-26");
  EXPECT_EQ(transport.version_set, "2025-03-26");
  ASSERT_EQ(transport.sent.size(), 2u);
  EXPECT_EQ(transport.sent[0]["params"]["protocolVersion"], "2025-06-18");
  EXPECT_EQ(transport.sent[1]["method"], "notifications/initialized");
}

TEST(McpClientTest, UnsupportedVersionIsAClearError) {
  ScriptedTransport transport([](const json& r) { return Initialized(r, "1999-01-01"); });
  McpClient client(&transport);
  absl::Status status = client.Initialize(Soon());
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(status.message().find("1999-01-01"), std::string::npos) << status;
  EXPECT_NE(status.message().find("2025-06-18"), std::string::npos) << status;
}

TEST(McpClientTest, ListToolsFollowsCursors) {
  ScriptedTransport transport([](const json& r) -> std::vector<std::string> {
    if (r["method"] == "initialize") return Initialized(r, "2025-06-18");
    const std::string cursor = r["params"].value("cursor", "");
    json tool = {{"name", cursor.empty() ? "a" : "b"},
                 {"inputSchema", {{"type", "object"}}},
                 {"annotations", {{"readOnlyHint", cursor.empty()}}}};
    json result = {{"tools", json::array({tool})}};
    if (cursor.empty()) result["nextCursor"] = "page2";
    return {Reply(r, result)};
  });
  McpClient client(&transport);
  ASSERT_TRUE(client.Initialize(Soon()).ok());
  absl::StatusOr<std::vector<McpToolInfo>> tools = client.ListTools(Soon());
  ASSERT_TRUE(tools.ok()) << tools.status();
  ASSERT_EQ(tools->size(), 2u);
  EXPECT_EQ((*tools)[0].name, "a");
  EXPECT_TRUE((*tools)[0].read_only_hint);
  EXPECT_EQ((*tools)[1].name, "b");
  EXPECT_FALSE((*tools)[1].read_only_hint);
}

TEST(McpClientTest, CallCarriesTheThreadsTraceContextInMeta) {
  ScriptedTransport transport([](const json& r) -> std::vector<std::string> {
    if (r["method"] == "initialize") return Initialized(r, "2025-06-18");
    return {Reply(r, {{"content", json::array()}})};
  });
  McpClient client(&transport);
  ASSERT_TRUE(client.Initialize(Soon()).ok());
  ASSERT_TRUE(client.CallTool("t", json::object(), Soon(), 100).ok());  // no context: none sent
  trace::SpanContext context =
      *trace::ParseTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
  context.tracestate = "rojo=00f067aa0ba902b7";
  {
    trace::ScopedContext scope(context);
    ASSERT_TRUE(client.CallTool("t", json::object(), Soon(), 100).ok());
  }
  std::vector<json> calls;
  for (const json& m : transport.sent) {
    if (m.value("method", "") == "tools/call") calls.push_back(m);
  }
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_FALSE(calls[0]["params"]["_meta"].contains("traceparent"));
  EXPECT_TRUE(calls[0]["params"]["_meta"].contains("progressToken"));
  EXPECT_EQ(calls[1]["params"]["_meta"]["traceparent"],
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
  EXPECT_EQ(calls[1]["params"]["_meta"]["tracestate"], "rojo=00f067aa0ba902b7");
}

TEST(McpClientTest, CallAnswersPingRefusesSamplingAndIgnoresUnknownIds) {
  ScriptedTransport transport([](const json& r) -> std::vector<std::string> {
    if (r["method"] == "initialize") return Initialized(r, "2025-06-18");
    return {R"({"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}})",
            R"({"jsonrpc":"2.0","id":424242,"result":{}})",
            R"({"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{}})",
            R"({"jsonrpc":"2.0","id":"s2","method":"ping"})",
            R"({"jsonrpc":"2.0","method":"notifications/tools/list_changed"})",
            Reply(r, {{"content", json::array({{{"type", "text"}, {"text", "hello"}}})},
                      {"structuredContent", {{"t", 1}}}})};
  });
  McpClient client(&transport);
  ASSERT_TRUE(client.Initialize(Soon()).ok());
  absl::StatusOr<McpCallResult> result = client.CallTool("t", json::object(), Soon(), 100);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->text, "hello");
  EXPECT_FALSE(result->is_error);
  EXPECT_EQ(result->structured, json({{"t", 1}}));
  EXPECT_EQ(result->progress_notifications, 1);
  EXPECT_EQ(client.unknown_replies(), 1);
  EXPECT_TRUE(client.tools_changed());
  bool refused = false, ponged = false;
  for (const json& m : transport.sent) {
    if (m.value("id", json()) == "s1")
      refused = m.contains("error") && m["error"]["code"] == -32601;
    if (m.value("id", json()) == "s2") ponged = m.contains("result");
  }
  EXPECT_TRUE(refused);
  EXPECT_TRUE(ponged);
}

TEST(McpClientTest, IsErrorIsAResultAndTextIsCapped) {
  ScriptedTransport transport([](const json& r) -> std::vector<std::string> {
    if (r["method"] == "initialize") return Initialized(r, "2025-06-18");
    return {Reply(r, {{"isError", true},
                      {"content", json::array({{{"type", "text"}, {"text", "0123456789"}}})}})};
  });
  McpClient client(&transport);
  ASSERT_TRUE(client.Initialize(Soon()).ok());
  absl::StatusOr<McpCallResult> result = client.CallTool("t", json::object(), Soon(), 4);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->is_error);
  EXPECT_EQ(result->text, "0123");
  EXPECT_TRUE(result->truncated);
}

TEST(McpClientTest, TimeoutSendsCancelled) {
  ScriptedTransport transport([](const json& r) -> std::vector<std::string> {
    if (r["method"] == "initialize") return Initialized(r, "2025-06-18");
    return {};  // never answers
  });
  McpClient client(&transport);
  ASSERT_TRUE(client.Initialize(Soon()).ok());
  absl::StatusOr<McpCallResult> result = client.CallTool("t", json::object(), Soon(), 100);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kDeadlineExceeded);
  const json& last = transport.sent.back();
  EXPECT_EQ(last["method"], "notifications/cancelled");
  EXPECT_EQ(last["params"]["requestId"], transport.sent[transport.sent.size() - 2]["id"]);
}

TEST(McpClientTest, BatchedMessagesAreHandledOneByOne) {
  ScriptedTransport transport([](const json& r) -> std::vector<std::string> {
    if (r["method"] == "initialize") return Initialized(r, "2025-03-26");
    json batch = json::array({{{"jsonrpc", "2.0"}, {"id", "p"}, {"method", "ping"}},
                              json::parse(Reply(r, {{"content", json::array()}}))});
    return {batch.dump()};
  });
  McpClient client(&transport);
  ASSERT_TRUE(client.Initialize(Soon()).ok());
  absl::StatusOr<McpCallResult> result = client.CallTool("t", json::object(), Soon(), 100);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(transport.sent.back()["id"], "p");  // the ping was answered
}

TEST(McpClientTest, MalformedMessageIsAnError) {
  ScriptedTransport transport([](const json& r) -> std::vector<std::string> {
    if (r["method"] == "initialize") return Initialized(r, "2025-06-18");
    return {"{not json"};
  });
  McpClient client(&transport);
  ASSERT_TRUE(client.Initialize(Soon()).ok());
  absl::StatusOr<McpCallResult> result = client.CallTool("t", json::object(), Soon(), 100);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInternal);
  EXPECT_NE(result.status().message().find("the server's message: not valid JSON"),
            std::string::npos)
      << result.status();
}

TEST(McpClientTest, ServerErrorIsUnknownWithItsCode) {
  ScriptedTransport transport([](const json& r) -> std::vector<std::string> {
    if (r["method"] == "initialize") return Initialized(r, "2025-06-18");
    return {
        json{{"jsonrpc", "2.0"}, {"id", r["id"]}, {"error", {{"code", -32602}, {"message", "bad"}}}}
            .dump()};
  });
  McpClient client(&transport);
  ASSERT_TRUE(client.Initialize(Soon()).ok());
  absl::StatusOr<McpCallResult> result = client.CallTool("t", json::object(), Soon(), 100);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kUnknown);
  EXPECT_NE(result.status().message().find("-32602"), std::string::npos);
}

std::string Deep(int levels) { return std::string(levels, '[') + std::string(levels, ']'); }

// Initializes a client over `transport`, then calls tool "t".
absl::StatusOr<McpCallResult> InitializeAndCall(ScriptedTransport& transport) {
  McpClient client(&transport);
  absl::Status initialized = client.Initialize(Soon());
  if (!initialized.ok()) return initialized;
  return client.CallTool("t", json::object(), Soon(), 100);
}

TEST(McpClientTest, DeepReplyIsRefusedNamingTheBound) {
  ScriptedTransport transport([](const json& r) -> std::vector<std::string> {
    if (r["method"] == "initialize") return Initialized(r, "2025-06-18");
    return {absl::StrCat(R"({"jsonrpc": "2.0", "id": )", r["id"].dump(),
                         R"(, "result": {"content": [], "structuredContent": {"a": )", Deep(100000),
                         "}}}")};
  });
  absl::StatusOr<McpCallResult> result = InitializeAndCall(transport);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInternal);
  EXPECT_EQ(result.status().message(), "the server's message: nested deeper than 64 levels");
}

TEST(McpClientTest, ReplyAtTheDepthBoundIsAccepted) {
  // The envelope takes 3 levels: {"result": {"structuredContent": {"a": ...}}}.
  ScriptedTransport transport([](const json& r) -> std::vector<std::string> {
    if (r["method"] == "initialize") return Initialized(r, "2025-06-18");
    return {absl::StrCat(R"({"jsonrpc": "2.0", "id": )", r["id"].dump(),
                         R"(, "result": {"structuredContent": {"a": )",
                         Deep(kMaxMcpMessageDepth - 3), "}}}")};
  });
  absl::StatusOr<McpCallResult> result = InitializeAndCall(transport);
  EXPECT_TRUE(result.ok()) << result.status();
}

TEST(McpClientTest, DeepBatchAndDeepInputSchemaAreRefused) {
  ScriptedTransport transport([](const json& r) -> std::vector<std::string> {
    if (r["method"] == "initialize") return Initialized(r, "2025-06-18");
    if (r["method"] == "tools/list") {
      return {absl::StrCat(R"({"jsonrpc": "2.0", "id": )", r["id"].dump(),
                           R"(, "result": {"tools": [{"name": "t", "inputSchema": {"x": )",
                           Deep(100000), "}}]}}")};
    }
    return {absl::StrCat("[", Deep(100000), "]")};
  });
  McpClient client(&transport);
  ASSERT_TRUE(client.Initialize(Soon()).ok());
  absl::StatusOr<std::vector<McpToolInfo>> tools = client.ListTools(Soon());
  EXPECT_EQ(tools.status().code(), absl::StatusCode::kInternal);
  EXPECT_EQ(tools.status().message(),
            "tools/list: the server's message: nested deeper than 64 levels");
  absl::StatusOr<McpCallResult> batch = client.CallTool("t", json::object(), Soon(), 100);
  EXPECT_EQ(batch.status().code(), absl::StatusCode::kInternal);
  EXPECT_EQ(batch.status().message(), "the server's message: nested deeper than 64 levels");
}

TEST(McpClientTest, EndlessNotificationsFailTheRequestAtTheCap) {
  ScriptedTransport transport([](const json& r) -> std::vector<std::string> {
    if (r["method"] == "initialize") return Initialized(r, "2025-06-18");
    const std::string note = R"({"jsonrpc": "2.0", "method": "notifications/message"})";
    std::vector<std::string> flood(kMaxMcpMessagesPerRequest + 1, note);
    flood.push_back(Reply(r, {{"content", json::array()}}));
    return flood;
  });
  absl::StatusOr<McpCallResult> result = InitializeAndCall(transport);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(result.status().message(),
            absl::StrCat("the server sent more than ", kMaxMcpMessagesPerRequest,
                         " messages without answering tools/call (the cap per request)"));
}

}  // namespace
}  // namespace rein
