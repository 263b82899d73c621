// The Standard Webhooks signature of a notice: HMAC-SHA256 over "id.timestamp.body".
#ifndef REIN_ROUTER_SERVICE_NOTIFY_SIGNATURE_H_
#define REIN_ROUTER_SERVICE_NOTIFY_SIGNATURE_H_

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace rein {

// The webhook-signature header's value: "v1," then the base64 of HMAC-SHA256(key,
// "<id>.<timestamp>.<body>").
std::string WebhookSignature(absl::string_view key, absl::string_view id, int64_t timestamp,
                             absl::string_view body);

// Whether `header` (one or more space-separated "v1,<base64>" entries, as Standard Webhooks
// allows) holds the signature of (id, timestamp, body) under `key`; compared in constant time.
// `timestamp` is the webhook-timestamp header as received.
bool VerifyWebhookSignature(absl::string_view key, absl::string_view id,
                            absl::string_view timestamp, absl::string_view body,
                            absl::string_view header);

}  // namespace rein

#endif  // REIN_ROUTER_SERVICE_NOTIFY_SIGNATURE_H_
