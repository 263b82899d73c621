// The Messages API client: libcurl, a handle pool for keep-alive, the SDKs' retry policy.
#include "planner_service/anthropic_client.h"

#include <curl/curl.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "absl/base/call_once.h"
#include "absl/random/random.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"
#include "common/log.h"
#include "planner_service/json_extract.h"
#include "trace/genai.h"
#include "trace/tracer.h"

namespace rein {
namespace {

using json = nlohmann::json;

constexpr size_t kMaxIdleHandles = 64;
constexpr size_t kMaxApiKeyBytes = 1024;
// API replies nest a little deeper than the model output they carry.
constexpr int kMaxReplyNesting = kMaxJsonNesting + 8;

absl::once_flag curl_init_once;

size_t WriteBody(char* data, size_t size, size_t count, void* user);
size_t WriteHeader(char* data, size_t size, size_t count, void* user);
size_t ReadBody(char* buffer, size_t size, size_t count, void* user);
int SeekBody(void* user, curl_off_t offset, int origin);

// A short, printable excerpt of an untrusted body for messages.
std::string Excerpt(absl::string_view text) {
  std::string out(text.substr(0, 200));
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  }
  if (text.size() > 200) out.append("...");
  return out;
}

std::string HeaderOr(const HttpHeaders& headers, const char* name) {
  auto it = headers.find(name);
  return it == headers.end() ? std::string() : it->second;
}

}  // namespace

// One HTTP exchange.
struct AnthropicClient::Attempt {
  CURLcode curl_code = CURLE_OK;
  std::string curl_error;
  long http_status = 0;  // NOLINT(runtime/int): curl's type
  HttpHeaders headers;
  std::string body;
  size_t max_body = 0;
  bool body_too_large = false;
  // The request body, handed to curl by ReadBody so that curl cannot send it twice unseen.
  absl::string_view request;
  size_t request_sent = 0;
  // curl wanted to send the request again on its own (a reused connection died before a
  // reply): refused, so that every request the server may have seen is one counted attempt.
  bool resend_refused = false;
};

namespace {

size_t WriteBody(char* data, size_t size, size_t count, void* user) {
  auto* attempt = static_cast<AnthropicClient::Attempt*>(user);
  const size_t n = size * count;
  if (attempt->body.size() + n > attempt->max_body) {
    attempt->body_too_large = true;
    return 0;  // aborts the transfer
  }
  attempt->body.append(data, n);
  return n;
}

size_t WriteHeader(char* data, size_t size, size_t count, void* user) {
  auto* attempt = static_cast<AnthropicClient::Attempt*>(user);
  const size_t n = size * count;
  absl::string_view line(data, n);
  if (absl::StartsWith(line, "HTTP/")) {
    attempt->headers.clear();  // a new response (after 100 Continue, say)
    return n;
  }
  const size_t colon = line.find(':');
  if (colon == absl::string_view::npos) return n;
  std::string name = absl::AsciiStrToLower(absl::StripAsciiWhitespace(line.substr(0, colon)));
  attempt->headers[name] = std::string(absl::StripAsciiWhitespace(line.substr(colon + 1)));
  return n;
}

size_t ReadBody(char* buffer, size_t size, size_t count, void* user) {
  auto* attempt = static_cast<AnthropicClient::Attempt*>(user);
  const size_t n = std::min(size * count, attempt->request.size() - attempt->request_sent);
  std::memcpy(buffer, attempt->request.data() + attempt->request_sent, n);
  attempt->request_sent += n;
  return n;
}

// curl rewinds the body only to send it again by itself: after a reused connection died
// without a reply, or an HTTP/2 stream was refused. The official SDKs count such a resend as
// an attempt with its backoff, so it is refused here and CreateMessage retries (or not).
int SeekBody(void* user, curl_off_t offset, int origin) {
  auto* attempt = static_cast<AnthropicClient::Attempt*>(user);
  if (offset == 0 && origin == SEEK_SET && attempt->request_sent == 0) return CURL_SEEKFUNC_OK;
  attempt->resend_refused = true;
  return CURL_SEEKFUNC_CANTSEEK;
}

}  // namespace

