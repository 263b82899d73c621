#include "router_service/children/child_fork.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace rein {
namespace {

std::vector<rein::v1::RunEvent> GroupLog(bool joined) {
  std::vector<rein::v1::RunEvent> events(6);
  for (size_t i = 0; i < events.size(); ++i) events[i].set_seq(static_cast<int64_t>(i + 1));
  events[3].mutable_child_group()->set_group(1);                  // seq 4
  events[4].mutable_children_started()->set_group(1);             // seq 5
  if (joined) events[5].mutable_children_joined()->set_group(1);  // seq 6
  return events;
}

TEST(ChildForkTest, OutsideAGroupIsFine) {
  rein::v1::RunState point;
  point.set_stage(rein::v1::DECIDING);
  point.set_child_groups(1);
  EXPECT_TRUE(CheckForkOutsideGroup("run-1", point, GroupLog(true)).ok());
}

TEST(ChildForkTest, InsideAGroupIsRefusedNamingWhereToForkInstead) {
  rein::v1::RunState point;
  point.set_stage(rein::v1::WAITING);
  point.set_child_groups(1);
  absl::Status joined = CheckForkOutsideGroup("run-1", point, GroupLog(true));
  EXPECT_EQ(joined.code(), absl::StatusCode::kInvalidArgument);
  const std::string m(joined.message());
  EXPECT_NE(m.find("run run-1 was WAITING for its child group 1"), std::string::npos) << m;
  EXPECT_NE(m.find("fork at seq 3 or earlier to start new children"), std::string::npos) << m;
  EXPECT_NE(m.find("at seq 6 or later to keep their joined outcomes"), std::string::npos) << m;
  const std::string waiting(CheckForkOutsideGroup("run-1", point, GroupLog(false)).message());
  EXPECT_NE(waiting.find("after the group joins"), std::string::npos) << waiting;
}

}  // namespace
}  // namespace rein
