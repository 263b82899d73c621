// Tests of CheckProposedCall: which next calls an Evaluate reply may carry.
#include "planner_service/proposal.h"

#include <string>
#include <utility>

#include "gtest/gtest.h"

namespace rein {
namespace {

using Eval = rein::v1::RunEvent::Evaluation;

rein::v1::EvaluateRequest Request(bool propose_next = true) {
  rein::v1::EvaluateRequest request;
  request.set_propose_next(propose_next);
  request.mutable_subtask()->set_id("s1");
  request.mutable_subtask()->add_allowed_tools("read_file");
  request.mutable_subtask()->add_allowed_tools("write_file");
  for (const char* name : {"list_files", "read_file", "write_file"}) {
    rein::v1::ToolSpec* tool = request.add_run_tools();
    tool->set_name(name);
    tool->set_mutating(std::string(name) == "write_file");
  }
  return request;
}

rein::v1::EvaluateResponse Reply(const std::string& tool, const std::string& args,
                                 Eval::Status status = Eval::NEEDS_MORE_WORK, bool goal = false) {
  rein::v1::EvaluateResponse reply;
  reply.set_status(status);
  reply.set_goal_achieved(goal);
  reply.set_summary("s");
  reply.mutable_next_call()->set_tool(tool);
  reply.mutable_next_call()->set_args_json(args);
  return reply;
}

TEST(ProposalTest, ValidProposalIsKeptWithItsMutatingFlag) {
  rein::v1::EvaluateResponse reply = Reply("write_file", R"({"path":"a","content":"b"})");
  CheckProposedCall(Request(), &reply);
  ASSERT_TRUE(reply.has_next_call());
  EXPECT_TRUE(reply.next_call().mutating());
  EXPECT_EQ(reply.next_call_dropped(), "");
}

TEST(ProposalTest, ProposalNotAskedForIsDropped) {
  rein::v1::EvaluateResponse reply = Reply("read_file", "{}");
  CheckProposedCall(Request(/*propose_next=*/false), &reply);
  EXPECT_FALSE(reply.has_next_call());
  EXPECT_EQ(reply.next_call_dropped(),
            "next call read_file dropped: not asked for (propose_next is false)");
}

TEST(ProposalTest, ProposalWithASuccessClaimOrAnEndedSubtaskIsDropped) {
  for (auto [status, goal] : {std::pair{Eval::COMPLETED, false}, std::pair{Eval::FAILED, false},
                              std::pair{Eval::NEEDS_MORE_WORK, true}}) {
    rein::v1::EvaluateResponse reply = Reply("read_file", "{}", status, goal);
    CheckProposedCall(Request(), &reply);
    EXPECT_FALSE(reply.has_next_call());
    EXPECT_EQ(reply.status(), status);  // the evaluation stands
    EXPECT_NE(reply.next_call_dropped().find("only with status NEEDS_MORE_WORK"),
              std::string::npos);
  }
}

TEST(ProposalTest, ToolOutsideTheSubtaskOrBadArgumentsAreDropped) {
  rein::v1::EvaluateResponse other = Reply("list_files", "{}");
  CheckProposedCall(Request(), &other);
  EXPECT_FALSE(other.has_next_call());
  EXPECT_EQ(other.next_call_dropped(),
            "next call list_files dropped: \"list_files\" is not allowed for subtask \"s1\" "
            "(allowed: read_file, write_file)");
  for (const std::string& args :
       {std::string("[1]"), std::string("not json"), std::string(), std::string(200, '[')}) {
    rein::v1::EvaluateResponse reply = Reply("read_file", args);
    CheckProposedCall(Request(), &reply);
    EXPECT_FALSE(reply.has_next_call()) << args;
    EXPECT_EQ(reply.next_call_dropped(), "next call read_file dropped: args must be a JSON object");
  }
}

TEST(ProposalTest, ReplyWithoutProposalIsUnchanged) {
  rein::v1::EvaluateResponse reply;
  reply.set_status(Eval::COMPLETED);
  CheckProposedCall(Request(), &reply);
  EXPECT_FALSE(reply.has_next_call());
  EXPECT_EQ(reply.next_call_dropped(), "");
}

}  // namespace
}  // namespace rein
