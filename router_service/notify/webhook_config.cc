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
#include "common/limits.h"
#include "common/status_macros.h"

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
  absl::StatusOr<WebhookUrl> parsed = ParseWebhookUrl(url);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": ", parsed.status().message()));
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
    } else if (absl::ConsumePrefix(&part, "namespace=")) {
      in_types = false;
      if (!endpoint.namespace_name.empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat(flag, ": namespace= given twice (repeat the flag for another namespace)"));
      }
      RETURN_IF_ERROR(CheckNamespaceName(part, absl::StrCat(flag, ": namespace")));
      endpoint.namespace_name = std::string(part);
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          flag, ": unknown option \"", part, "\" (secret_file=FILE, types=T,... or namespace=NS)"));
    }
  }
  return endpoint;
}

WebhookConfig::WebhookConfig(std::vector<WebhookEndpoint> endpoints,
                             std::vector<WebhookEndpoint> allow, std::string console_url)
    : endpoints_(std::move(endpoints)),
      allow_(std::move(allow)),
      console_url_(absl::StripSuffix(console_url, "/")) {
  for (const WebhookEndpoint& prefix : allow_) {
    // MakeWebhookConfig checked each; one that does not parse admits nothing.
    absl::StatusOr<WebhookUrl> parsed = ParseWebhookUrl(prefix.url);
    allow_parsed_.push_back(parsed.ok() ? *std::move(parsed) : WebhookUrl{});
  }
}

namespace {

// An endpoint with a namespace serves that namespace's runs only.
bool Serves(const WebhookEndpoint& endpoint, absl::string_view namespace_name) {
  return endpoint.namespace_name.empty() ||
         endpoint.namespace_name == NamespaceOrDefault(namespace_name);
}

}  // namespace

const WebhookEndpoint* WebhookConfig::AllowedPrefix(absl::string_view url,
                                                    absl::string_view namespace_name) const {
  absl::StatusOr<WebhookUrl> parsed = ParseWebhookUrl(url);
  if (!parsed.ok()) return nullptr;
  // Whole scheme, host, port and path segments, so that https://hooks.example/team-a allows
  // neither https://hooks.example.attacker.net/ nor https://hooks.example/team-ab.
  for (size_t i = 0; i < allow_.size(); ++i) {
    if (!allow_parsed_[i].scheme.empty() && Serves(allow_[i], namespace_name) &&
        IsUnderPrefix(*parsed, allow_parsed_[i])) {
      return &allow_[i];
    }
  }
  return nullptr;
}

int WebhookConfig::MaxEndpoints() const {
  return static_cast<int>(endpoints_.size()) + kMaxRunUrls;
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
    if (AllowedPrefix(url, spec.namespace_()) == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ": not under a prefix this router allows to namespace ",
                       NamespaceOrDefault(spec.namespace_()), " (--webhook_allow",
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
    if (!Serves(e, spec.namespace_())) continue;
    if (urls.insert(e.url).second) out.push_back(e);
  }
  for (const std::string& url : spec.notify()) {
    const WebhookEndpoint* prefix = AllowedPrefix(url, spec.namespace_());
    if (prefix == nullptr || !CheckWebhookUrl("", url).ok() || !urls.insert(url).second) continue;
    out.push_back(WebhookEndpoint{url, prefix->key, {}, prefix->namespace_name});
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
    if (absl::StrContains(e->url, '?')) {
      return absl::InvalidArgumentError("--webhook_allow: a prefix has no query (?...)");
    }
    prefixes.push_back(*std::move(e));
  }
  if (!console_url.empty()) {
    if (absl::Status status = CheckWebhookUrl("--console_url", console_url); !status.ok()) {
      return status;
    }
  }
  return WebhookConfig(std::move(endpoints), std::move(prefixes), console_url);
}

void RedactNotify(rein::v1::RunSpec* spec) {
  for (std::string& url : *spec->mutable_notify()) url = WebhookOrigin(url);
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
