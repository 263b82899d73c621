// WebhookUrl: a webhook URL parsed strictly, so that what the allow-list checks is what is sent.
#ifndef REIN_ROUTER_SERVICE_NOTIFY_WEBHOOK_URL_H_
#define REIN_ROUTER_SERVICE_NOTIFY_WEBHOOK_URL_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace rein {

// An http(s) URL as the allow-list compares it: the scheme and host in lower case, the port
// (80 or 443 when not written), the path's segments percent-decoded, and the query as written.
struct WebhookUrl {
  std::string scheme;
  std::string host;
  int port = 0;
  std::vector<std::string> segments;  // "/a/b/" is {"a", "b"}
  std::string query;                  // after '?', as written ("" when none)
};

// Parses `url`, refusing (INVALID_ARGUMENT saying why) what a server or libcurl could read as
// another path than the one compared: a scheme other than http:// or https://, user info,
// a fragment, a host that is not a DNS name or an IP literal, a bad port, whitespace, control
// characters, backslashes or non-ASCII bytes anywhere, and in the path an empty segment
// ("//"), a dot segment ("." or "..", also percent-encoded as %2e, or before a ';'), a
// malformed percent-escape, or an encoded '/', '\', '%' or control character.
absl::StatusOr<WebhookUrl> ParseWebhookUrl(absl::string_view url);

// True when `url` is `prefix` or below it: the same scheme, host and port, and the prefix's
// path segments are the first whole segments of the URL's (https://h/team-a admits
// https://h/team-a/x and https://h/team-a?x, not https://h/team-ab). A prefix with a query
// admits only that exact query.
bool IsUnderPrefix(const WebhookUrl& url, const WebhookUrl& prefix);

// What logs and API replies show of a webhook URL: its scheme and authority then "/..."
// (https://hooks.example/...), or the URL when it has neither path nor query, "(url)" when it
// has no scheme; the path and query of a chat webhook URL are a secret.
std::string WebhookOrigin(absl::string_view url);

}  // namespace rein

#endif  // REIN_ROUTER_SERVICE_NOTIFY_WEBHOOK_URL_H_
