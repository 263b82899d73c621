// ChildShare: how a group's children share what their parent has left.
#include "router_service/children/child_share.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace rein {
namespace {

int Percent(const rein::v1::RunSpec& spec) {
  const int p = spec.child_share().group_percent();
  return p <= 0 ? 100 : std::min(p, 100);
}

}  // namespace

absl::Status CheckChildShare(const rein::v1::RunSpec& spec) {
  const rein::v1::ChildShare& share = spec.child_share();
  if (share.group_percent() < 0 || share.group_percent() > 100) {
    return absl::InvalidArgumentError(absl::StrCat(
        "spec.child_share.group_percent: must be in 0..100, got ", share.group_percent()));
  }
  if (share.weights_size() > kMaxShareWeights) {
    return absl::InvalidArgumentError(absl::StrCat(
        "spec.child_share.weights: at most ", kMaxShareWeights, ", got ", share.weights_size()));
  }
  for (const auto& [id, weight] : share.weights()) {
    if (id.empty() || id.size() > kMaxShareIdBytes) {
      return absl::InvalidArgumentError(absl::StrCat(
          "spec.child_share.weights: a subtask id must be 1..", kMaxShareIdBytes, " bytes"));
    }
    if (weight < 1 || weight > kMaxShareWeight) {
      return absl::InvalidArgumentError(absl::StrCat("spec.child_share.weights[\"", id,
                                                     "\"]: must be in 1..", kMaxShareWeight,
                                                     ", got ", weight));
    }
  }
  return absl::OkStatus();
}

int ShareWeight(const rein::v1::RunSpec& spec, const std::string& subtask_id) {
  auto it = spec.child_share().weights().find(subtask_id);
  return it == spec.child_share().weights().end() ? 1 : std::max(1, it->second);
}

int64_t SharePart(const rein::v1::RunSpec& spec, int64_t left, int weight, int total_weight) {
  const int64_t pool = std::max<int64_t>(0, left) * Percent(spec) / 100;
  return pool * std::max(1, weight) / std::max(1, total_weight);
}

double SharePart(const rein::v1::RunSpec& spec, double left, int weight, int total_weight) {
  const double pool = std::max(0.0, left) * Percent(spec) / 100.0;
  return pool * std::max(1, weight) / std::max(1, total_weight);
}

}  // namespace rein
