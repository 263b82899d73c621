// CurlWebhookTransport: a notice's POST with libcurl.
#include "router_service/notify/webhook_transport.h"

#include <curl/curl.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/base/call_once.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"

namespace rein {
namespace {

struct Exchange {
  size_t reply_bytes = 0;
  bool reply_too_large = false;
  std::string retry_after;
};

size_t WriteReply(char* /*data*/, size_t size, size_t count, void* user) {
  auto* exchange = static_cast<Exchange*>(user);
  exchange->reply_bytes += size * count;
  if (exchange->reply_bytes > CurlWebhookTransport::kMaxReplyBytes) {
    exchange->reply_too_large = true;
    return 0;  // stop reading: curl ends the transfer with CURLE_WRITE_ERROR
  }
  return size * count;
}

size_t ReadHeader(char* data, size_t size, size_t count, void* user) {
  auto* exchange = static_cast<Exchange*>(user);
  absl::string_view line(data, size * count);
  if (absl::StartsWithIgnoreCase(line, "retry-after:")) {
    line.remove_prefix(sizeof("retry-after:") - 1);
    exchange->retry_after = std::string(absl::StripAsciiWhitespace(line));
  }
  return size * count;
}

}  // namespace

std::optional<absl::Duration> ParseRetryAfter(const std::string& value, absl::Time now) {
  int64_t seconds = 0;
  if (absl::SimpleAtoi(value, &seconds)) {
    if (seconds < 0) return std::nullopt;
    return absl::Seconds(seconds);
  }
  const time_t at = curl_getdate(value.c_str(), nullptr);
  if (at < 0) return std::nullopt;
  const absl::Duration delay = absl::FromTimeT(at) - now;
  return delay < absl::ZeroDuration() ? absl::ZeroDuration() : delay;
}

CurlWebhookTransport::CurlWebhookTransport() {
  static absl::once_flag curl_init_once;
  absl::call_once(curl_init_once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

WebhookReply CurlWebhookTransport::Post(const WebhookRequest& request) {
  WebhookReply reply;
  std::unique_ptr<CURL, void (*)(CURL*)> curl(curl_easy_init(), curl_easy_cleanup);
  if (curl == nullptr) {
    reply.error = "libcurl could not start a transfer";
    return reply;
  }
  curl_slist* headers = nullptr;
  for (const auto& [name, value] : request.headers) {
    headers = curl_slist_append(headers, absl::StrCat(name, ": ", value).c_str());
  }
  headers = curl_slist_append(headers, "Expect:");  // no 100-continue round trip
  std::unique_ptr<curl_slist, void (*)(curl_slist*)> header_list(headers, curl_slist_free_all);
  Exchange exchange;
  char error_buffer[CURL_ERROR_SIZE] = {};
  const long timeout_ms = static_cast<long>(absl::ToInt64Milliseconds(request.timeout));
  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, request.url.c_str());
  // Sent as checked: libcurl would otherwise remove dot segments the allow-list never saw
  // (WebhookConfig refuses them; this keeps what is compared and what is sent the same).
  curl_easy_setopt(c, CURLOPT_PATH_AS_IS, 1L);
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_USERAGENT, "rein-router-webhooks/1");
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(c, CURLOPT_POST, 1L);
  curl_easy_setopt(c, CURLOPT_POSTFIELDS, request.body.data());
  curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, error_buffer);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, WriteReply);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &exchange);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, ReadHeader);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &exchange);
  const CURLcode rc = curl_easy_perform(c);
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  if (rc == CURLE_OK || (rc == CURLE_WRITE_ERROR && exchange.reply_too_large && status > 0)) {
    reply.status = static_cast<int>(status);
  } else {
    reply.error = error_buffer[0] != '\0' ? error_buffer : curl_easy_strerror(rc);
  }
  if (!exchange.retry_after.empty()) {
    reply.retry_after = ParseRetryAfter(exchange.retry_after, absl::Now());
  }
  return reply;
}

}  // namespace rein
