// Tests of the encodings both stores share.
#include "router_service/store/store_codec.h"

#include <string>

#include "gtest/gtest.h"
#include "rein/v1/types.pb.h"

namespace rein {
namespace {

rein::v1::RunState SampleState() {
  rein::v1::RunState state;
  state.set_stage(rein::v1::EVALUATING);
  state.set_version(7);
  state.set_iteration(3);
  auto* task = state.add_subtasks();
  task->set_id("s1");
  task->set_description(std::string(300, 'd'));
  state.set_latest_observation(std::string(1000, 'o'));
  return state;
}

TEST(StateTailTest, TailIsTheSerializationOfARunWithOnlyStateAndUpdatedAt) {
  rein::v1::Run run;
  *run.mutable_state() = SampleState();
  run.mutable_updated_at()->set_seconds(1767225600);
  run.mutable_updated_at()->set_nanos(123000);
  absl::StatusOr<std::string> tail = StateTail(run.state(), run.updated_at());
  ASSERT_TRUE(tail.ok()) << tail.status();
  EXPECT_EQ(*tail, run.SerializeAsString());
}

TEST(StateTailTest, BaseThenTailParsesBackToTheRun) {
  rein::v1::Run run;
  run.set_run_id("run-1");
  run.mutable_spec()->set_goal("goal");
  run.mutable_created_at()->set_seconds(1767225000);
  run.mutable_updated_at()->set_seconds(1767225600);
  *run.mutable_state() = SampleState();
  absl::StatusOr<StoredRunParts> parts = SplitRun(run);
  ASSERT_TRUE(parts.ok()) << parts.status();
  rein::v1::Run back;
  ASSERT_TRUE(back.ParseFromString(parts->base));
  ASSERT_TRUE(back.MergeFromString(parts->tail));
  EXPECT_EQ(back.SerializeAsString(), run.SerializeAsString());
}

TEST(StateTailTest, EmptyStateAndTimeGiveTheEmptyMessagesFields) {
  rein::v1::Run run;
  run.mutable_state();
  run.mutable_updated_at();
  absl::StatusOr<std::string> tail = StateTail(run.state(), run.updated_at());
  ASSERT_TRUE(tail.ok()) << tail.status();
  EXPECT_EQ(*tail, run.SerializeAsString());
}

}  // namespace
}  // namespace rein
