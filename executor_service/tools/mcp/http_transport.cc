// MCP's streamable HTTP transport.
#include "executor_service/tools/mcp/http_transport.h"

#include <curl/curl.h>

#include <algorithm>
#include <utility>

#include "absl/base/call_once.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"

namespace rein {

struct HttpTransport::Response {
  size_t cap = 0;
  size_t max_queued_bytes = 0;
  std::string content_type;
  std::string session_id;
  std::deque<absl::StatusOr<std::string>>* queue = nullptr;
  // A JSON body, or the SSE stream's current line and event.
  std::string body;
  bool body_too_large = false;
  size_t body_bytes = 0;
  std::string line;
  std::string event_data;
  bool event_too_large = false;
  bool sse = false;
  bool saw_reply = false;  // a message with an id and no method: the POST's answer is in
  // What this response queued; past a bound the transfer stops and `overflow` names it.
  int queued = 0;
  size_t queued_bytes = 0;
  std::string overflow;

  // False (and `overflow` set) when one more message of `bytes` would pass a bound.
  bool Room(size_t bytes) {
    if (!overflow.empty()) return false;
    if (queued > kMaxMcpMessagesPerRequest) {  // the reply may follow the last allowed
      overflow = absl::StrCat("the server streamed more than ", kMaxMcpMessagesPerRequest,
                              " messages in one response (the cap per request); disconnected");
    } else if (queued_bytes + bytes > max_queued_bytes) {
      overflow = absl::StrCat("the server streamed more than ", max_queued_bytes,
                              " bytes of messages in one response (the cap per request); "
                              "disconnected");
    }
    if (!overflow.empty()) return false;
    ++queued;
    queued_bytes += bytes;
    return true;
  }
  void TooLarge(size_t bytes) {
    if (!Room(0)) return;
    queue->push_back(absl::ResourceExhaustedError(
        absl::StrCat("the server sent a message of more than ", bytes, " bytes; the cap is ", cap,
                     " bytes (it was dropped)")));
  }
  void Deliver(std::string message) {
    if (!Room(message.size())) return;
    if (absl::StrContains(message, "\"id\"") && !absl::StrContains(message, "\"method\"")) {
      saw_reply = true;
    }
    queue->push_back(std::move(message));
  }
  void EndEvent() {
    if (event_too_large) {
      TooLarge(cap);
    } else if (!event_data.empty()) {
      Deliver(std::move(event_data));
    }
    event_data.clear();
    event_too_large = false;
  }
  void SseLine(absl::string_view l) {
    if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
    if (l.empty()) {
      EndEvent();
      return;
    }
    if (!absl::StartsWith(l, "data:")) return;  // id:, event:, retry: and comments
    l.remove_prefix(5);
    if (!l.empty() && l.front() == ' ') l.remove_prefix(1);
    if (event_too_large) return;
    if (event_data.size() + l.size() + 1 > cap) {
      event_too_large = true;
      event_data.clear();
      return;
    }
    if (!event_data.empty()) event_data.push_back('\n');
    event_data.append(l.data(), l.size());
  }
  void Data(absl::string_view data) {
    if (!overflow.empty()) return;
    if (!sse) {
      body_bytes += data.size();
      if (body_too_large || body.size() + data.size() > cap) {
        body_too_large = true;
        body.clear();
        return;
      }
      body.append(data.data(), data.size());
      return;
    }
    while (!data.empty() && overflow.empty()) {
      const size_t newline = data.find('\n');
      if (newline == absl::string_view::npos) {
        // Keep a partial line only while it can still fit; the rest is counted as dropped.
        if (line.size() + data.size() <= cap + 16) {
          line.append(data.data(), data.size());
        } else {
          event_too_large = true;
          line.clear();
        }
        return;
      }
      line.append(data.data(), newline);
      SseLine(line);
      line.clear();
      data.remove_prefix(newline + 1);
    }
  }
};

namespace {

absl::once_flag curl_init_once;

size_t OnHeader(char* data, size_t size, size_t count, void* user) {
  auto* response = static_cast<HttpTransport::Response*>(user);
  absl::string_view header(data, size * count);
  const size_t colon = header.find(':');
  if (colon != absl::string_view::npos) {
    const std::string name = absl::AsciiStrToLower(header.substr(0, colon));
    const std::string value(absl::StripAsciiWhitespace(header.substr(colon + 1)));
    if (name == "content-type") {
      response->content_type = absl::AsciiStrToLower(value);
      response->sse = absl::StartsWith(response->content_type, "text/event-stream");
    }
    if (name == "mcp-session-id") response->session_id = value.substr(0, 1024);
  }
  return size * count;
}

// Returns less than it was given (curl then ends the transfer) once a bound was passed.
size_t OnBody(char* data, size_t size, size_t count, void* user) {
  auto* response = static_cast<HttpTransport::Response*>(user);
  response->Data(absl::string_view(data, size * count));
  return response->overflow.empty() ? size * count : 0;
}

// Stops the transfer once its deadline has passed (curl's own timeout is set too).
int OnProgress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  return absl::Now() >= *static_cast<absl::Time*>(user) ? 1 : 0;
}

}  // namespace