std::optional<absl::Duration> ServerRetryAfter(const HttpHeaders& headers, absl::Time now) {
  double value = 0;
  if (auto it = headers.find("retry-after-ms");
      it != headers.end() && absl::SimpleAtod(it->second, &value) && std::isfinite(value)) {
    return absl::Milliseconds(value);
  }
  auto it = headers.find("retry-after");
  if (it == headers.end()) return std::nullopt;
  if (absl::SimpleAtod(it->second, &value) && std::isfinite(value)) return absl::Seconds(value);
  // An HTTP date: "Wed, 21 Oct 2015 07:28:00 GMT".
  absl::string_view date = absl::StripAsciiWhitespace(it->second);
  absl::ConsumeSuffix(&date, " GMT");
  absl::Time when;
  std::string error;
  if (absl::ParseTime("%a, %d %b %Y %H:%M:%S", std::string(date), absl::UTCTimeZone(), &when,
                      &error)) {
    return when - now;
  }
  return std::nullopt;
}

absl::Duration RetryDelay(int retries_done, const HttpHeaders& headers, absl::Time now,
                          double jitter) {
  if (std::optional<absl::Duration> server = ServerRetryAfter(headers, now);
      server.has_value() && *server > absl::ZeroDuration() && *server <= absl::Seconds(60)) {
    return *server;
  }
  const double seconds = std::min(0.5 * std::pow(2.0, std::max(0, retries_done)), 8.0);
  return absl::Seconds(seconds * std::clamp(jitter, 0.0, 1.0));
}

absl::StatusCode StatusCodeForHttp(int http_status) {
  switch (http_status) {
    case 400: return absl::StatusCode::kInvalidArgument;
    case 401: return absl::StatusCode::kUnauthenticated;
    case 402: return absl::StatusCode::kFailedPrecondition;
    case 403: return absl::StatusCode::kPermissionDenied;
    case 404: return absl::StatusCode::kNotFound;
    case 408: return absl::StatusCode::kUnavailable;
    case 409: return absl::StatusCode::kAborted;
    case 413: return absl::StatusCode::kOutOfRange;
    case 429: return absl::StatusCode::kResourceExhausted;
    default: break;
  }
  if (http_status >= 500) return absl::StatusCode::kUnavailable;
  if (http_status >= 400) return absl::StatusCode::kInvalidArgument;
  return absl::StatusCode::kUnavailable;  // 1xx/3xx: not a reply we can use
}

absl::StatusOr<std::unique_ptr<AnthropicClient>> AnthropicClient::Create(
    AnthropicClientOptions options, Clock* clock) {
  std::string base(absl::StripAsciiWhitespace(options.base_url));
  while (absl::EndsWith(base, "/")) base.pop_back();
  const bool http = absl::StartsWith(base, "http://");
  const bool https = absl::StartsWith(base, "https://");
  if ((!http && !https) || base.size() <= (http ? 7u : 8u)) {
    return absl::InvalidArgumentError(
        absl::StrCat("anthropic base URL \"", Excerpt(base),
                     "\" is not http://HOST[:PORT][/PATH] or https://..."));
  }
  for (const char c : base) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) {
      return absl::InvalidArgumentError("anthropic base URL holds a space or control character");
    }
  }
  if (options.api_key.empty()) return absl::InvalidArgumentError("the API key is empty");
  if (options.api_key.size() > kMaxApiKeyBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("the API key is longer than ", kMaxApiKeyBytes, " bytes"));
  }
  for (const char c : options.api_key) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) {
      return absl::InvalidArgumentError(
          "the API key holds whitespace or a control character (not shown)");
    }
  }
  if (options.max_retries < 0) options.max_retries = 0;
  absl::call_once(curl_init_once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });

  curl_slist* headers = nullptr;
  const std::string key_header = absl::StrCat("x-api-key: ", options.api_key);
  for (const std::string& h : {key_header, absl::StrCat("anthropic-version: ", kAnthropicVersion),
                               std::string("content-type: application/json"),
                               std::string("accept: application/json"), std::string("Expect:")}) {
    curl_slist* next = curl_slist_append(headers, h.c_str());
    if (next == nullptr) {
      curl_slist_free_all(headers);
      return absl::ResourceExhaustedError("out of memory building request headers");
    }
    headers = next;
  }
  std::string url = absl::StrCat(base, "/v1/messages");
  return std::unique_ptr<AnthropicClient>(
      new AnthropicClient(std::move(options), std::move(url), headers, clock));
}

AnthropicClient::AnthropicClient(AnthropicClientOptions options, std::string url,
                                 curl_slist* headers, Clock* clock)
    : options_(std::move(options)), url_(std::move(url)), clock_(clock), headers_(headers) {}

