// WebhookUrl: the strict parse of webhook URLs and the allow-list's prefix match.
#include "router_service/notify/webhook_url.h"

#include <curl/curl.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace rein {
namespace {

// One path segment, percent-decoded and checked.
absl::StatusOr<std::string> DecodeSegment(absl::string_view segment) {
  for (size_t i = segment.find('%'); i != absl::string_view::npos; i = segment.find('%', i + 1)) {
    if (i + 2 >= segment.size() || !absl::ascii_isxdigit(segment[i + 1]) ||
        !absl::ascii_isxdigit(segment[i + 2])) {
      return absl::InvalidArgumentError("a malformed percent-escape in the path");
    }
  }
  int length = 0;
  std::unique_ptr<char, void (*)(void*)> decoded(
      curl_easy_unescape(nullptr, segment.data(), static_cast<int>(segment.size()), &length),
      curl_free);
  if (decoded == nullptr) return absl::ResourceExhaustedError("out of memory");
  std::string out(decoded.get(), length);
  for (char c : out) {
    // An encoded '%' could become a dot segment to a server that decodes twice.
    if (c == '/' || c == '\\' || c == '%' || static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      return absl::InvalidArgumentError(
          "an encoded '/', '\\', '%' or control character in the path");
    }
  }
  // "..;x" is ".." to servers that drop path parameters.
  const absl::string_view name = absl::string_view(out).substr(0, out.find(';'));
  if (name == "." || name == "..") {
    return absl::InvalidArgumentError("a dot segment (. or ..) in the path");
  }
  return out;
}

bool IsHostChar(char c) { return absl::ascii_isalnum(c) || c == '.' || c == '-' || c == '_'; }

}  // namespace

absl::StatusOr<WebhookUrl> ParseWebhookUrl(absl::string_view url) {
  WebhookUrl out;
  absl::string_view rest = url;
  if (absl::ConsumePrefix(&rest, "https://")) {
    out.scheme = "https";
    out.port = 443;
  } else if (absl::ConsumePrefix(&rest, "http://")) {
    out.scheme = "http";
    out.port = 80;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("\"", url, "\" is not an http:// or https:// URL"));
  }
  for (char c : url) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte <= 0x20 || byte >= 0x7f || c == '\\') {
      return absl::InvalidArgumentError(
          "the URL holds whitespace, a control character, a backslash or a non-ASCII byte");
    }
  }
  if (absl::StrContains(url, '#')) {
    return absl::InvalidArgumentError("the URL must not carry a fragment (#...)");
  }
  const size_t authority_end = rest.find_first_of("/?");
  absl::string_view authority = rest.substr(0, authority_end);
  rest = authority_end == absl::string_view::npos ? "" : rest.substr(authority_end);
  if (absl::StrContains(authority, '@')) {
    return absl::InvalidArgumentError("the URL must not carry user info (user@host)");
  }
  absl::string_view host = authority;
  absl::string_view port;
  if (absl::StartsWith(authority, "[")) {  // an IPv6 literal
    const size_t close = authority.find(']');
    if (close == absl::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrCat("\"", url, "\" has a bad host"));
    }
    host = authority.substr(0, close + 1);
    absl::string_view after = authority.substr(close + 1);
    if (!after.empty() && !absl::ConsumePrefix(&after, ":")) {
      return absl::InvalidArgumentError(absl::StrCat("\"", url, "\" has a bad host"));
    }
    port = after;
    for (char c : host.substr(1, host.size() - 2)) {
      if (!absl::ascii_isxdigit(c) && c != ':' && c != '.') {
        return absl::InvalidArgumentError(absl::StrCat("\"", url, "\" has a bad host"));
      }
    }
    if (host.size() == 2 || (authority.size() > close + 1 && port.empty())) {
      return absl::InvalidArgumentError(absl::StrCat("\"", url, "\" has a bad host or port"));
    }
  } else {
    const size_t colon = authority.find(':');
    if (colon != absl::string_view::npos) {
      host = authority.substr(0, colon);
      port = authority.substr(colon + 1);
      if (port.empty()) {
        return absl::InvalidArgumentError(absl::StrCat("\"", url, "\" has an empty port"));
      }
    }
    for (char c : host) {
      if (!IsHostChar(c)) {
        return absl::InvalidArgumentError(absl::StrCat("\"", url, "\" has a bad host"));
      }
    }
  }
  if (host.empty()) return absl::InvalidArgumentError(absl::StrCat("\"", url, "\" has no host"));
  out.host = absl::AsciiStrToLower(host);
  if (!port.empty()) {
    int number = 0;
    for (char c : port) {
      if (!absl::ascii_isdigit(c)) number = -1;
    }
    if (number < 0 || port.size() > 5 || !absl::SimpleAtoi(port, &number) || number < 1 ||
        number > 65535) {
      return absl::InvalidArgumentError(absl::StrCat("\"", url, "\" has a bad port"));
    }
    out.port = number;
  }
  const size_t query = rest.find('?');
  absl::string_view path = rest.substr(0, query);
  if (query != absl::string_view::npos) out.query = std::string(rest.substr(query + 1));
  if (absl::ConsumePrefix(&path, "/") && !path.empty()) {
    std::vector<absl::string_view> parts = absl::StrSplit(path, '/');
    if (parts.back().empty()) parts.pop_back();  // a trailing '/'
    for (absl::string_view part : parts) {
      if (part.empty()) return absl::InvalidArgumentError("an empty segment (//) in the path");
      absl::StatusOr<std::string> segment = DecodeSegment(part);
      if (!segment.ok()) return segment.status();
      out.segments.push_back(*std::move(segment));
    }
  }
  return out;
}

bool IsUnderPrefix(const WebhookUrl& url, const WebhookUrl& prefix) {
  if (url.scheme != prefix.scheme || url.host != prefix.host || url.port != prefix.port) {
    return false;
  }
  if (url.segments.size() < prefix.segments.size()) return false;
  for (size_t i = 0; i < prefix.segments.size(); ++i) {
    if (url.segments[i] != prefix.segments[i]) return false;
  }
  return prefix.query.empty() ||
         (url.query == prefix.query && url.segments.size() == prefix.segments.size());
}

std::string WebhookOrigin(absl::string_view url) {
  const size_t scheme = url.find("://");
  if (scheme == absl::string_view::npos) return "(url)";
  const size_t end = url.find_first_of("/?#", scheme + 3);
  return end == absl::string_view::npos ? std::string(url)
                                        : absl::StrCat(url.substr(0, end), "/...");
}

}  // namespace rein
