// The Connect protocol's wire pieces (connectrpc.com/docs/protocol): code names, HTTP statuses,
// the error JSON, stream envelopes, Connect-Timeout-Ms. Pure: no HTTP server, no gRPC.
#ifndef REIN_ROUTER_SERVICE_CONNECT_CONNECT_PROTOCOL_H_
#define REIN_ROUTER_SERVICE_CONNECT_CONNECT_PROTOCOL_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace rein::connect {

// How a request's messages are encoded, from its Content-Type.
enum class Codec { kJson, kProto };

// What a Content-Type asks for: a unary call (application/json, application/proto) or a
// streaming one (application/connect+json, application/connect+proto). Parameters such as
// "; charset=utf-8" are ignored.
struct ContentType {
  Codec codec = Codec::kJson;
  bool streaming = false;
};

// The Content-Type, or INVALID_ARGUMENT naming the ones served.
absl::StatusOr<ContentType> ParseContentType(absl::string_view header);

// The Content-Type a reply of `type` carries.
std::string ContentTypeName(const ContentType& type);

// Connect's name of a code: the gRPC name in lower snake case ("invalid_argument").
std::string CodeName(absl::StatusCode code);

// The HTTP status of a unary error with `code` (Connect's table: not_found 404,
// unauthenticated 401, permission_denied 403, resource_exhausted 429, ...).
int HttpStatusOf(absl::StatusCode code);

// The error's JSON: {"code":"not_found","message":"..."} (no message when empty). The status
// must not be OK.
std::string ErrorJson(const absl::Status& status);

// Flags of a stream envelope.
inline constexpr uint8_t kEnvelopeCompressed = 0x01;
inline constexpr uint8_t kEnvelopeEndStream = 0x02;

// One envelope: the flags byte, the payload's size (4 bytes, big-endian), the payload.
std::string Envelope(uint8_t flags, absl::string_view payload);

// The end-of-stream message: {} on success, {"error":{...}} otherwise.
std::string EndStreamJson(const absl::Status& status);

// The payload of a request stream that must hold exactly one uncompressed message envelope
// (a server-streaming call's request), or INVALID_ARGUMENT saying what is wrong with it.
absl::StatusOr<std::string> SingleEnvelopePayload(absl::string_view body);

// Connect-Timeout-Ms: absent (nullopt), or a positive count of at most 10 digits; anything
// else is INVALID_ARGUMENT.
absl::StatusOr<std::optional<absl::Duration>> ParseTimeout(const char* header);

}  // namespace rein::connect

#endif  // REIN_ROUTER_SERVICE_CONNECT_CONNECT_PROTOCOL_H_
