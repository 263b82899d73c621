// The --mcp_config file: which MCP servers the executor offers tools from, and how.
#ifndef REIN_EXECUTOR_SERVICE_MCP_MCP_CONFIG_H_
#define REIN_EXECUTOR_SERVICE_MCP_MCP_CONFIG_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace rein {

// What a server runs with for one namespace's calls (docs/TOOLS.md, "Credentials per
// namespace"). Secrets: never logged, shown or returned.
struct McpCredentials {
  // stdio: NAME -> value, set in the server's environment.
  std::vector<std::pair<std::string, std::string>> env;
  std::string token;  // http: the bearer token ("" = none)
};

// One MCP server (see docs/TOOLS.md for the file format).
struct McpServerConfig {
  enum class Transport { kStdio, kHttp };
  std::string name;  // ^[a-zA-Z0-9-]{1,32}$: the prefix of its tools' names
  Transport transport = Transport::kStdio;
  // stdio: the server's command, started in the sandbox with the call's workspace at
  // /workspace (its working directory).
  std::vector<std::string> command;
  // NAME -> value, for every namespace's calls; values read from files are secrets (see
  // `secrets`). With `namespaces`, literals only.
  std::vector<std::pair<std::string, std::string>> env;
  std::vector<std::string> read_only_paths;  // host paths the server reads (its installation)
  bool network = false;                      // stdio: keep the host's network
  // http: the endpoint, and the bearer token read from token_file ("" = none; always "" with
  // `namespaces`).
  std::string url;
  std::string token;
  // Credentials per namespace (the file's `namespaces`). Empty: the server is offered to every
  // namespace with `env` and `token`. Otherwise it is offered to the namespaces named here
  // only, each with its own credentials (added to the literals of `env`).
  std::map<std::string, McpCredentials> namespaces;
  // Per tool (the server's own name): true/false, whatever the server says.
  std::map<std::string, bool> mutating;
  // A tool the config does not name is mutating, whatever its readOnlyHint (shown in its
  // description, not trusted), unless this opts in: then readOnlyHint makes it read-only.
  bool trust_read_only_hint = false;
  absl::Duration timeout = absl::Seconds(60);          // a call's default timeout
  absl::Duration startup_timeout = absl::Seconds(30);  // start, initialize and tools/list
  // Every value read from a file (tokens, env files, every namespace's): never logged, shown or
  // returned.
  std::vector<std::string> secrets;
};

struct McpConfig {
  std::vector<McpServerConfig> servers;
};

// Parses the JSON text of a config file; paths relative to `base_dir` (the file's directory).
// INVALID_ARGUMENT naming the field and the problem.
absl::StatusOr<McpConfig> ParseMcpConfig(absl::string_view text, absl::string_view base_dir);

// Reads and parses `path`. Errors start with the path.
absl::StatusOr<McpConfig> LoadMcpConfig(const std::string& path);

// What `server` runs with for a call of `namespace_name` ("" = "default"): its env and token
// for a server shared by every namespace, the server's literal env plus the namespace's
// credentials for one with `namespaces`; nullopt when the server is not offered to that
// namespace.
std::optional<McpCredentials> CredentialsFor(const McpServerConfig& server,
                                             absl::string_view namespace_name);

// Replaces every secret of `server` that occurs in `text` with "[redacted]".
std::string RedactSecrets(const McpServerConfig& server, std::string text);

}  // namespace rein

#endif  // REIN_EXECUTOR_SERVICE_MCP_MCP_CONFIG_H_
