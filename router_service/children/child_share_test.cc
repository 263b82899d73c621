#include "router_service/children/child_share.h"

#include <map>
#include <string>

#include "gtest/gtest.h"

namespace rein {
namespace {

rein::v1::RunSpec WithShare(int percent, std::map<std::string, int> weights = {}) {
  rein::v1::RunSpec spec;
  spec.mutable_child_share()->set_group_percent(percent);
  for (const auto& [id, w] : weights) (*spec.mutable_child_share()->mutable_weights())[id] = w;
  return spec;
}

TEST(ChildShareTest, UnsetSharesEquallyAllThatIsLeft) {
  rein::v1::RunSpec spec;
  EXPECT_TRUE(CheckChildShare(spec).ok());
  EXPECT_EQ(ShareWeight(spec, "a"), 1);
  EXPECT_EQ(SharePart(spec, int64_t{12}, 1, 3), 4);
  EXPECT_EQ(SharePart(spec, int64_t{13}, 1, 3), 4);
  EXPECT_DOUBLE_EQ(SharePart(spec, 3.0, 1, 3), 1.0);
}

TEST(ChildShareTest, PercentAndWeightsSplitThePool) {
  rein::v1::RunSpec spec = WithShare(50, {{"big", 3}});
  EXPECT_EQ(ShareWeight(spec, "big"), 3);
  EXPECT_EQ(ShareWeight(spec, "other"), 1);
  // Pool 50 of 100, weights 3 + 1 + 1.
  EXPECT_EQ(SharePart(spec, int64_t{100}, 3, 5), 30);
  EXPECT_EQ(SharePart(spec, int64_t{100}, 1, 5), 10);
  EXPECT_DOUBLE_EQ(SharePart(spec, 2.0, 1, 5), 0.2);
  EXPECT_EQ(SharePart(spec, int64_t{-5}, 1, 5), 0);
}

TEST(ChildShareTest, PartsNeverSumPastThePool) {
  for (int percent = 0; percent <= 100; percent += 7) {
    for (int64_t left = 0; left < 60; ++left) {
      rein::v1::RunSpec spec = WithShare(percent, {{"a", 5}, {"b", 2}});
      const int64_t sum =
          SharePart(spec, left, 5, 8) + SharePart(spec, left, 2, 8) + SharePart(spec, left, 1, 8);
      EXPECT_LE(sum, left * (percent == 0 ? 100 : percent) / 100) << percent << " " << left;
    }
  }
}

TEST(ChildShareTest, BadSharesAreRefusedNamingTheField) {
  auto message = [](const rein::v1::RunSpec& spec) {
    return std::string(CheckChildShare(spec).message());
  };
  EXPECT_NE(message(WithShare(101)).find("spec.child_share.group_percent"), std::string::npos);
  EXPECT_NE(message(WithShare(-1)).find("spec.child_share.group_percent"), std::string::npos);
  EXPECT_NE(message(WithShare(50, {{"a", 0}})).find("spec.child_share.weights[\"a\"]"),
            std::string::npos);
  EXPECT_NE(message(WithShare(50, {{"a", 101}})).find("1..100"), std::string::npos);
  EXPECT_NE(message(WithShare(50, {{"", 2}})).find("subtask id"), std::string::npos);
  std::map<std::string, int> many;
  for (int i = 0; i < 17; ++i) many["s" + std::to_string(i)] = 1;
  EXPECT_NE(message(WithShare(50, many)).find("at most 16"), std::string::npos);
  EXPECT_EQ(CheckChildShare(WithShare(50, {{"a", 100}})).code(), absl::StatusCode::kOk);
}

}  // namespace
}  // namespace rein
