// Tests of reinctl diff's side-by-side view.
#include "cli/run_diff.h"

#include "gtest/gtest.h"

namespace rein::cli {
namespace {

using rein::v1::RunEvent;

RunEvent Call(const std::string& tool, const std::string& args) {
  RunEvent e;
  e.mutable_decision()->mutable_tool_call()->set_tool(tool);
  e.mutable_decision()->mutable_tool_call()->set_args_json(args);
  return e;
}

RunEvent Result(bool ok, const std::string& text) {
  RunEvent e;
  e.mutable_tool_result()->mutable_action()->set_ok(ok);
  if (ok) {
    e.mutable_tool_result()->mutable_action()->set_observation(text);
  } else {
    e.mutable_tool_result()->mutable_action()->set_error(text);
  }
  return e;
}

RunEvent End(rein::v1::Stage stage, rein::v1::TerminationReason reason) {
  RunEvent e;
  e.mutable_finished()->mutable_outcome()->set_status(stage);
  e.mutable_finished()->mutable_outcome()->set_reason(reason);
  return e;
}

TEST(RunDiffTest, MarksSameDifferentAndOneSidedSteps) {
  rein::v1::Run a, b;
  a.set_run_id("run-a");
  b.set_run_id("run-b");
  std::vector<RunEvent> left = {Call("read_file", R"({"path":"a"})"), Result(true, "alpha\nmore"),
                                End(rein::v1::FINISHED, rein::v1::GOAL_ACHIEVED)};
  std::vector<RunEvent> right = {Call("read_file", R"({"path":"a"})"),
                                 Result(false, "NOT_FOUND: gone"),
                                 Call("list_files", R"({"path":"."})"), Result(true, "x"),
                                 End(rein::v1::FAILED, rein::v1::MAX_ITERATIONS)};
  const std::string out = FormatRunDiff(a, left, b, right, /*width=*/30);
  EXPECT_NE(out.find("run-a"), std::string::npos);
  EXPECT_NE(out.find("run-b"), std::string::npos);
  // Same first call, then different results (the observation's first line only).
  EXPECT_NE(out.find("call: read_file {\"path\":\"a\"}"), std::string::npos) << out;
  EXPECT_NE(out.find("  -> ok: alpha"), std::string::npos) << out;
  EXPECT_EQ(out.find("more"), std::string::npos) << out;
  EXPECT_NE(out.find(" | "), std::string::npos) << out;
  EXPECT_NE(out.find(" > "), std::string::npos) << out;
  EXPECT_NE(out.find("same steps: 1, first difference at step 2"), std::string::npos) << out;
}

TEST(RunDiffTest, IdenticalRunsSaySo) {
  rein::v1::Run a;
  std::vector<RunEvent> log = {Call("list_files", "{}"), Result(true, "x")};
  EXPECT_NE(FormatRunDiff(a, log, a, log).find("the runs took the same steps (2)"),
            std::string::npos);
}

}  // namespace
}  // namespace rein::cli
