// WebhookTransport: one HTTP POST of a notice to a receiver, with the libcurl implementation.
#ifndef REIN_ROUTER_SERVICE_NOTIFY_WEBHOOK_TRANSPORT_H_
#define REIN_ROUTER_SERVICE_NOTIFY_WEBHOOK_TRANSPORT_H_

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"

namespace rein {

struct WebhookRequest {
  std::string url;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  absl::Duration timeout = absl::Seconds(10);  // the whole exchange, connect included
};

struct WebhookReply {
  int status = 0;                             // the HTTP status; 0 when none came (error says why)
  std::string error;                          // a transport failure: refused, reset, timed out, ...
  std::optional<absl::Duration> retry_after;  // the receiver's Retry-After, when given
};

// Sends one request. Implementations are thread-safe.
class WebhookTransport {
 public:
  virtual ~WebhookTransport() = default;
  virtual WebhookReply Post(const WebhookRequest& request) = 0;
};

// libcurl: http and https only, redirects never followed (a 3xx is a reply like any other),
// the request's timeout for the whole exchange, and at most kMaxReplyBytes of a reply's body
// read (the rest is not waited for), so a hostile receiver can neither redirect the router
// elsewhere nor hold it or fill its memory.
class CurlWebhookTransport final : public WebhookTransport {
 public:
  static constexpr size_t kMaxReplyBytes = 64 * 1024;
  CurlWebhookTransport();
  WebhookReply Post(const WebhookRequest& request) override;
};

// Retry-After as seconds or an HTTP date, relative to `now`; nullopt when it is neither.
std::optional<absl::Duration> ParseRetryAfter(const std::string& value, absl::Time now);

}  // namespace rein

#endif  // REIN_ROUTER_SERVICE_NOTIFY_WEBHOOK_TRANSPORT_H_
