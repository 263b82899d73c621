// ChildShare: how a group's children share what their parent has left (RunSpec.child_share):
// the pool (group_percent of what is left) split in proportion to each child's weight.
#ifndef REIN_ROUTER_SERVICE_CHILDREN_CHILD_SHARE_H_
#define REIN_ROUTER_SERVICE_CHILDREN_CHILD_SHARE_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "rein/v1/types.pb.h"

namespace rein {

// Bounds of RunSpec.child_share.
inline constexpr int kMaxShareWeights = 16;
inline constexpr int kMaxShareWeight = 100;
inline constexpr size_t kMaxShareIdBytes = 64;

// Checks spec.child_share: group_percent 0..100, at most 16 weights, ids 1..64 bytes, weights
// 1..100. INVALID_ARGUMENT naming spec.child_share.<field>.
absl::Status CheckChildShare(const rein::v1::RunSpec& spec);

// The weight of the child that runs the delegated subtask `subtask_id` (1 when not listed).
int ShareWeight(const rein::v1::RunSpec& spec, const std::string& subtask_id);

// One child's part of `left`: left x group_percent / 100 x weight / total_weight, rounded
// down, so the parts of a group never sum past the pool nor the pool past `left`.
int64_t SharePart(const rein::v1::RunSpec& spec, int64_t left, int weight, int total_weight);
double SharePart(const rein::v1::RunSpec& spec, double left, int weight, int total_weight);

}  // namespace rein

#endif  // REIN_ROUTER_SERVICE_CHILDREN_CHILD_SHARE_H_
