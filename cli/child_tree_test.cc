#include "cli/child_tree.h"

#include <map>
#include <string>

#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"

namespace rein::cli {
namespace {

rein::v1::Run RunFrom(const std::string& text) {
  rein::v1::Run run;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &run)) << text;
  return run;
}

TEST(ChildTreeTest, NoChildrenNoText) { EXPECT_EQ(ChildTree(rein::v1::Run(), {}), ""); }

TEST(ChildTreeTest, ChildrenAsTheParentSawThemWhenNotRead) {
  rein::v1::Run parent =
      RunFrom(R"(children { subtask_id: "a" group: 1 run_id: "c1" stage: DECIDING }
      children { subtask_id: "b" group: 1 start_error: "the store is down" })");
  EXPECT_EQ(ChildTree(parent, {}),
            "children:\n"
            "  group 1  a -> c1  DECIDING\n"
            "  group 1  b -> (not started)  STAGE_UNSPECIFIED  not started: the store is down\n");
}

TEST(ChildTreeTest, ReadChildrenShowTheirProgressAndTheirOwnChildren) {
  rein::v1::Run parent =
      RunFrom(R"(children { subtask_id: "a" group: 1 run_id: "c1" stage: DECIDING }
      children { subtask_id: "b" group: 1 run_id: "c2" stage: DECIDING })");
  std::map<std::string, rein::v1::Run> runs = {
      {"c1", RunFrom(R"(run_id: "c1" spec { limits { max_iterations: 10 } }
          state { stage: WAITING iteration: 3 subtasks { id: "scan" } }
          children { subtask_id: "deep" group: 1 run_id: "g1" stage: EXECUTING })")},
      {"c2", RunFrom(R"(run_id: "c2" spec { limits { max_iterations: 10 } }
          state { stage: FINISHED iteration: 4 outcome { reason: GOAL_ACHIEVED } })")},
      {"g1", RunFrom(R"(run_id: "g1" spec { limits { max_iterations: 3 } }
          state { stage: EVALUATING iteration: 2 subtasks { id: "read" } })")}};
  EXPECT_EQ(ChildTree(parent, runs),
            "children:\n"
            "  group 1  a -> c1  WAITING  iteration 3/10, on scan\n"
            "      group 1  deep -> g1  EVALUATING  iteration 2/3, on read\n"
            "  group 1  b -> c2  FINISHED (GOAL_ACHIEVED)  iteration 4/10\n");
}

}  // namespace
}  // namespace rein::cli
