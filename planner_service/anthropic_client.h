// AnthropicClient: POST /v1/messages over libcurl with the official SDKs' retry policy,
// bounded by the caller's deadline.
#ifndef REIN_PLANNER_SERVICE_ANTHROPIC_CLIENT_H_
#define REIN_PLANNER_SERVICE_ANTHROPIC_CLIENT_H_

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "nlohmann/json.hpp"

struct curl_slist;

namespace rein {

inline constexpr char kAnthropicPublicBaseUrl[] = "https://api.anthropic.com";
inline constexpr char kAnthropicVersion[] = "2023-06-01";

struct AnthropicClientOptions {
  std::string base_url = kAnthropicPublicBaseUrl;  // http:// or https://, no trailing slash needed
  std::string api_key;                             // sent only as the x-api-key header
  int max_retries = 2;                             // retries after the first attempt
  absl::Duration connect_timeout = absl::Seconds(10);
  // One attempt's limit when the caller's deadline is farther away (or there is none).
  absl::Duration attempt_timeout = absl::Minutes(10);
  size_t max_response_bytes = 32 << 20;
  // The backoff jitter factor in [0.75, 1]; empty = random. Tests make it fixed.
  std::function<double()> jitter;
};

// A successful reply: the Message object and where it came from.
struct MessagesReply {
  nlohmann::json message;  // {"id", "type": "message", "role", "content", "stop_reason", "usage"}
  std::string request_id;  // the request-id header, when given
  int attempts = 0;        // HTTP requests made, retries included
};

// Response headers, names lower-cased; a repeated header keeps its last value.
using HttpHeaders = std::map<std::string, std::string>;

// Sends Messages API requests. Retries as the official SDKs do: at most `max_retries` times,
// after connection errors, timeouts of an attempt, and HTTP 408, 409, 429 and >= 500 (529
// included), unless the reply says `x-should-retry: false`; a reply saying
// `x-should-retry: true` is retried whatever its status. The wait is `retry-after-ms`, else
// `retry-after` (seconds or an HTTP date) when it is in (0, 60] seconds, else
// min(0.5 s * 2^n, 8 s) times a jitter in [0.75, 1] (n = retries so far). A wait that would
// end past the deadline is not taken: the call returns the last error at once.
//
// Each concurrent caller borrows its own curl handle from a pool and returns it, so a worker
// thread keeps its connection open between calls (keep-alive; HTTP/2 when the server offers
// it over TLS). The API key is never logged, never put into a status message and never
// handed to curl's verbose output. Thread-safe.
class AnthropicClient {
 public:
  // INVALID_ARGUMENT for a base URL that is not http(s)://host[...], an empty key or a key
  // with whitespace or control characters (the message never shows the key).
  // `clock` (not owned) waits between retries and must outlive the client.
  static absl::StatusOr<std::unique_ptr<AnthropicClient>> Create(AnthropicClientOptions options,
                                                                 Clock* clock);
  ~AnthropicClient();

  AnthropicClient(const AnthropicClient&) = delete;
  AnthropicClient& operator=(const AnthropicClient&) = delete;

  // POSTs `body` (a JSON Messages request) to {base_url}/v1/messages, retrying as above, and
  // returns the parsed Message. Errors carry the API's error type and message:
  //   400 INVALID_ARGUMENT, 401 UNAUTHENTICATED, 402 FAILED_PRECONDITION, 403
  //   PERMISSION_DENIED, 404 NOT_FOUND, 409 ABORTED, 413 OUT_OF_RANGE, 429 RESOURCE_EXHAUSTED,
  //   other 4xx INVALID_ARGUMENT, 408, 5xx, 529, connection errors and malformed replies
  //   UNAVAILABLE, no reply by `deadline` DEADLINE_EXCEEDED.
  absl::StatusOr<MessagesReply> CreateMessage(const std::string& body, absl::Time deadline);

  const std::string& url() const { return url_; }

  // One HTTP exchange; defined in anthropic_client.cc (public only for curl's callbacks).
  struct Attempt;

 private:
  AnthropicClient(AnthropicClientOptions options, std::string url, curl_slist* headers,
                  Clock* clock);

  // A curl easy handle (CURL*, which curl declares as void) for this caller.
  void* AcquireHandle();
  void ReleaseHandle(void* handle);
  Attempt Perform(const std::string& body, absl::Duration timeout);
  double Jitter();
  std::string Scrub(std::string text) const;

  const AnthropicClientOptions options_;
  const std::string url_;
  Clock* const clock_;
  curl_slist* const headers_;  // built once; holds the key, never logged

  absl::Mutex mu_;
  std::vector<void*> idle_handles_ ABSL_GUARDED_BY(mu_);  // CURL*
};

// The server's requested wait from `retry-after-ms` or `retry-after` (seconds, possibly
// fractional, or an HTTP date measured from `now`), or nullopt when absent or unparsable.
std::optional<absl::Duration> ServerRetryAfter(const HttpHeaders& headers, absl::Time now);

// The wait before retry number `retries_done` + 1: the server's wait when it is in (0, 60] s,
// else min(0.5 s * 2^retries_done, 8 s) * `jitter`.
absl::Duration RetryDelay(int retries_done, const HttpHeaders& headers, absl::Time now,
                          double jitter);

// The code the planner returns for an HTTP error status (see CreateMessage).
absl::StatusCode StatusCodeForHttp(int http_status);

}  // namespace rein

#endif  // REIN_PLANNER_SERVICE_ANTHROPIC_CLIENT_H_
