// HostCheck: the HTTP port's Host and Origin rules.
#include "router_service/connect/host_check.h"

#include <arpa/inet.h>

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace rein::connect {
namespace {

// The name of a Host header without its port, lower case; "[...]" kept for IPv6.
std::string HostName(absl::string_view host) {
  if (absl::StartsWith(host, "[")) {
    const size_t close = host.find(']');
    return absl::AsciiStrToLower(
        host.substr(0, close == absl::string_view::npos ? host.size() : close + 1));
  }
  return absl::AsciiStrToLower(host.substr(0, host.find(':')));
}

bool IsIpLiteral(const std::string& name) {
  unsigned char address[16];
  if (absl::StartsWith(name, "[") && absl::EndsWith(name, "]")) {
    return inet_pton(AF_INET6, name.substr(1, name.size() - 2).c_str(), address) == 1;
  }
  return inet_pton(AF_INET, name.c_str(), address) == 1;
}

bool IsLocalhost(const std::string& name) {
  return name == "localhost" || absl::EndsWith(name, ".localhost");
}

bool IsLoopback(const std::string& name) {
  return IsLocalhost(name) ||
         (IsIpLiteral(name) && (absl::StartsWith(name, "127.") || name == "[::1]"));
}

}  // namespace

HostCheck::HostCheck(absl::string_view listen, std::vector<std::string> allowed_hosts, bool tls)
    : allowed_hosts_(std::move(allowed_hosts)), scheme_(tls ? "https" : "http") {
  for (std::string& name : allowed_hosts_) absl::AsciiStrToLower(&name);
  const std::string listen_host(listen.substr(0, listen.rfind(':')));
  enforce_host_ = !allowed_hosts_.empty() || IsLoopback(HostName(listen_host));
}

absl::Status HostCheck::CheckHost(const char* host) const {
  if (!enforce_host_) return absl::OkStatus();
  if (host == nullptr || *host == '\0') {
    return absl::PermissionDeniedError("Host: required");
  }
  const std::string name = HostName(host);
  if (IsIpLiteral(name) || IsLocalhost(name)) return absl::OkStatus();
  for (const std::string& allowed : allowed_hosts_) {
    if (name == allowed) return absl::OkStatus();
  }
  return absl::PermissionDeniedError(absl::StrCat(
      "Host: \"", absl::string_view(host).substr(0, 100),
      "\" is not a name of this router (an IP address, localhost, or a name given with "
      "--http_allowed_hosts)"));
}

absl::Status HostCheck::CheckOrigin(const char* host, const char* origin) const {
  if (origin == nullptr) return absl::OkStatus();
  if (host != nullptr && absl::EqualsIgnoreCase(origin, absl::StrCat(scheme_, "://", host))) {
    return absl::OkStatus();
  }
  return absl::PermissionDeniedError(
      absl::StrCat("Origin: \"", absl::string_view(origin).substr(0, 100),
                   "\" is another site; this port serves its own origin only (no CORS)"));
}

absl::StatusOr<std::vector<std::string>> ParseAllowedHosts(absl::string_view flag) {
  std::vector<std::string> names;
  for (absl::string_view part : absl::StrSplit(flag, ',', absl::SkipWhitespace())) {
    part = absl::StripAsciiWhitespace(part);
    bool good = !part.empty() && part.size() <= 253;
    for (char c : part) good = good && (absl::ascii_isalnum(c) || c == '-' || c == '.');
    if (!good) {
      return absl::InvalidArgumentError(
          absl::StrCat("--http_allowed_hosts: \"", part.substr(0, 100),
                       "\" is not a DNS name (letters, digits, '-' and '.'; no port)"));
    }
    names.push_back(absl::AsciiStrToLower(part));
  }
  return names;
}

}  // namespace rein::connect