AnthropicClient::~AnthropicClient() {
  absl::MutexLock lock(&mu_);
  for (void* handle : idle_handles_) curl_easy_cleanup(handle);
  curl_slist_free_all(headers_);
}

void* AnthropicClient::AcquireHandle() {
  {
    absl::MutexLock lock(&mu_);
    if (!idle_handles_.empty()) {
      void* handle = idle_handles_.back();
      idle_handles_.pop_back();
      return handle;
    }
  }
  return curl_easy_init();
}

void AnthropicClient::ReleaseHandle(void* handle) {
  if (handle == nullptr) return;
  absl::MutexLock lock(&mu_);
  if (idle_handles_.size() < kMaxIdleHandles) {
    idle_handles_.push_back(handle);
  } else {
    curl_easy_cleanup(handle);
  }
}

double AnthropicClient::Jitter() {
  if (options_.jitter) return options_.jitter();
  thread_local absl::BitGen bitgen;
  return 1.0 - 0.25 * absl::Uniform(bitgen, 0.0, 1.0);
}

std::string AnthropicClient::Scrub(std::string text) const {
  if (!options_.api_key.empty()) {
    text = absl::StrReplaceAll(text, {{options_.api_key, "[api key]"}});
  }
  return text;
}

AnthropicClient::Attempt AnthropicClient::Perform(const std::string& body, absl::Duration timeout) {
  Attempt attempt;
  attempt.max_body = options_.max_response_bytes;
  attempt.request = body;
  CURL* curl = AcquireHandle();
  if (curl == nullptr) {
    attempt.curl_code = CURLE_FAILED_INIT;
    attempt.curl_error = "curl_easy_init failed";
    return attempt;
  }
  curl_easy_reset(curl);  // keeps the open connection
  char error_buffer[CURL_ERROR_SIZE];
  error_buffer[0] = '\0';
  const long timeout_ms = std::max<long>(1, absl::ToInt64Milliseconds(timeout));  // NOLINT
  const long connect_ms = std::max<long>(                                         // NOLINT
      1, std::min<long>(timeout_ms, absl::ToInt64Milliseconds(options_.connect_timeout)));
  curl_easy_setopt(curl, CURLOPT_URL, url_.c_str());
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(curl, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_2TLS);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_VERBOSE, 0L);
  curl_easy_setopt(curl, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(curl, CURLOPT_USERAGENT, "rein-planner/1");
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers_);
  curl_easy_setopt(curl, CURLOPT_POST, 1L);
  curl_easy_setopt(curl, CURLOPT_READFUNCTION, ReadBody);
  curl_easy_setopt(curl, CURLOPT_READDATA, &attempt);
  curl_easy_setopt(curl, CURLOPT_SEEKFUNCTION, SeekBody);
  curl_easy_setopt(curl, CURLOPT_SEEKDATA, &attempt);
  curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, timeout_ms);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, connect_ms);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error_buffer);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, WriteBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &attempt);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, WriteHeader);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &attempt);
  attempt.curl_code = curl_easy_perform(curl);
  if (attempt.curl_code == CURLE_OK) {
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &attempt.http_status);
  } else {
    attempt.curl_error =
        attempt.resend_refused    ? std::string("the connection closed without a reply")
        : error_buffer[0] != '\0' ? std::string(error_buffer)
                                  : std::string(curl_easy_strerror(attempt.curl_code));
  }
  // Nothing of this call may outlive it in the reused handle.
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, nullptr);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, nullptr);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, nullptr);
  curl_easy_setopt(curl, CURLOPT_READDATA, nullptr);
  curl_easy_setopt(curl, CURLOPT_SEEKDATA, nullptr);
  ReleaseHandle(curl);
  return attempt;
}

