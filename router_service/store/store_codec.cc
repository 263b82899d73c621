// What the RunStore implementations share: timestamps and ListRuns page tokens.
#include "router_service/store/store_codec.h"

#include <algorithm>
#include <climits>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/proto_time.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/wire_format_lite.h"

namespace rein {
namespace {

// FNV-1a, 64 bits: a check that a page token was made here, not a secret.
uint64_t Fnv1a64(absl::string_view data) {
  uint64_t hash = 14695981039346656037ull;
  for (unsigned char c : data) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return hash;
}

}  // namespace

absl::StatusOr<int64_t> TimestampMicros(const google::protobuf::Timestamp& ts,
                                        absl::string_view field) {
  if (!IsValidProtoTime(ts)) {
    return absl::InvalidArgumentError(absl::StrCat(field, " is not a valid timestamp (seconds ",
                                                   ts.seconds(), ", nanos ", ts.nanos(), ")"));
  }
  return ts.seconds() * 1000000 + ts.nanos() / 1000;
}

absl::StatusOr<google::protobuf::Timestamp> ToTimestamp(absl::Time t, absl::string_view field) {
  if (t < absl::FromUnixSeconds(kMinTimestampSeconds) ||
      t >= absl::FromUnixSeconds(kMaxTimestampSeconds + 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, " is outside the range of a timestamp: ", absl::FormatTime(t)));
  }
  return ToProtoTime(t);
}

namespace {

// The check of a token's payload, bound to the filter's namespace (when it has one), so that a
// token made for one namespace's list is refused for another's.
uint64_t TokenCheck(const RunFilter& filter, absl::string_view payload) {
  if (filter.namespace_name.empty()) return Fnv1a64(payload);
  return Fnv1a64(absl::StrCat(payload, "|ns=", filter.namespace_name));
}

}  // namespace

// Token text: "<check hex>|1|<stage>|<reason>|<created_us>|<run_id>", base64 (web-safe).
std::string MakePageToken(const RunFilter& filter, const Cursor& cursor) {
  const std::string payload =
      absl::StrCat("1|", static_cast<int>(filter.stage), "|", static_cast<int>(filter.outcome), "|",
                   cursor.created_us, "|", cursor.run_id);
  return absl::WebSafeBase64Escape(
      absl::StrCat(absl::Hex(TokenCheck(filter, payload), absl::kZeroPad16), "|", payload));
}

absl::StatusOr<Cursor> ParsePageToken(const RunFilter& filter, const std::string& token) {
  const absl::Status not_ours =
      absl::InvalidArgumentError("page_token is not a token returned by ListRuns");
  std::string text;
  if (!absl::WebSafeBase64Unescape(token, &text)) return not_ours;
  std::vector<absl::string_view> parts = absl::StrSplit(text, absl::MaxSplits('|', 5));
  if (parts.size() != 6 || parts[0].size() != 16) return not_ours;
  const absl::string_view payload = absl::string_view(text).substr(17);
  uint64_t check = 0;
  if (!absl::SimpleHexAtoi(parts[0], &check) || check != TokenCheck(filter, payload))
    return not_ours;
  int stage = 0;
  int reason = 0;
  Cursor cursor;
  if (parts[1] != "1" || !absl::SimpleAtoi(parts[2], &stage) ||
      !absl::SimpleAtoi(parts[3], &reason) || !absl::SimpleAtoi(parts[4], &cursor.created_us) ||
      parts[5].empty()) {
    return not_ours;
  }
  if (stage != static_cast<int>(filter.stage) || reason != static_cast<int>(filter.outcome)) {
    return absl::InvalidArgumentError(
        "page_token was made for a different filter; start again without a page_token");
  }
  cursor.run_id = std::string(parts[5]);
  return cursor;
}

absl::Status CheckRouterLease(absl::string_view router_id, absl::Duration ttl) {
  if (router_id.empty() || router_id.size() > 128) {
    return absl::InvalidArgumentError("router_id: must be 1 to 128 bytes");
  }
  for (char c : router_id) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != ':' &&
        c != '-') {
      return absl::InvalidArgumentError(absl::StrCat("router_id: \"", absl::CHexEscape(router_id),
                                                     "\" has a character outside [A-Za-z0-9._:-]"));
    }
  }
  if (ttl <= absl::ZeroDuration() || ttl > absl::Hours(24)) {
    return absl::InvalidArgumentError(
        absl::StrCat("lease ttl: must be in (0, 24h], not ", absl::FormatDuration(ttl)));
  }
  return absl::OkStatus();
}

