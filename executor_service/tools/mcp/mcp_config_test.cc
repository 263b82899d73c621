// Tests of the --mcp_config parser: what is accepted, and that every problem names its field.
#include "executor_service/tools/mcp/mcp_config.h"

#include <fstream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace rein {
namespace {

std::string TempFile(const std::string& name, const std::string& content) {
  const std::string path = absl::StrCat(std::getenv("TEST_TMPDIR"), "/", name);
  std::ofstream(path) << content;
  return path;
}

void ExpectError(const std::string& text, const std::string& fragment) {
  absl::StatusOr<McpConfig> config = ParseMcpConfig(text, "/etc/rein");
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument) << text;
  EXPECT_TRUE(absl::StrContains(config.status().message(), fragment))
      << config.status() << " lacks " << fragment;
}

TEST(McpConfigTest, FullStdioAndHttpServersParse) {
  const std::string secret = TempFile("env_secret", "value-from-file\n");
  const std::string token = TempFile("token", "the-token");
  absl::StatusOr<McpConfig> config =
      ParseMcpConfig(absl::StrCat(R"({"servers": [
        {"name": "fs", "transport": "stdio", "command": ["node", "server.js"],
         "env": {"A": "literal", "B": {"file": ")",
                                  secret, R"("}},
         "read_only_paths": ["lib", "/opt/x"], "network": true,
         "tools": {"write": {"mutating": false}}, "trust_read_only_hint": true,
         "timeout_seconds": 5},
        {"name": "web", "transport": "http", "url": "https://example.com/mcp",
         "token_file": ")",
                                  token, R"(", "startup_timeout_seconds": 2.5}]})"),
                     "/etc/rein");
  ASSERT_TRUE(config.ok()) << config.status();
  ASSERT_EQ(config->servers.size(), 2u);
  const McpServerConfig& fs = config->servers[0];
  EXPECT_EQ(fs.command, (std::vector<std::string>{"node", "server.js"}));
  EXPECT_EQ(fs.env[0], (std::pair<std::string, std::string>{"A", "literal"}));
  EXPECT_EQ(fs.env[1], (std::pair<std::string, std::string>{"B", "value-from-file"}));
  EXPECT_EQ(fs.read_only_paths, (std::vector<std::string>{"/etc/rein/lib", "/opt/x"}));
  EXPECT_TRUE(fs.network);
  EXPECT_TRUE(fs.trust_read_only_hint);
  EXPECT_FALSE(config->servers[1].trust_read_only_hint);  // readOnlyHint is not trusted
  EXPECT_FALSE(fs.mutating.at("write"));
  EXPECT_EQ(fs.timeout, absl::Seconds(5));
  EXPECT_EQ(fs.secrets, (std::vector<std::string>{"value-from-file"}));
  const McpServerConfig& web = config->servers[1];
  EXPECT_EQ(web.transport, McpServerConfig::Transport::kHttp);
  EXPECT_EQ(web.token, "the-token");
  EXPECT_EQ(web.startup_timeout, absl::Milliseconds(2500));
  EXPECT_EQ(RedactSecrets(web, "Bearer the-token!"), "Bearer [redacted]!");
}

TEST(McpConfigTest, ProblemsNameTheField) {
  ExpectError("[", "not valid JSON");
  ExpectError(R"({"servers": {}})", "servers: must be an array");
  ExpectError(R"({"servers": [], "extra": 1})", "extra: unknown key");
  ExpectError(R"({"servers": [{"name": "a__b", "transport": "stdio", "command": ["x"]}]})",
              "servers[0].name");
  ExpectError(R"({"servers": [{"name": "a", "transport": "ftp"}]})", "servers[0] (a).transport");
  ExpectError(R"({"servers": [{"name": "a", "transport": "stdio", "command": []}]})",
              "servers[0] (a).command");
  ExpectError(R"({"servers": [{"name": "a", "transport": "stdio", "command": ["x"],
                  "url": "http://x"}]})",
              "servers[0] (a).url: is for http servers only");
  ExpectError(R"({"servers": [{"name": "a", "transport": "http", "url": "file:///etc/passwd"}]})",
              "servers[0] (a).url: must be an http");
  ExpectError(R"({"servers": [{"name": "a", "transport": "http", "url": "http://x",
                  "token_file": "/nonexistent/token"}]})",
              "servers[0] (a).token_file: cannot read /nonexistent/token");
  ExpectError(R"({"servers": [{"name": "a", "transport": "stdio", "command": ["x"],
                  "tools": {"t": {"mutating": "yes"}}}]})",
              "servers[0] (a).tools.t");
  ExpectError(R"({"servers": [{"name": "a", "transport": "stdio", "command": ["x"],
                  "trust_read_only_hint": "yes"}]})",
              "servers[0] (a).trust_read_only_hint: must be a boolean");
  ExpectError(std::string(100, '[') + std::string(100, ']'), "(file): nested deeper than 64");
  ExpectError(R"({"servers": [{"name": "a", "transport": "stdio", "command": ["x"],
                  "timeout_seconds": 0}]})",
              "servers[0] (a).timeout_seconds");
  ExpectError(R"({"servers": [{"name": "a", "transport": "stdio", "command": ["x"]},
                              {"name": "a", "transport": "stdio", "command": ["y"]}]})",
              "servers[1].name: \"a\" is used twice");
}

TEST(McpConfigTest, SecretFileContentIsNeverInAnError) {
  const std::string two_lines = TempFile("two_lines", "secret-line-one\nsecret-line-two\n");
  absl::StatusOr<McpConfig> config = ParseMcpConfig(
      absl::StrCat(R"({"servers": [{"name": "a", "transport": "stdio", "command": ["x"],
                      "env": {"K": {"file": ")",
                   two_lines, R"("}}}]})"),
      "/");
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(config.status().message(), two_lines));
  EXPECT_FALSE(absl::StrContains(config.status().message(), "secret-line"));
}

TEST(McpConfigTest, LoadNamesThePath) {
  absl::StatusOr<McpConfig> config = LoadMcpConfig("/nonexistent/mcp.json");
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(config.status().message(), "/nonexistent/mcp.json"));
}

}  // namespace
}  // namespace rein