absl::StatusOr<MessagesReply> AnthropicClient::CreateMessage(const std::string& body,
                                                             absl::Time deadline) {
  absl::Status last_error;
  std::string request_id;
  for (int attempt_index = 0;; ++attempt_index) {
    const absl::Time now = clock_->Now();
    if (now >= deadline) {
      return last_error.ok()
                 ? absl::DeadlineExceededError("the deadline passed before the Messages API call")
                 : last_error;
    }
    const absl::Duration remaining = deadline - now;
    const bool bounded_by_deadline = remaining <= options_.attempt_timeout;
    Attempt attempt = Perform(body, std::min(remaining, options_.attempt_timeout));
    const int attempts = attempt_index + 1;
    const std::string after =
        attempts > 1 ? absl::StrCat(" (after ", attempts, " attempts)") : std::string();

    bool retryable = false;
    absl::Status error;
    if (attempt.curl_code == CURLE_OPERATION_TIMEDOUT && bounded_by_deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("no reply from the Messages API before the deadline", after));
    }
    if (attempt.curl_code != CURLE_OK) {
      if (attempt.body_too_large) {
        error = absl::UnavailableError(absl::StrCat("Messages API reply larger than ",
                                                    options_.max_response_bytes, " bytes", after));
      } else if (attempt.curl_code == CURLE_URL_MALFORMAT ||
                 attempt.curl_code == CURLE_UNSUPPORTED_PROTOCOL) {
        return absl::FailedPreconditionError(
            Scrub(absl::StrCat("Messages API URL ", url_, ": ", attempt.curl_error)));
      } else {
        retryable = true;
        error = absl::UnavailableError(
            Scrub(absl::StrCat("Messages API connection error: ", attempt.curl_error, after)));
      }
    } else {
      request_id = HeaderOr(attempt.headers, "request-id");
      const int status = static_cast<int>(attempt.http_status);
      if (status >= 200 && status < 300) {
        MessagesReply reply;
        reply.request_id = request_id;
        reply.attempts = attempts;
        if (JsonNestingDepth(attempt.body) <= kMaxReplyNesting) {
          reply.message = json::parse(attempt.body, nullptr, /*allow_exceptions=*/false);
        }
        if (!reply.message.is_object()) {
          return absl::UnavailableError(
              Scrub(absl::StrCat("Messages API reply (HTTP ", status,
                                 ") is not a JSON object: ", Excerpt(attempt.body))));
        }
        return reply;
      }
      // An error reply: {"type": "error", "error": {"type": ..., "message": ...}}.
      std::string error_type;
      std::string message;
      if (JsonNestingDepth(attempt.body) <= kMaxReplyNesting) {
        const json parsed = json::parse(attempt.body, nullptr, /*allow_exceptions=*/false);
        if (parsed.is_object() && parsed.contains("error") && parsed["error"].is_object()) {
          const json& e = parsed["error"];
          if (e.contains("type") && e["type"].is_string()) error_type = e["type"];
          if (e.contains("message") && e["message"].is_string()) message = e["message"];
        }
        if (request_id.empty() && parsed.is_object() && parsed.contains("request_id") &&
            parsed["request_id"].is_string()) {
          request_id = parsed["request_id"];
        }
      }
      if (error_type.empty() && message.empty()) message = Excerpt(attempt.body);
      error = absl::Status(
          StatusCodeForHttp(status),
          Scrub(absl::StrCat(
              "Messages API HTTP ", status, error_type.empty() ? "" : absl::StrCat(" ", error_type),
              ": ", message.empty() ? "(no message)" : message,
              request_id.empty() ? "" : absl::StrCat(" (request-id ", request_id, ")"), after)));
      const std::string should_retry =
          absl::AsciiStrToLower(HeaderOr(attempt.headers, "x-should-retry"));
      if (should_retry == "true") {
        retryable = true;
      } else if (should_retry == "false") {
        retryable = false;
      } else {
        retryable = status == 408 || status == 409 || status == 429 || status >= 500;
      }
    }
    last_error = error;
    if (!retryable || attempt_index >= options_.max_retries) return error;
    const absl::Time now_after = clock_->Now();
    const absl::Duration wait = RetryDelay(attempt_index, attempt.headers, now_after, Jitter());
    if (now_after + wait >= deadline) {
      LogWarning("Messages API call failed; no time left to retry",
                 {{"error", error.message()}, {"attempt", absl::StrCat(attempts)}});
      return error;
    }
    if (trace::Span* span = trace::CurrentSpan()) {  // the request's chat span (tracing on)
      span->AddEvent(
          "rein.model.retry",
          {{"rein.model.attempt", int64_t{attempts}},
           {trace::genai::kErrorType, std::string(absl::StatusCodeToString(error.code()))},
           {"rein.model.retry_in_ms", absl::ToInt64Milliseconds(wait)}});
    }
    LogWarning("Messages API call failed; retrying",
               {{"error", error.message()},
                {"attempt", absl::StrCat(attempts)},
                {"retry_in_ms", absl::StrCat(absl::ToInt64Milliseconds(wait))}});
    clock_->SleepUntil(now_after + wait);
  }
}

}  // namespace rein
