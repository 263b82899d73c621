// The --mcp_config file.
#include "executor_service/tools/mcp/mcp_config.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "common/limits.h"
#include "common/status_macros.h"
#include "executor_service/tools/json_schema.h"

namespace rein {
namespace {

using nlohmann::json;

// Longest secret file read; tokens and env values are small.
constexpr size_t kMaxSecretBytes = 64 << 10;

absl::Status Bad(const std::string& field, absl::string_view problem) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", problem));
}

std::string Resolve(absl::string_view base_dir, const std::string& path) {
  if (path.empty() || path[0] == '/' || base_dir.empty()) return path;
  return absl::StrCat(base_dir, "/", path);
}

// The content of a secret file, without one trailing newline. The error names the path only.
absl::StatusOr<std::string> ReadSecret(const std::string& field, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Bad(field, absl::StrCat("cannot read ", path));
  std::string value((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (value.size() > kMaxSecretBytes) {
    return Bad(field, absl::StrCat(path, " is larger than ", kMaxSecretBytes, " bytes"));
  }
  while (!value.empty() && (value.back() == '\n' || value.back() == '\r')) value.pop_back();
  if (value.empty()) return Bad(field, absl::StrCat(path, " is empty"));
  if (value.find('\0') != std::string::npos || value.find('\n') != std::string::npos) {
    return Bad(field, absl::StrCat(path, " must hold one line of text"));
  }
  return value;
}

bool ValidServerName(const std::string& name) {
  if (name.empty() || name.size() > 32 || absl::StrContains(name, "__")) return false;
  for (char c : name) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') return false;
  }
  return true;
}

// An `env` object: NAME -> "literal" or {"file": PATH} (a secret, also added to `secrets`).
absl::Status ParseEnv(const json& env, const std::string& field, absl::string_view base_dir,
                      std::vector<std::pair<std::string, std::string>>* out,
                      std::vector<std::string>* secrets) {
  if (!env.is_object()) return Bad(field, "must be an object");
  for (const auto& [key, value] : env.items()) {
    const std::string f = absl::StrCat(field, ".", key);
    if (key.empty() || key.find('=') != std::string::npos || key.find('\0') != std::string::npos) {
      return Bad(f, "is not a valid variable name");
    }
    if (value.is_string()) {
      // A literal: for what is not secret (it is in the config file for all to read).
      out->emplace_back(key, value.get<std::string>());
    } else if (value.is_object() && value.size() == 1 && value.contains("file") &&
               value["file"].is_string()) {
      ASSIGN_OR_RETURN(std::string secret,
                       ReadSecret(f, Resolve(base_dir, value["file"].get<std::string>())));
      out->emplace_back(key, secret);
      secrets->push_back(std::move(secret));
    } else {
      return Bad(f, "must be a string or {\"file\": PATH}");
    }
  }
  return absl::OkStatus();
}

// The `namespaces` object of `server` (whose other keys are parsed): per namespace, the
// credentials of its calls. A server with `namespaces` holds no secret of its own, so that no
// credential is shared between namespaces.
absl::Status ParseNamespaces(const json& in, const std::string& where, absl::string_view base_dir,
                             McpServerConfig* server) {
  const bool stdio = server->transport == McpServerConfig::Transport::kStdio;
  const std::string field = absl::StrCat(where, ".namespaces");
  if (!in.is_object() || in.empty()) {
    return Bad(field, "must be an object with a namespace per key");
  }
  if (!server->secrets.empty() || !server->token.empty()) {
    return Bad(absl::StrCat(where, stdio ? ".env" : ".token_file"),
               "a server with \"namespaces\" takes its secrets per namespace only (a secret here "
               "would be shared by every namespace)");
  }
  const char* known = stdio ? "env" : "token_file";
  for (const auto& [ns, entry] : in.items()) {
    const std::string f = absl::StrCat(field, ".", ns);
    RETURN_IF_ERROR(CheckNamespaceName(ns, f));
    if (!entry.is_object())
      return Bad(f, absl::StrCat("must be an object ({} or with ", known, ")"));
    McpCredentials credentials;
    for (const auto& [key, value] : entry.items()) {
      const std::string k = absl::StrCat(f, ".", key);
      if (key != known) return Bad(k, absl::StrCat("unknown key (known: ", known, ")"));
      if (stdio) {
        RETURN_IF_ERROR(ParseEnv(value, k, base_dir, &credentials.env, &server->secrets));
        for (const auto& [name, unused] : credentials.env) {
          for (const auto& [shared, unused_value] : server->env) {
            if (name == shared) {
              return Bad(absl::StrCat(k, ".", name), "is also set in the server's env");
            }
          }
        }
      } else {
        if (!value.is_string()) return Bad(k, "must be a path");
        ASSIGN_OR_RETURN(credentials.token,
                         ReadSecret(k, Resolve(base_dir, value.get<std::string>())));
        server->secrets.push_back(credentials.token);
      }
    }
    server->namespaces.emplace(ns, std::move(credentials));
  }
  return absl::OkStatus();
}

absl::StatusOr<absl::Duration> Seconds(const json& server, const std::string& field,
                                       const char* key, absl::Duration fallback) {
  auto it = server.find(key);
  if (it == server.end()) return fallback;
  if (!it->is_number() || it->get<double>() <= 0 || it->get<double>() > 3600) {
    return Bad(absl::StrCat(field, ".", key), "must be a number of seconds in (0, 3600]");
  }
  return absl::Seconds(it->get<double>());
}

absl::StatusOr<McpServerConfig> ParseServer(const json& in, const std::string& field,
                                            absl::string_view base_dir) {
  static const std::set<std::string> kKeys = {"name",
                                              "transport",
                                              "command",
                                              "env",
                                              "read_only_paths",
                                              "network",
                                              "url",
                                              "token_file",
                                              "tools",
                                              "trust_read_only_hint",
                                              "timeout_seconds",
                                              "startup_timeout_seconds",
                                              "namespaces"};
  if (!in.is_object()) return Bad(field, "must be an object");
  for (const auto& [key, value] : in.items()) {
    if (kKeys.count(key) == 0) {
      return Bad(absl::StrCat(field, ".", key),
                 absl::StrCat("unknown key (known: ", absl::StrJoin(kKeys, ", "), ")"));
    }
  }
  McpServerConfig server;
  auto name = in.find("name");
  if (name == in.end() || !name->is_string() || !ValidServerName(name->get<std::string>())) {
    return Bad(absl::StrCat(field, ".name"),
               "must be 1 to 32 of [a-zA-Z0-9_-], without \"__\" (it prefixes tool names)");
  }
  server.name = name->get<std::string>();
  const std::string where = absl::StrCat(field, " (", server.name, ")");
  auto transport = in.find("transport");
  const std::string kind = transport != in.end() && transport->is_string()
                               ? transport->get<std::string>()
                               : std::string();
  if (kind == "stdio") {
    server.transport = McpServerConfig::Transport::kStdio;
  } else if (kind == "http") {
    server.transport = McpServerConfig::Transport::kHttp;
  } else {
    return Bad(absl::StrCat(where, ".transport"), "must be \"stdio\" or \"http\"");
  }
  const bool stdio = server.transport == McpServerConfig::Transport::kStdio;
  auto only = [&](const char* key, bool allowed) -> absl::Status {
    if (!allowed && in.contains(key)) {
      return Bad(absl::StrCat(where, ".", key),
                 absl::StrCat("is for ", stdio ? "http" : "stdio", " servers only"));
    }
    return absl::OkStatus();
  };
  for (const char* key : {"command", "env", "read_only_paths", "network"}) {
    absl::Status status = only(key, stdio);
    if (!status.ok()) return status;
  }
  for (const char* key : {"url", "token_file"}) {
    absl::Status status = only(key, !stdio);
    if (!status.ok()) return status;
  }

  if (stdio) {
    auto command = in.find("command");
    if (command == in.end() || !command->is_array() || command->empty()) {
      return Bad(absl::StrCat(where, ".command"), "must be a non-empty array of strings");
    }
    for (const json& arg : *command) {
      if (!arg.is_string() || arg.get<std::string>().find('\0') != std::string::npos) {
        return Bad(absl::StrCat(where, ".command"), "must be a non-empty array of strings");
      }
      server.command.push_back(arg.get<std::string>());
    }
    if (server.command[0].empty()) return Bad(absl::StrCat(where, ".command[0]"), "is empty");
    auto env = in.find("env");
    if (env != in.end()) {
      RETURN_IF_ERROR(
          ParseEnv(*env, absl::StrCat(where, ".env"), base_dir, &server.env, &server.secrets));
    }
    auto paths = in.find("read_only_paths");
    if (paths != in.end()) {
      if (!paths->is_array()) {
        return Bad(absl::StrCat(where, ".read_only_paths"), "must be an array of paths");
      }
      for (const json& path : *paths) {
        if (!path.is_string() || path.get<std::string>().empty()) {
          return Bad(absl::StrCat(where, ".read_only_paths"), "must be an array of paths");
        }
        std::string resolved = Resolve(base_dir, path.get<std::string>());
        if (resolved[0] != '/') {
          return Bad(absl::StrCat(where, ".read_only_paths"),
                     absl::StrCat("\"", resolved, "\" is not absolute"));
        }
        server.read_only_paths.push_back(std::move(resolved));
      }
    }
    auto network = in.find("network");
    if (network != in.end()) {
      if (!network->is_boolean()) return Bad(absl::StrCat(where, ".network"), "must be a boolean");
      server.network = network->get<bool>();
    }
  } else {
    auto url = in.find("url");
    const std::string value =
        url != in.end() && url->is_string() ? url->get<std::string>() : std::string();
    if (!absl::StartsWith(value, "http://") && !absl::StartsWith(value, "https://")) {
      return Bad(absl::StrCat(where, ".url"), "must be an http:// or https:// URL");
    }
    if (value.find_first_of(" \r\n\t") != std::string::npos) {
      return Bad(absl::StrCat(where, ".url"), "must not contain white space");
    }
    server.url = value;
    auto token_file = in.find("token_file");
    if (token_file != in.end()) {
      if (!token_file->is_string()) {
        return Bad(absl::StrCat(where, ".token_file"), "must be a path");
      }
      absl::StatusOr<std::string> token = ReadSecret(
          absl::StrCat(where, ".token_file"), Resolve(base_dir, token_file->get<std::string>()));
      if (!token.ok()) return token.status();
      server.token = *token;
      server.secrets.push_back(*std::move(token));
    }
  }

  auto tools = in.find("tools");
  if (tools != in.end()) {
    if (!tools->is_object()) return Bad(absl::StrCat(where, ".tools"), "must be an object");
    for (const auto& [tool, value] : tools->items()) {
      const std::string f = absl::StrCat(where, ".tools.", tool);
      if (!value.is_object() || value.size() != 1 || !value.contains("mutating") ||
          !value["mutating"].is_boolean()) {
        return Bad(f, "must be {\"mutating\": true|false}");
      }
      server.mutating[tool] = value["mutating"].get<bool>();
    }
  }
  auto trust = in.find("trust_read_only_hint");
  if (trust != in.end()) {
    if (!trust->is_boolean()) {
      return Bad(absl::StrCat(where, ".trust_read_only_hint"), "must be a boolean");
    }
    server.trust_read_only_hint = trust->get<bool>();
  }
  auto namespaces = in.find("namespaces");
  if (namespaces != in.end()) {
    RETURN_IF_ERROR(ParseNamespaces(*namespaces, where, base_dir, &server));
  }
  absl::StatusOr<absl::Duration> timeout = Seconds(in, where, "timeout_seconds", server.timeout);
  if (!timeout.ok()) return timeout.status();
  server.timeout = *timeout;
  absl::StatusOr<absl::Duration> startup =
      Seconds(in, where, "startup_timeout_seconds", server.startup_timeout);
  if (!startup.ok()) return startup.status();
  server.startup_timeout = *startup;
  return server;
}

}  // namespace

absl::StatusOr<McpConfig> ParseMcpConfig(absl::string_view text, absl::string_view base_dir) {
  absl::StatusOr<json> parsed = ParseUntrustedJson(text, "(file)");
  if (!parsed.ok()) return parsed.status();
  const json& root = *parsed;
  if (!root.is_object()) return Bad("(file)", "must be a JSON object with \"servers\"");
  for (const auto& [key, value] : root.items()) {
    if (key != "servers") return Bad(key, "unknown key (known: servers)");
  }
  auto servers = root.find("servers");
  if (servers == root.end() || !servers->is_array()) {
    return Bad("servers", "must be an array of servers");
  }
  McpConfig config;
  std::set<std::string> names;
  for (size_t i = 0; i < servers->size(); ++i) {
    absl::StatusOr<McpServerConfig> server =
        ParseServer((*servers)[i], absl::StrCat("servers[", i, "]"), base_dir);
    if (!server.ok()) return server.status();
    if (!names.insert(server->name).second) {
      return Bad(absl::StrCat("servers[", i, "].name"),
                 absl::StrCat("\"", server->name, "\" is used twice"));
    }
    config.servers.push_back(*std::move(server));
  }
  return config;
}

absl::StatusOr<McpConfig> LoadMcpConfig(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::InvalidArgumentError(absl::StrCat("mcp_config ", path, ": cannot read"));
  std::stringstream text;
  text << in.rdbuf();
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
  absl::StatusOr<McpConfig> config = ParseMcpConfig(text.str(), dir.empty() ? "/" : dir);
  if (!config.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("mcp_config ", path, ": ", config.status().message()));
  }
  return config;
}

std::optional<McpCredentials> CredentialsFor(const McpServerConfig& server,
                                             absl::string_view namespace_name) {
  McpCredentials credentials;
  credentials.env = server.env;
  credentials.token = server.token;
  if (server.namespaces.empty()) return credentials;
  auto it = server.namespaces.find(std::string(NamespaceOrDefault(namespace_name)));
  if (it == server.namespaces.end()) return std::nullopt;
  credentials.env.insert(credentials.env.end(), it->second.env.begin(), it->second.env.end());
  credentials.token = it->second.token;
  return credentials;
}

std::string RedactSecrets(const McpServerConfig& server, std::string text) {
  // Every secret, however short: a short one may mangle an output, but never leaks.
  for (const std::string& secret : server.secrets) {
    absl::StrReplaceAll({{secret, "[redacted]"}}, &text);
  }
  return text;
}

}  // namespace rein
