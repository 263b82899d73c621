// W3C Trace Context: trace and span ids, and the `traceparent` header that carries them.
#include "trace/span_context.h"

#include <cstdint>
#include <vector>

#include "absl/random/random.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace rein::trace {
namespace {

bool AllZero(absl::string_view bytes) {
  for (char c : bytes) {
    if (c != 0) return false;
  }
  return true;
}

bool IsLowerHex(absl::string_view s) {
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

// Lowercase hex of exactly `bytes` bytes, not all zeros, to raw bytes; "" otherwise.
std::string FromHex(absl::string_view hex, size_t bytes) {
  if (hex.size() != 2 * bytes || !IsLowerHex(hex)) return "";
  std::string raw = absl::HexStringToBytes(hex);
  return AllZero(raw) ? "" : raw;
}

std::string RandomBytes(size_t n) {
  thread_local absl::BitGen gen;
  std::string out(n, '\0');
  while (AllZero(out)) {
    for (size_t i = 0; i < n; i += 8) {
      uint64_t word = absl::Uniform<uint64_t>(gen);
      for (size_t j = 0; j < 8 && i + j < n; ++j) out[i + j] = static_cast<char>(word >> (8 * j));
    }
  }
  return out;
}

}  // namespace

bool SpanContext::valid() const {
  return trace_id.size() == 16 && span_id.size() == 8 && !AllZero(trace_id) && !AllZero(span_id);
}

std::string SpanContext::trace_id_hex() const { return ToHex(trace_id); }
std::string SpanContext::span_id_hex() const { return ToHex(span_id); }

std::string ToHex(absl::string_view bytes) { return absl::BytesToHexString(bytes); }

std::optional<SpanContext> ParseTraceparent(absl::string_view header) {
  std::vector<absl::string_view> parts = absl::StrSplit(header, '-');
  if (parts.size() < 4) return std::nullopt;
  const absl::string_view version = parts[0];
  if (version.size() != 2 || !IsLowerHex(version) || version == "ff") return std::nullopt;
  // Version 00 has exactly four parts; a later version may add some after the flags.
  if (version == "00" && parts.size() != 4) return std::nullopt;
  if (parts[3].size() != 2 || !IsLowerHex(parts[3])) return std::nullopt;
  SpanContext context;
  context.trace_id = FromHex(parts[1], 16);
  context.span_id = FromHex(parts[2], 8);
  if (!context.valid()) return std::nullopt;
  const std::string flags = absl::HexStringToBytes(parts[3]);
  context.sampled = (static_cast<unsigned char>(flags[0]) & 0x01) != 0;
  return context;
}

std::string FormatTraceparent(const SpanContext& context) {
  return absl::StrCat("00-", context.trace_id_hex(), "-", context.span_id_hex(),
                      context.sampled ? "-01" : "-00");
}

std::optional<SpanContext> ContextFromHex(absl::string_view trace_id_hex,
                                          absl::string_view span_id_hex, bool sampled) {
  SpanContext context;
  context.trace_id = FromHex(trace_id_hex, 16);
  context.span_id = FromHex(span_id_hex, 8);
  context.sampled = sampled;
  if (!context.valid()) return std::nullopt;
  return context;
}

std::string NewTraceId() { return RandomBytes(16); }
std::string NewSpanId() { return RandomBytes(8); }

}  // namespace rein::trace