HttpTransport::HttpTransport(std::string url, std::string bearer_token, size_t max_message_bytes)
    : url_(std::move(url)), token_(std::move(bearer_token)), max_message_bytes_(max_message_bytes) {
  absl::call_once(curl_init_once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

HttpTransport::~HttpTransport() = default;

absl::Status HttpTransport::Send(const std::string& message, absl::Time deadline) {
  CURL* curl = curl_easy_init();
  if (curl == nullptr) return absl::ResourceExhaustedError("curl_easy_init failed");
  Response response;
  response.cap = max_message_bytes_;
  response.max_queued_bytes = MaxQueuedBytes();
  response.queue = &queue_;
  struct curl_slist* headers = nullptr;
  headers = curl_slist_append(headers, "Content-Type: application/json");
  headers = curl_slist_append(headers, "Accept: application/json, text/event-stream");
  if (!token_.empty()) {
    headers = curl_slist_append(headers, absl::StrCat("Authorization: Bearer ", token_).c_str());
  }
  if (!session_id_.empty()) {
    headers = curl_slist_append(headers, absl::StrCat("Mcp-Session-Id: ", session_id_).c_str());
  }
  if (!protocol_version_.empty()) {
    headers = curl_slist_append(headers,
                                absl::StrCat("MCP-Protocol-Version: ", protocol_version_).c_str());
  }
  const int64_t timeout_ms =
      std::max<int64_t>(1, absl::ToInt64Milliseconds(deadline - absl::Now()));
  curl_easy_setopt(curl, CURLOPT_URL, url_.c_str());
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);  // only the configured URL
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_POSTFIELDS, message.data());
  curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, static_cast<long>(message.size()));
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, OnHeader);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &response);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, OnBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &response);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout_ms));
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(std::min<int64_t>(timeout_ms, 10000)));
  curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, OnProgress);
  curl_easy_setopt(curl, CURLOPT_XFERINFODATA, &deadline);
  curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  const CURLcode code = curl_easy_perform(curl);
  long http_status = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &http_status);
  curl_easy_cleanup(curl);
  curl_slist_free_all(headers);
  if (!response.session_id.empty() && session_id_.empty()) session_id_ = response.session_id;
  if (!response.overflow.empty()) {
    // A flood: what it queued is dropped with the connection, and the call fails.
    queue_.clear();
    last_timed_out_ = false;
    return absl::ResourceExhaustedError(response.overflow);
  }
  if (response.sse) response.EndEvent();  // a last event without its blank line

  last_timed_out_ = false;
  if (code == CURLE_OPERATION_TIMEDOUT || code == CURLE_ABORTED_BY_CALLBACK) {
    // What arrived before the deadline stays queued; the caller cancels the rest.
    last_timed_out_ = true;
    return response.saw_reply ? absl::OkStatus()
                              : absl::DeadlineExceededError("the server did not answer in time");
  }
  if (code != CURLE_OK) {
    return absl::UnavailableError(absl::StrCat("POST ", url_, ": ", curl_easy_strerror(code)));
  }
  if (http_status == 202 || http_status == 204) return absl::OkStatus();
  if (http_status < 200 || http_status >= 300) {
    return absl::UnavailableError(absl::StrCat(
        "POST ", url_, ": HTTP ", http_status,
        http_status == 401 || http_status == 403 ? " (is the token in token_file right?)" : "",
        http_status == 404 && !session_id_.empty() ? " (the server ended the session)" : ""));
  }
  if (!response.sse) {
    if (response.body_too_large) {
      response.TooLarge(response.body_bytes);
    } else if (!response.body.empty()) {
      // A JSON body: one message, or a batch of them (the client parses and splits it).
      response.Deliver(std::move(response.body));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> HttpTransport::Receive(absl::Time deadline) {
  if (!queue_.empty()) {
    absl::StatusOr<std::string> next = std::move(queue_.front());
    queue_.pop_front();
    return next;
  }
  if (last_timed_out_ || absl::Now() >= deadline) {
    return absl::DeadlineExceededError("no message from the server before the deadline");
  }
  return absl::UnavailableError("the server's response ended without a reply");
}

void HttpTransport::Close() {
  if (session_id_.empty()) return;
  CURL* curl = curl_easy_init();
  if (curl == nullptr) return;
  struct curl_slist* headers = nullptr;
  if (!token_.empty()) {
    headers = curl_slist_append(headers, absl::StrCat("Authorization: Bearer ", token_).c_str());
  }
  headers = curl_slist_append(headers, absl::StrCat("Mcp-Session-Id: ", session_id_).c_str());
  if (!protocol_version_.empty()) {
    headers = curl_slist_append(headers,
                                absl::StrCat("MCP-Protocol-Version: ", protocol_version_).c_str());
  }
  curl_easy_setopt(curl, CURLOPT_URL, url_.c_str());
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, "DELETE");
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, 2000L);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(
      curl, CURLOPT_WRITEFUNCTION, +[](char*, size_t s, size_t n, void*) { return s * n; });
  curl_easy_perform(curl);
  curl_easy_cleanup(curl);
  curl_slist_free_all(headers);
  session_id_.clear();
}

}  // namespace rein
