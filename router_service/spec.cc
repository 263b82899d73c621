// NormalizeSpec: validation of a client's RunSpec and its defaults.
#include "router_service/spec.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "common/limits.h"
#include "common/proto_time.h"
#include "common/status_macros.h"
#include "google/protobuf/descriptor.h"
#include "router_service/children/child_group.h"

namespace rein {
namespace {

using rein::v1::RunSpec;
using rein::v1::ToolSpec;

absl::Status CheckDuration(const google::protobuf::Duration& d, const std::string& field,
                           absl::Duration max) {
  if (!IsValidProtoDuration(d) || FromProtoDuration(d) <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": must be a positive duration"));
  }
  // Compare seconds first: converting a huge value to nanoseconds would overflow.
  if (d.seconds() > absl::ToInt64Seconds(max) || FromProtoDuration(d) > max) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": must be at most ", absl::FormatDuration(max)));
  }
  return absl::OkStatus();
}

absl::Status CheckRange(int64_t value, int64_t lo, int64_t hi, const std::string& field) {
  if (value < lo || value > hi) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": ", value, " is out of range [", lo, ", ", hi, "]"));
  }
  return absl::OkStatus();
}

absl::Status NotFinite(const std::string& field, double value) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": must be a finite number, got ", value));
}

}  // namespace

absl::Status CheckFiniteNumbers(const google::protobuf::Message& message, const std::string& path) {
  using google::protobuf::FieldDescriptor;
  const google::protobuf::Reflection* reflection = message.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  reflection->ListFields(message, &fields);
  for (const FieldDescriptor* field : fields) {
    const std::string name = absl::StrCat(path, ".", field->name());
    const int n = field->is_repeated() ? reflection->FieldSize(message, field) : 1;
    for (int i = 0; i < n; ++i) {
      const std::string at =
          field->is_repeated() && !field->is_map() ? absl::StrCat(name, "[", i, "]") : name;
      switch (field->cpp_type()) {
        case FieldDescriptor::CPPTYPE_DOUBLE: {
          const double v = field->is_repeated() ? reflection->GetRepeatedDouble(message, field, i)
                                                : reflection->GetDouble(message, field);
          if (!std::isfinite(v)) return NotFinite(at, v);
          break;
        }
        case FieldDescriptor::CPPTYPE_FLOAT: {
          const float v = field->is_repeated() ? reflection->GetRepeatedFloat(message, field, i)
                                               : reflection->GetFloat(message, field);
          if (!std::isfinite(v)) return NotFinite(at, v);
          break;
        }
        case FieldDescriptor::CPPTYPE_MESSAGE: {
          const google::protobuf::Message& sub =
              field->is_repeated() ? reflection->GetRepeatedMessage(message, field, i)
                                   : reflection->GetMessage(message, field);
          RETURN_IF_ERROR(CheckFiniteNumbers(sub, at));
          break;
        }
        default: break;
      }
    }
  }
  return absl::OkStatus();
}

absl::Status NormalizeLimits(rein::v1::Limits* limits, const std::string& path) {
  auto field = [&path](absl::string_view name) { return absl::StrCat(path, ".", name); };
  RETURN_IF_ERROR(CheckFiniteNumbers(*limits, path));
  if (limits->max_iterations() == 0) limits->set_max_iterations(50);
  RETURN_IF_ERROR(CheckRange(limits->max_iterations(), 1, 100000, field("max_iterations")));
  if (!limits->has_deadline()) *limits->mutable_deadline() = ToProtoDuration(absl::Minutes(10));
  RETURN_IF_ERROR(CheckDuration(limits->deadline(), field("deadline"), absl::Hours(24 * 7)));
  if (!limits->has_stage_timeout()) {
    *limits->mutable_stage_timeout() = ToProtoDuration(absl::Seconds(120));
  }
  RETURN_IF_ERROR(CheckDuration(limits->stage_timeout(), field("stage_timeout"), absl::Hours(1)));
  if (limits->retry_budget() == 0) limits->set_retry_budget(5);
  if (limits->retry_budget() == -1) limits->set_retry_budget(0);
  RETURN_IF_ERROR(CheckRange(limits->retry_budget(), 0, 1000, field("retry_budget")));
  if (limits->max_consecutive_tool_failures() == 0) limits->set_max_consecutive_tool_failures(3);
  RETURN_IF_ERROR(CheckRange(limits->max_consecutive_tool_failures(), 1, 1000,
                             field("max_consecutive_tool_failures")));
  if (limits->stagnation_window() == 0) limits->set_stagnation_window(4);
  RETURN_IF_ERROR(CheckRange(limits->stagnation_window(), 2, 100, field("stagnation_window")));
  if (!rein::v1::OnStagnation_IsValid(limits->on_stagnation())) {
    return absl::InvalidArgumentError(absl::StrCat(field("on_stagnation"), ": unknown value ",
                                                   static_cast<int>(limits->on_stagnation())));
  }
  if (limits->on_stagnation() == rein::v1::ON_STAGNATION_UNSPECIFIED) {
    limits->set_on_stagnation(rein::v1::REPLAN_THEN_PAUSE);
  }
  if (limits->token_budget() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(field("token_budget"), ": must be >= 0 (0 = no budget)"));
  }
  if (!(limits->cost_budget_usd() >= 0)) {  // finite: checked above
    return absl::InvalidArgumentError(
        absl::StrCat(field("cost_budget_usd"), ": must be >= 0 US dollars (0 = no budget), got ",
                     limits->cost_budget_usd()));
  }
  if (limits->action_window() == 0) limits->set_action_window(20);
  RETURN_IF_ERROR(CheckRange(limits->action_window(), 1, 1000, field("action_window")));
  if (limits->action_window() < limits->stagnation_window()) {
    limits->set_action_window(std::max(limits->stagnation_window(), 6));
  }
  return absl::OkStatus();
}

