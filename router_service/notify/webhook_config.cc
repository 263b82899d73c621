// WebhookConfig: the --webhook_url, --webhook_allow and RunSpec.notify checks.
#include "router_service/notify/webhook_config.h"

#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace rein {
namespace {

constexpr size_t kMaxUrlBytes = 2048;
constexpr int kMaxRunUrls = 4;
constexpr size_t kMaxSecretBytes = 4096;

absl::StatusOr<std::string> TypeName(absl::string_view flag, absl::string_view type) {
  for (const char* full : {kTypePaused, kTypeFinished, kTypeFailed, kTypeCancelled}) {
    if (type == full || absl::StrCat("dev.rein.run.", type) == full) return std::string(full);
  }
  return absl::InvalidArgumentError(absl::StrCat(flag, ": unknown event type \"", type,
                                                 "\" (paused, finished, failed or cancelled)"));
}

absl::StatusOr<std::string> ReadKey(absl::string_view flag, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::InvalidArgumentError(absl::StrCat(flag, ": cannot read the secret_file ", path));
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string secret = buffer.str();
  if (secret.size() > kMaxSecretBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, ": the secret_file ", path, " is over ", kMaxSecretBytes, " bytes"));
  }
  absl::string_view trimmed = absl::StripAsciiWhitespace(secret);
  if (trimmed.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(flag, ": the secret_file ", path, " is empty"));
  }
  if (absl::ConsumePrefix(&trimmed, "whsec_")) {
    std::string key;
    if (!absl::Base64Unescape(trimmed, &key) || key.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          flag, ": the secret_file ", path, " starts with whsec_ but the rest is not base64"));
    }
    return key;
  }
  return std::string(trimmed);
}

}  // namespace

absl::Status CheckWebhookUrl(absl::string_view field, absl::string_view url) {
  if (url.size() > kMaxUrlBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": a URL of ", url.size(), " bytes, at most ", kMaxUrlBytes));
  }
  absl::string_view rest = url;
  if (!absl::ConsumePrefix(&rest, "https://") && !absl::ConsumePrefix(&rest, "http://")) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": \"", url, "\" is not an http:// or https:// URL"));
  }
  for (char c : url) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f || c == '\\') {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ": the URL holds whitespace, a control character or a backslash"));
    }
  }
  const absl::string_view authority = rest.substr(0, rest.find_first_of("/?#"));
  if (authority.empty() || authority.front() == ':') {
    return absl::InvalidArgumentError(absl::StrCat(field, ": \"", url, "\" has no host"));
  }
  if (absl::StrContains(authority, '@')) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": the URL must not carry user info (user@host)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<WebhookEndpoint> ParseWebhookFlag(absl::string_view flag, absl::string_view value) {
  std::vector<absl::string_view> parts = absl::StrSplit(value, ',');
  WebhookEndpoint endpoint;
  endpoint.url = std::string(absl::StripAsciiWhitespace(parts[0]));
  if (absl::Status status = CheckWebhookUrl(flag, endpoint.url); !status.ok()) return status;
  bool in_types = false;
  for (size_t i = 1; i < parts.size(); ++i) {
    absl::string_view part = absl::StripAsciiWhitespace(parts[i]);
    if (absl::ConsumePrefix(&part, "secret_file=")) {
      in_types = false;
      if (part.empty())
        return absl::InvalidArgumentError(absl::StrCat(flag, ": empty secret_file"));
      absl::StatusOr<std::string> key = ReadKey(flag, std::string(part));
      if (!key.ok()) return key.status();
      endpoint.key = *std::move(key);
    } else if (absl::ConsumePrefix(&part, "types=") ||
               (in_types && !absl::StrContains(part, '='))) {
      in_types = true;
      absl::StatusOr<std::string> type = TypeName(flag, part);
      if (!type.ok()) return type.status();
      endpoint.types.insert(*std::move(type));
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat(flag, ": unknown option \"", part, "\" (secret_file=FILE or types=T,...)"));
    }
  }
  return endpoint;
}

WebhookConfig::WebhookConfig(std::vector<WebhookEndpoint> endpoints,
                             std::vector<WebhookEndpoint> allow, std::string console_url)
    : endpoints_(std::move(endpoints)),
      allow_(std::move(allow)),
      console_url_(absl::StripSuffix(console_url, "/")) {}

