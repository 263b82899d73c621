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

TEST(McpConfigTest, CredentialsPerNamespaceParseAndAreChosenByNamespace) {
  const std::string key_a = TempFile("key_a", "key-of-team-a\n");
  const std::string key_b = TempFile("key_b", "key-of-team-b");
  const std::string token_a = TempFile("token_a", "token-of-team-a");
  absl::StatusOr<McpConfig> config = ParseMcpConfig(absl::StrCat(R"({"servers": [
        {"name": "fs", "transport": "stdio", "command": ["x"], "env": {"LEVEL": "warn"},
         "namespaces": {"team-a": {"env": {"KEY": {"file": ")",
                                                                 key_a, R"("}, "MODE": "a"}},
                        "team-b": {"env": {"KEY": {"file": ")",
                                                                 key_b, R"("}}},
                        "team-c": {}}},
        {"name": "web", "transport": "http", "url": "https://example.com/mcp",
         "namespaces": {"team-a": {"token_file": ")",
                                                                 token_a, R"("}, "default": {}}},
        {"name": "shared", "transport": "stdio", "command": ["y"], "env": {"LEVEL": "info"}}]})"),
                                                    "/etc/rein");
  ASSERT_TRUE(config.ok()) << config.status();
  const McpServerConfig& fs = config->servers[0];
  ASSERT_EQ(fs.namespaces.size(), 3u);
  std::optional<McpCredentials> a = CredentialsFor(fs, "team-a");
  ASSERT_TRUE(a.has_value());
  using Env = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(a->env, (Env{{"LEVEL", "warn"}, {"KEY", "key-of-team-a"}, {"MODE", "a"}}));
  std::optional<McpCredentials> b = CredentialsFor(fs, "team-b");
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->env, (Env{{"LEVEL", "warn"}, {"KEY", "key-of-team-b"}}));
  // An entry without secrets offers the server with the literals only.
  std::optional<McpCredentials> c = CredentialsFor(fs, "team-c");
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->env, (Env{{"LEVEL", "warn"}}));
  // A namespace not listed, and `default` (""), get nothing: the server is not theirs.
  EXPECT_FALSE(CredentialsFor(fs, "team-d").has_value());
  EXPECT_FALSE(CredentialsFor(fs, "").has_value());
  EXPECT_EQ(fs.secrets, (std::vector<std::string>{"key-of-team-a", "key-of-team-b"}));
  EXPECT_EQ(RedactSecrets(fs, "key-of-team-a key-of-team-b"), "[redacted] [redacted]");

  const McpServerConfig& web = config->servers[1];
  EXPECT_EQ(web.token, "");
  ASSERT_TRUE(CredentialsFor(web, "team-a").has_value());
  EXPECT_EQ(CredentialsFor(web, "team-a")->token, "token-of-team-a");
  ASSERT_TRUE(CredentialsFor(web, "").has_value());  // "" is `default`
  EXPECT_EQ(CredentialsFor(web, "default")->token, "");
  EXPECT_FALSE(CredentialsFor(web, "team-b").has_value());

  // A server without `namespaces` is every namespace's, with its own env.
  const McpServerConfig& shared = config->servers[2];
  for (const char* ns : {"", "default", "team-a", "team-z"}) {
    std::optional<McpCredentials> any = CredentialsFor(shared, ns);
    ASSERT_TRUE(any.has_value()) << ns;
    EXPECT_EQ(any->env, (Env{{"LEVEL", "info"}}));
  }
}

TEST(McpConfigTest, BadCredentialsPerNamespaceNameTheKey) {
  const std::string key = TempFile("key", "k");
  const std::string stdio =
      R"({"servers": [{"name": "a", "transport": "stdio", "command": ["x"], )";
  const std::string http =
      R"({"servers": [{"name": "w", "transport": "http", "url": "http://x/mcp", )";
  ExpectError(stdio + R"("namespaces": {"Team_A": {}}}]})",
              "servers[0] (a).namespaces.Team_A: must be lower-case letters");
  ExpectError(stdio + R"("namespaces": {"-a": {}}}]})",
              "servers[0] (a).namespaces.-a: must start and end with a letter or digit");
  ExpectError(stdio + R"("namespaces": []}]})",
              "servers[0] (a).namespaces: must be an object with a namespace per key");
  ExpectError(stdio + R"("namespaces": {}}]})", "servers[0] (a).namespaces: must be an object");
  ExpectError(stdio + R"("namespaces": {"team-a": "k"}}]})",
              "servers[0] (a).namespaces.team-a: must be an object");
  ExpectError(stdio + R"("namespaces": {"team-a": {"secrets": {}}}}]})",
              "servers[0] (a).namespaces.team-a.secrets: unknown key (known: env)");
  ExpectError(stdio + R"("namespaces": {"team-a": {"token_file": "t"}}}]})",
              "servers[0] (a).namespaces.team-a.token_file: unknown key (known: env)");
  ExpectError(http + R"("namespaces": {"team-a": {"env": {}}}}]})",
              "servers[0] (w).namespaces.team-a.env: unknown key (known: token_file)");
  ExpectError(stdio + R"("namespaces": {"team-a": {"env": {"K": {"file": "/nonexistent/k"}}}}}]})",
              "servers[0] (a).namespaces.team-a.env.K: cannot read /nonexistent/k");
  ExpectError(http + R"("namespaces": {"team-a": {"token_file": "/nonexistent/t"}}}]})",
              "servers[0] (w).namespaces.team-a.token_file: cannot read /nonexistent/t");
  ExpectError(http + R"("namespaces": {"team-a": {"token_file": 3}}}]})",
              "servers[0] (w).namespaces.team-a.token_file: must be a path");
  ExpectError(stdio + R"("env": {"K": "x"}, "namespaces": {"team-a": {"env": {"K": "y"}}}}]})",
              "servers[0] (a).namespaces.team-a.env.K: is also set in the server's env");
  // A server's own secret would be shared by every namespace it is offered to.
  ExpectError(
      stdio + R"("env": {"K": {"file": ")" + key + R"("}}, "namespaces": {"team-a": {}}}]})",
      "servers[0] (a).env: a server with \"namespaces\" takes its secrets per namespace");
  ExpectError(http + R"("token_file": ")" + key + R"(", "namespaces": {"team-a": {}}}]})",
              "servers[0] (w).token_file: a server with \"namespaces\" takes its secrets");
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