absl::StatusOr<RunSpec> NormalizeSpec(const RunSpec& in, const std::vector<ToolSpec>& known_tools) {
  RunSpec spec = in;
  std::string goal(absl::StripAsciiWhitespace(spec.goal()));
  if (goal.empty()) return absl::InvalidArgumentError("spec.goal: required, must not be empty");
  if (spec.goal().size() > kMaxTextBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("spec.goal: ", spec.goal().size(), " bytes, at most ", kMaxTextBytes));
  }
  RETURN_IF_ERROR(CheckFiniteNumbers(spec, "spec"));
  if (spec.workspace().empty()) spec.set_workspace("default");
  RETURN_IF_ERROR(CheckWorkspaceName(spec.workspace(), "spec.workspace"));
  std::set<std::string> names;
  for (int i = 0; i < spec.tools_size(); ++i) {
    const std::string& name = spec.tools(i);
    bool known = std::any_of(known_tools.begin(), known_tools.end(),
                             [&](const ToolSpec& t) { return t.name() == name; });
    if (!known) {
      std::vector<std::string> all;
      for (const ToolSpec& t : known_tools) all.push_back(t.name());
      return absl::InvalidArgumentError(absl::StrCat("spec.tools[", i, "]: unknown tool \"", name,
                                                     "\" (known: ", absl::StrJoin(all, ", "), ")"));
    }
    if (!names.insert(name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("spec.tools[", i, "]: \"", name, "\" is listed twice"));
    }
  }
  RETURN_IF_ERROR(NormalizeLimits(spec.mutable_limits(), "spec.limits"));
  RETURN_IF_ERROR(NormalizeChildLimits(&spec));  // max_children, max_parallel_children, max_depth
  std::set<int> points;
  for (int i = 0; i < spec.pause_points_size(); ++i) {
    int point = spec.pause_points(i);
    if (!rein::v1::PausePoint_IsValid(point) || point == rein::v1::PAUSE_POINT_UNSPECIFIED) {
      return absl::InvalidArgumentError(
          absl::StrCat("spec.pause_points[", i, "]: unknown pause point ", point));
    }
    if (!points.insert(point).second) {
      return absl::InvalidArgumentError(absl::StrCat("spec.pause_points[", i, "]: listed twice"));
    }
  }
  if (spec.model().max_tokens() < 0 || spec.model().max_tokens() > 128000) {
    return absl::InvalidArgumentError("spec.model.max_tokens: must be in [0, 128000]");
  }
  if (spec.model().has_temperature() &&
      !(spec.model().temperature() >= 0 && spec.model().temperature() <= 1)) {
    return absl::InvalidArgumentError("spec.model.temperature: must be in [0, 1]");
  }
  if (spec.model().model().size() > 256) {
    return absl::InvalidArgumentError("spec.model.model: at most 256 bytes");
  }
  if (spec.labels_size() > 32) {
    return absl::InvalidArgumentError("spec.labels: at most 32 labels");
  }
  for (const auto& [key, value] : spec.labels()) {
    if (key.empty() || key.size() > 63) {
      return absl::InvalidArgumentError("spec.labels: keys must be 1..63 bytes");
    }
    if (value.size() > 256) {
      return absl::InvalidArgumentError(
          absl::StrCat("spec.labels[", key, "]: value longer than 256 bytes"));
    }
  }
  return spec;
}

absl::Status CheckRunId(const std::string& run_id) {
  if (run_id.empty()) return absl::InvalidArgumentError("run_id: required");
  if (run_id.size() > 128) return absl::InvalidArgumentError("run_id: at most 128 bytes");
  return absl::OkStatus();
}

absl::Status CheckListRuns(const rein::v1::ListRunsRequest& request) {
  if (!rein::v1::Stage_IsValid(request.stage())) {
    return absl::InvalidArgumentError(
        absl::StrCat("stage: unknown stage ", static_cast<int>(request.stage())));
  }
  if (!rein::v1::TerminationReason_IsValid(request.outcome())) {
    return absl::InvalidArgumentError(
        absl::StrCat("outcome: unknown termination reason ", static_cast<int>(request.outcome())));
  }
  if (request.page_size() < 0 || request.page_size() > 1000) {
    return absl::InvalidArgumentError("page_size: must be in [0, 1000] (0 = 50)");
  }
  return absl::OkStatus();
}

namespace {

// A caller's request_id: at most 128 bytes, not the router's children's prefix.
absl::Status CheckRequestId(const std::string& request_id) {
  if (request_id.size() > 128) return absl::InvalidArgumentError("request_id: at most 128 bytes");
  if (absl::StartsWith(request_id, kChildRequestIdPrefix)) {
    return absl::InvalidArgumentError(absl::StrCat("request_id: the prefix \"",
                                                   kChildRequestIdPrefix,
                                                   "\" is reserved for the router's child runs"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckStartRun(const rein::v1::StartRunRequest& request) {
  RETURN_IF_ERROR(CheckRequestId(request.request_id()));
  if (!request.has_spec()) return absl::InvalidArgumentError("spec: required");
  if (request.spec().has_parent()) {
    return absl::InvalidArgumentError("spec.parent: set by the router on child runs only");
  }
  return absl::OkStatus();
}

absl::Status CheckForkRun(const rein::v1::ForkRunRequest& request) {
  RETURN_IF_ERROR(CheckRunId(request.run_id()));
  RETURN_IF_ERROR(CheckRequestId(request.request_id()));
  if (request.at_case() == rein::v1::ForkRunRequest::AT_NOT_SET) {
    return absl::InvalidArgumentError("at: one of at.iteration or at.seq is required");
  }
  return absl::OkStatus();
}

}  // namespace rein
