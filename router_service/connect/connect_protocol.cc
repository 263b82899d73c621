// The Connect protocol's wire pieces.
#include "router_service/connect/connect_protocol.h"

#include "absl/algorithm/container.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace rein::connect {
namespace {

nlohmann::json ErrorObject(const absl::Status& status) {
  nlohmann::json error = {{"code", CodeName(status.code())}};
  if (!status.message().empty()) error["message"] = std::string(status.message());
  return error;
}

// Strict UTF-8 is not guaranteed in a status message: replace what is not valid.
std::string Dump(const nlohmann::json& json) {
  return json.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

absl::StatusOr<ContentType> ParseContentType(absl::string_view header) {
  const std::string media =
      absl::AsciiStrToLower(absl::StripAsciiWhitespace(header.substr(0, header.find(';'))));
  if (media == "application/json") return ContentType{Codec::kJson, false};
  if (media == "application/proto") return ContentType{Codec::kProto, false};
  if (media == "application/connect+json") return ContentType{Codec::kJson, true};
  if (media == "application/connect+proto") return ContentType{Codec::kProto, true};
  return absl::InvalidArgumentError(
      absl::StrCat("Content-Type: \"", header.substr(0, 100),
                   "\" is not served; use application/json or application/proto for unary methods, "
                   "application/connect+json or application/connect+proto for streaming ones"));
}

std::string ContentTypeName(const ContentType& type) {
  const char* codec = type.codec == Codec::kJson ? "json" : "proto";
  return absl::StrCat(type.streaming ? "application/connect+" : "application/", codec);
}

std::string CodeName(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kOk: return "ok";
    case absl::StatusCode::kCancelled: return "canceled";  // Connect's spelling
    default: return absl::AsciiStrToLower(absl::StatusCodeToString(code));
  }
}

int HttpStatusOf(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kCancelled: return 499;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kOutOfRange: return 400;
    case absl::StatusCode::kDeadlineExceeded: return 504;
    case absl::StatusCode::kNotFound: return 404;
    case absl::StatusCode::kAlreadyExists:
    case absl::StatusCode::kAborted: return 409;
    case absl::StatusCode::kPermissionDenied: return 403;
    case absl::StatusCode::kResourceExhausted: return 429;
    case absl::StatusCode::kUnimplemented: return 501;
    case absl::StatusCode::kUnavailable: return 503;
    case absl::StatusCode::kUnauthenticated: return 401;
    default: return 500;
  }
}

std::string ErrorJson(const absl::Status& status) { return Dump(ErrorObject(status)); }

std::string Envelope(uint8_t flags, absl::string_view payload) {
  const uint32_t size = static_cast<uint32_t>(payload.size());
  std::string out;
  out.reserve(5 + payload.size());
  out.push_back(static_cast<char>(flags));
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>(size >> shift));
  out.append(payload.data(), payload.size());
  return out;
}

std::string EndStreamJson(const absl::Status& status) {
  if (status.ok()) return "{}";
  return Dump(nlohmann::json{{"error", ErrorObject(status)}});
}

absl::StatusOr<std::string> SingleEnvelopePayload(absl::string_view body) {
  if (body.size() < 5) {
    return absl::InvalidArgumentError(absl::StrCat(
        "request body: ", body.size(),
        " bytes, shorter than one Connect envelope (1 flags byte, 4 length bytes, message)"));
  }
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(body[i]); };
  const uint8_t flags = byte(0);
  const uint32_t size = (uint32_t{byte(1)} << 24) | (uint32_t{byte(2)} << 16) |
                        (uint32_t{byte(3)} << 8) | uint32_t{byte(4)};
  if ((flags & ~kEnvelopeCompressed) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "request envelope: flags 0x", absl::Hex(flags),
        ", expected 0 (is the body a bare message? a stream's messages go in envelopes)"));
  }
  if (flags & kEnvelopeCompressed) {
    return absl::UnimplementedError(
        "request envelope: compressed, and no Connect-Content-Encoding is accepted");
  }
  if (body.size() - 5 != size) {
    return absl::InvalidArgumentError(absl::StrCat(
        "request body: one envelope of ", size, " bytes expected, got ", body.size() - 5,
        " bytes after its header (a server-streaming method "
        "takes exactly one request message)"));
  }
  return std::string(body.substr(5));
}

absl::StatusOr<std::optional<absl::Duration>> ParseTimeout(const char* header) {
  if (header == nullptr) return std::optional<absl::Duration>();
  const absl::string_view text(header);
  int64_t ms = 0;
  if (text.empty() || text.size() > 10 || !absl::c_all_of(text, absl::ascii_isdigit) ||
      !absl::SimpleAtoi(text, &ms) || ms <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("Connect-Timeout-Ms: \"", text.substr(0, 20),
                     "\" is not a positive count of milliseconds of at most 10 digits"));
  }
  return std::optional<absl::Duration>(absl::Milliseconds(ms));
}

}  // namespace rein::connect
