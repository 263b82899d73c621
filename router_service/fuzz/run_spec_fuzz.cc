// Fuzz target: the Router's request validation. A RunSpec decoded from untrusted bytes (proto3
// JSON when the input starts with '{', protobuf binary otherwise) goes through
// NormalizeSpec; whatever it accepts must be within the documented limits
// (protos/rein/v1/types.proto), and normalizing it again must change nothing.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/stubs/logging.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/message_differencer.h"
#include "router_service/spec.h"

namespace {

using rein::v1::RunSpec;

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "run_spec_fuzz: invariant broken: %s\n", what);
    std::abort();
  }
}

const std::vector<rein::v1::ToolSpec>& KnownTools() {
  static const auto* const tools = [] {
    auto* t = new std::vector<rein::v1::ToolSpec>();
    for (const char* name : {"list_files", "read_file", "search_text", "file_info"}) {
      t->emplace_back().set_name(name);
    }
    for (const char* name : {"write_file", "run_command"}) {
      t->emplace_back().set_name(name);
      t->back().set_mutating(true);
    }
    return t;
  }();
  return *tools;
}

// The one place the router's validation is called (it moves to its own unit later).
absl::StatusOr<RunSpec> Normalize(const RunSpec& spec) {
  return rein::NormalizeSpec(spec, KnownTools());
}

bool InRange(int64_t v, int64_t lo, int64_t hi) { return v >= lo && v <= hi; }

bool PositiveDurationAtMost(const google::protobuf::Duration& d, int64_t max_seconds) {
  return d.seconds() >= 0 && d.nanos() >= 0 && d.nanos() <= 999999999 &&
         (d.seconds() > 0 || d.nanos() > 0) &&
         (d.seconds() < max_seconds || (d.seconds() == max_seconds && d.nanos() == 0));
}

void CheckAccepted(const RunSpec& in, const RunSpec& spec) {
  Check(!absl::StripAsciiWhitespace(spec.goal()).empty(), "goal is not empty");
  Check(spec.goal().size() <= 16 * 1024, "goal is at most 16 KiB");
  Check(spec.goal() == in.goal(), "goal is kept as given");
  const std::string& ws = spec.workspace();
  Check(!ws.empty() && ws.size() <= 255 && ws != "." && ws != ".." &&
            ws.find('/') == std::string::npos && ws.find('\0') == std::string::npos,
        "workspace is one name");
  std::set<std::string> tools;
  for (const std::string& tool : spec.tools()) {
    bool known = false;
    for (const auto& t : KnownTools()) known = known || t.name() == tool;
    Check(known, "every tool is known");
    Check(tools.insert(tool).second, "no tool is listed twice");
  }
  const rein::v1::Limits& l = spec.limits();
  Check(InRange(l.max_iterations(), 1, 100000), "max_iterations in 1..100000");
  Check(PositiveDurationAtMost(l.deadline(), 7 * 24 * 3600), "deadline in (0, 7 days]");
  Check(PositiveDurationAtMost(l.stage_timeout(), 3600), "stage_timeout in (0, 1h]");
  Check(InRange(l.retry_budget(), 0, 1000), "retry_budget in 0..1000");
  Check(InRange(l.max_consecutive_tool_failures(), 1, 1000),
        "max_consecutive_tool_failures in 1..1000");
  Check(InRange(l.stagnation_window(), 2, 100), "stagnation_window in 2..100");
  Check(rein::v1::OnStagnation_IsValid(l.on_stagnation()) &&
            l.on_stagnation() != rein::v1::ON_STAGNATION_UNSPECIFIED,
        "on_stagnation is a known value");
  Check(l.token_budget() >= 0, "token_budget >= 0");
  Check(InRange(l.action_window(), 1, 1000), "action_window in 1..1000");
  Check(l.action_window() >= l.stagnation_window(), "action_window holds the stagnation window");
  std::set<int> points;
  for (int p : spec.pause_points()) {
    Check(rein::v1::PausePoint_IsValid(p) && p != rein::v1::PAUSE_POINT_UNSPECIFIED,
          "pause points are known values");
    Check(points.insert(p).second, "no pause point is listed twice");
  }
  Check(InRange(spec.model().max_tokens(), 0, 128000), "model.max_tokens in 0..128000");
  if (spec.model().has_temperature()) {
    const double t = spec.model().temperature();
    Check(std::isfinite(t) && t >= 0 && t <= 1, "model.temperature in [0, 1], not NaN");
  }
  Check(spec.model().model().size() <= 256, "model.model at most 256 bytes");
  Check(spec.labels_size() <= 32, "at most 32 labels");
  for (const auto& [key, value] : spec.labels()) {
    Check(!key.empty() && key.size() <= 63 && value.size() <= 256, "label sizes");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // libprotobuf logs every string with invalid UTF-8; a fuzzer makes millions of them.
  static const bool quiet = (google::protobuf::SetLogHandler(nullptr), true);
  (void)quiet;
  const absl::string_view bytes(reinterpret_cast<const char*>(data), size);
  RunSpec in;
  if (!bytes.empty() && bytes.front() == '{') {
    if (!google::protobuf::util::JsonStringToMessage(
             google::protobuf::StringPiece(bytes.data(), bytes.size()), &in)
             .ok()) {
      return 0;
    }
  } else if (!in.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return 0;
  }

  const absl::StatusOr<RunSpec> spec = Normalize(in);
  if (!spec.ok()) {
    Check(spec.status().code() == absl::StatusCode::kInvalidArgument,
          "a rejected spec is INVALID_ARGUMENT");
    Check(absl::StartsWith(spec.status().message(), "spec."), "errors name the field");
    return 0;
  }
  CheckAccepted(in, *spec);

  // Normalizing again changes nothing, except one known wart: a normalized retry_budget of 0
  // means "none" (the client sent -1), but as input 0 means "the default, 5".
  absl::StatusOr<RunSpec> again = Normalize(*spec);
  Check(again.ok(), "a normalized spec is accepted again");
  if (spec->limits().retry_budget() == 0) again->mutable_limits()->set_retry_budget(0);
  Check(google::protobuf::util::MessageDifferencer::Equals(*again, *spec),
        "normalizing twice changes nothing");

  // What is stored and shown must survive both encodings (JSON has no unknown fields).
  RunSpec decoded;
  Check(decoded.ParseFromString(spec->SerializeAsString()), "binary round trip");
  RunSpec known = *spec;
  known.DiscardUnknownFields();
  std::string json;
  Check(google::protobuf::util::MessageToJsonString(known, &json).ok(), "prints as JSON");
  RunSpec from_json;
  Check(google::protobuf::util::JsonStringToMessage(json, &from_json).ok(), "JSON parses back");
  Check(google::protobuf::util::MessageDifferencer::Equals(from_json, known), "JSON round trip");
  return 0;
}