const WebhookEndpoint* WebhookConfig::AllowedPrefix(absl::string_view url) const {
  for (const WebhookEndpoint& prefix : allow_) {
    if (!absl::StartsWith(url, prefix.url)) continue;
    // The prefix must end at a boundary, so that https://hooks.example does not allow
    // https://hooks.example.attacker.net/.
    if (url.size() == prefix.url.size() || absl::EndsWith(prefix.url, "/")) return &prefix;
    const char next = url[prefix.url.size()];
    if (next == '/' || next == '?' || next == '#') return &prefix;
  }
  return nullptr;
}

absl::Status WebhookConfig::CheckRunSpec(const rein::v1::RunSpec& spec) const {
  if (spec.notify_size() > kMaxRunUrls) {
    return absl::InvalidArgumentError(
        absl::StrCat("spec.notify: ", spec.notify_size(), " URLs, at most ", kMaxRunUrls));
  }
  std::set<std::string> seen;
  for (int i = 0; i < spec.notify_size(); ++i) {
    const std::string field = absl::StrCat("spec.notify[", i, "]");
    const std::string& url = spec.notify(i);
    if (absl::Status status = CheckWebhookUrl(field, url); !status.ok()) return status;
    if (!seen.insert(url).second) {
      return absl::InvalidArgumentError(absl::StrCat(field, ": listed twice"));
    }
    if (AllowedPrefix(url) == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ": not under a prefix this router allows (--webhook_allow",
                       allow_.empty() ? ": none set" : "", ")"));
    }
  }
  return absl::OkStatus();
}

std::vector<WebhookEndpoint> WebhookConfig::EndpointsFor(const rein::v1::RunSpec& spec,
                                                         const std::string& type) const {
  std::vector<WebhookEndpoint> out;
  std::set<std::string> urls;
  for (const WebhookEndpoint& e : endpoints_) {
    if (!e.types.empty() && e.types.count(type) == 0) continue;
    if (urls.insert(e.url).second) out.push_back(e);
  }
  for (const std::string& url : spec.notify()) {
    const WebhookEndpoint* prefix = AllowedPrefix(url);
    if (prefix == nullptr || !CheckWebhookUrl("", url).ok() || !urls.insert(url).second) continue;
    out.push_back(WebhookEndpoint{url, prefix->key, {}});
  }
  return out;
}

absl::StatusOr<WebhookConfig> MakeWebhookConfig(const std::vector<std::string>& urls,
                                                const std::vector<std::string>& allow,
                                                const std::string& console_url) {
  std::vector<WebhookEndpoint> endpoints, prefixes;
  for (const std::string& value : urls) {
    absl::StatusOr<WebhookEndpoint> e = ParseWebhookFlag("--webhook_url", value);
    if (!e.ok()) return e.status();
    endpoints.push_back(*std::move(e));
  }
  for (const std::string& value : allow) {
    absl::StatusOr<WebhookEndpoint> e = ParseWebhookFlag("--webhook_allow", value);
    if (!e.ok()) return e.status();
    prefixes.push_back(*std::move(e));
  }
  if (!console_url.empty()) {
    if (absl::Status status = CheckWebhookUrl("--console_url", console_url); !status.ok()) {
      return status;
    }
  }
  return WebhookConfig(std::move(endpoints), std::move(prefixes), console_url);
}

std::vector<std::string> RepeatedFlagValues(int argc, char** argv, absl::string_view name) {
  std::vector<std::string> values;
  for (int i = 1; i < argc; ++i) {
    absl::string_view arg = argv[i];
    if (arg == "--") break;
    if (!absl::ConsumePrefix(&arg, "--") && !absl::ConsumePrefix(&arg, "-")) continue;
    if (!absl::ConsumePrefix(&arg, name)) continue;
    if (absl::ConsumePrefix(&arg, "=")) {
      values.emplace_back(arg);
    } else if (arg.empty() && i + 1 < argc) {
      values.emplace_back(argv[++i]);
    }
  }
  return values;
}

}  // namespace rein
