// WebhookConfig: where notices go (--webhook_url, --webhook_allow, RunSpec.notify) and the
// secrets that sign them, parsed and checked when the router starts.
#ifndef REIN_ROUTER_SERVICE_NOTIFY_WEBHOOK_CONFIG_H_
#define REIN_ROUTER_SERVICE_NOTIFY_WEBHOOK_CONFIG_H_

#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "rein/v1/types.pb.h"
#include "router_service/notify/webhook_url.h"

namespace rein {

// The CloudEvents types of notices (docs/WEBHOOKS.md).
inline constexpr char kTypePaused[] = "dev.rein.run.paused";
inline constexpr char kTypeFinished[] = "dev.rein.run.finished";
inline constexpr char kTypeFailed[] = "dev.rein.run.failed";
inline constexpr char kTypeCancelled[] = "dev.rein.run.cancelled";

// One endpoint: a URL, the HMAC key that signs what is sent to it (empty = unsigned), the
// event types it takes (empty = every type), and the one namespace whose runs it serves
// (empty = every namespace).
struct WebhookEndpoint {
  std::string url;
  std::string key;
  std::set<std::string> types;
  std::string namespace_name;
};

// Parses one --webhook_url or --webhook_allow value,
// `URL[,secret_file=F][,types=T[,T...]][,namespace=N]`, where a type is paused, finished,
// failed or cancelled (or its dev.rein.run. name) and N a namespace name (docs/NAMESPACES.md;
// `default` for runs without one): the entry then serves that namespace's runs only. The
// secret file holds
// either a Standard Webhooks secret (`whsec_` then base64 of the key) or the key's raw bytes;
// surrounding whitespace is dropped. Errors (INVALID_ARGUMENT, or the file's own) name `flag`
// and the problem, never the secret.
absl::StatusOr<WebhookEndpoint> ParseWebhookFlag(absl::string_view flag, absl::string_view value);

// OK when `url` is at most 2048 bytes and ParseWebhookUrl (webhook_url.h) takes it: an
// absolute http(s) URL with a host, no user info, fragment, dot segment, whitespace, control
// character or backslash; else INVALID_ARGUMENT saying why (prefixed by `field`).
absl::Status CheckWebhookUrl(absl::string_view field, absl::string_view url);

// The router's webhook configuration. Immutable after construction; thread-safe.
class WebhookConfig {
 public:
  WebhookConfig() = default;
  // `endpoints` from --webhook_url, `allow` from --webhook_allow (each a prefix with its own
  // secret_file; its types are ignored), `console_url` from --console_url ("" = no links).
  WebhookConfig(std::vector<WebhookEndpoint> endpoints, std::vector<WebhookEndpoint> allow,
                std::string console_url);

  // INVALID_ARGUMENT naming spec.notify when a URL of spec.notify is malformed, repeated, not
  // under a prefix allowed to the run's namespace (spec.namespace), or there are more than 4.
  absl::Status CheckRunSpec(const rein::v1::RunSpec& spec) const;

  // The endpoints a notice of `type` for a run of `spec` goes to: the router's own that take
  // the type and serve the run's namespace, then the run's spec.notify URLs that are (still)
  // allowed to it, each with the key of its prefix; a URL listed twice goes once.
  std::vector<WebhookEndpoint> EndpointsFor(const rein::v1::RunSpec& spec,
                                            const std::string& type) const;

  // The most endpoints one notice may go to: the router's own and a run's URLs.
  int MaxEndpoints() const;

  const std::string& console_url() const { return console_url_; }
  bool empty() const { return endpoints_.empty() && allow_.empty(); }

 private:
  // The prefix allowed to `namespace_name` that `url` falls under, or nullptr.
  const WebhookEndpoint* AllowedPrefix(absl::string_view url,
                                       absl::string_view namespace_name) const;

  std::vector<WebhookEndpoint> endpoints_;
  std::vector<WebhookEndpoint> allow_;
  std::vector<WebhookUrl> allow_parsed_;  // allow_[i] parsed
  std::string console_url_;
};

// The configuration of the router's flags: each of `urls` (--webhook_url) and `allow`
// (--webhook_allow) parsed by ParseWebhookFlag, `console_url` (--console_url) an http(s) URL
// or empty. The first bad value is INVALID_ARGUMENT naming its flag.
absl::StatusOr<WebhookConfig> MakeWebhookConfig(const std::vector<std::string>& urls,
                                                const std::vector<std::string>& allow,
                                                const std::string& console_url);

// Replaces each URL of spec.notify by what may be shown of it, its origin (WebhookOrigin,
// webhook_url.h): a chat webhook URL's path is a secret. The API's replies carry runs so.
void RedactNotify(rein::v1::RunSpec* spec);

// Every value of a flag given several times (`--name=V` or `--name V`, with one or two dashes),
// in order: absl keeps only the last one.
std::vector<std::string> RepeatedFlagValues(int argc, char** argv, absl::string_view name);

}  // namespace rein

#endif  // REIN_ROUTER_SERVICE_NOTIFY_WEBHOOK_CONFIG_H_