absl::StatusOr<StoredRunParts> SplitRun(const rein::v1::Run& run) {
  StoredRunParts parts;
  absl::StatusOr<int64_t> created = TimestampMicros(run.created_at(), "run.created_at");
  if (!created.ok()) return created.status();
  absl::StatusOr<int64_t> updated = TimestampMicros(run.updated_at(), "run.updated_at");
  if (!updated.ok()) return updated.status();
  parts.created_us = *created;
  parts.updated_us = *updated;
  rein::v1::Run base = run;
  base.clear_state();
  base.clear_updated_at();
  // Who owns the run changes with takeovers: the stores keep it in columns of their own.
  base.clear_owner();
  base.clear_lease_epoch();
  absl::StatusOr<std::string> tail = StateTail(run.state(), run.updated_at());
  if (!base.SerializeToString(&parts.base) || !tail.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("run ", run.run_id(), " cannot be serialized (too large)"));
  }
  parts.tail = *std::move(tail);
  return parts;
}

int64_t OwnTokens(const rein::v1::RunState& state) {
  return std::max<int64_t>(0, state.tokens_used() - state.inherited_tokens());
}

double OwnCostUsd(const rein::v1::RunState& state) {
  return std::max(0.0, state.cost_used_usd() - state.inherited_cost_usd());
}

absl::StatusOr<std::string> StateTail(const rein::v1::RunState& state,
                                      const google::protobuf::Timestamp& updated_at) {
  // The bytes of a Run holding only `state` (field 4) and `updated_at` (field 6), as
  // Run::SerializeToString writes them, without copying the state into a Run first (this runs
  // on every commit).
  using google::protobuf::internal::WireFormatLite;
  const size_t state_size = state.ByteSizeLong();
  const size_t time_size = updated_at.ByteSizeLong();
  if (state_size > static_cast<size_t>(INT_MAX / 2)) {
    return absl::InvalidArgumentError("the run's state cannot be serialized (too large)");
  }
  std::string out;
  out.reserve(state_size + time_size + 16);
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    WireFormatLite::WriteTag(rein::v1::Run::kStateFieldNumber,
                             WireFormatLite::WIRETYPE_LENGTH_DELIMITED, &coded);
    coded.WriteVarint32(static_cast<uint32_t>(state_size));
    state.SerializeWithCachedSizes(&coded);
    WireFormatLite::WriteTag(rein::v1::Run::kUpdatedAtFieldNumber,
                             WireFormatLite::WIRETYPE_LENGTH_DELIMITED, &coded);
    coded.WriteVarint32(static_cast<uint32_t>(time_size));
    updated_at.SerializeWithCachedSizes(&coded);
    if (coded.HadError()) {
      return absl::InvalidArgumentError("the run's state cannot be serialized");
    }
  }
  return out;
}

}  // namespace rein

namespace rein {

std::string NoticeId(absl::string_view run_id, int64_t seq) {
  return absl::StrCat(run_id, ".", seq);
}

absl::Status DecodeNotification(absl::string_view event, absl::string_view state_tail,
                                absl::string_view where, Notification* n) {
  rein::v1::Run tail;
  if (!n->event.ParseFromArray(event.data(), static_cast<int>(event.size())) ||
      !tail.ParseFromArray(state_tail.data(), static_cast<int>(state_tail.size()))) {
    return absl::DataLossError(
        absl::StrCat(where, ": the stored notice ", n->notice_id, " is corrupt"));
  }
  n->event.set_run_id(n->run_id);
  n->event.set_seq(n->seq);
  n->state = std::move(*tail.mutable_state());
  return absl::OkStatus();
}

std::string JoinEndpoints(const std::vector<std::string>& endpoints) {
  return absl::StrJoin(endpoints, "\n");
}

std::vector<std::string> SplitEndpoints(absl::string_view stored) {
  return absl::StrSplit(stored, '\n', absl::SkipEmpty());
}

}  // namespace rein
