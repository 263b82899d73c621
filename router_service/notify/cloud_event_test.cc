// Tests of the CloudEvents body of a notice.
#include "router_service/notify/cloud_event.h"

#include <string>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "rein/v1/types.pb.h"

namespace rein {
namespace {

Notification PauseNotice() {
  Notification n;
  n.notice_id = "run-1.5";
  n.run_id = "run-1";
  n.seq = 5;
  n.event.mutable_time()->set_seconds(1700000000);
  rein::v1::Pause* pause = n.event.mutable_paused()->mutable_pause();
  pause->set_reason(rein::v1::PAUSE_POINT);
  pause->set_point(rein::v1::BEFORE_MUTATING_TOOL);
  pause->set_detail("about to write");
  pause->mutable_pending_call()->set_tool("write_file");
  pause->mutable_pending_call()->set_args_json(R"({"path":"a"})");
  pause->mutable_pending_call()->set_call_id("run-1-3");
  pause->mutable_pending_call()->set_mutating(true);
  n.state.set_stage(rein::v1::PAUSED);
  n.state.set_iteration(3);
  n.state.mutable_usage()->set_input_tokens(100);
  n.state.set_cost_used_usd(0.25);
  return n;
}

NoticeRun StartedRun() {
  NoticeRun run;
  run.spec.set_goal("fix the tests");
  (*run.spec.mutable_labels())["team"] = "a";
  run.principal = "alice";
  return run;
}

TEST(CloudEventJsonTest, APauseIsACloudEventWithThePendingCallAndTheConsoleLink) {
  const std::string body =
      CloudEventJson(PauseNotice(), StartedRun(), "urn:rein:router", "https://console.example");
  const nlohmann::json e = nlohmann::json::parse(body);
  EXPECT_EQ(e["specversion"], "1.0");
  EXPECT_EQ(e["id"], "run-1.5");
  EXPECT_EQ(e["source"], "urn:rein:router");
  EXPECT_EQ(e["type"], "dev.rein.run.paused");
  EXPECT_EQ(e["subject"], "run-1");
  EXPECT_EQ(e["time"], "2023-11-14T22:13:20Z");
  EXPECT_EQ(e["datacontenttype"], "application/json");
  const nlohmann::json& d = e["data"];
  EXPECT_EQ(d["goal"], "fix the tests");
  EXPECT_EQ(d["stage"], "PAUSED");
  EXPECT_EQ(d["owner"], "alice");
  EXPECT_EQ(d["labels"]["team"], "a");
  EXPECT_EQ(d["pause"]["reason"], "PAUSE_POINT");
  EXPECT_EQ(d["pause"]["point"], "BEFORE_MUTATING_TOOL");
  EXPECT_EQ(d["pause"]["pending_call"]["tool"], "write_file");
  EXPECT_EQ(d["pause"]["pending_call"]["mutating"], true);
  EXPECT_EQ(d["usage"]["input_tokens"], 100);
  EXPECT_EQ(d["cost_usd"], 0.25);
  EXPECT_EQ(d["console_url"], "https://console.example/#/run/run-1");
  EXPECT_FALSE(d.contains("outcome"));
  // The same inputs, the same bytes: every attempt signs one body.
  EXPECT_EQ(body, CloudEventJson(PauseNotice(), StartedRun(), "urn:rein:router",
                                 "https://console.example"));
}

TEST(CloudEventJsonTest, AnEndIsTypedByItsOutcome) {
  Notification n = PauseNotice();
  n.event.clear_paused();
  rein::v1::Outcome* outcome = n.event.mutable_finished()->mutable_outcome();
  outcome->set_status(rein::v1::FAILED);
  outcome->set_reason(rein::v1::TOKEN_BUDGET_EXHAUSTED);
  outcome->set_message("out of tokens");
  EXPECT_EQ(NoticeType(n), "dev.rein.run.failed");
  const nlohmann::json e = nlohmann::json::parse(CloudEventJson(n, StartedRun(), "s", ""));
  EXPECT_EQ(e["data"]["outcome"]["status"], "FAILED");
  EXPECT_EQ(e["data"]["outcome"]["reason"], "TOKEN_BUDGET_EXHAUSTED");
  EXPECT_EQ(e["data"]["outcome"]["message"], "out of tokens");
  EXPECT_FALSE(e["data"].contains("console_url"));
  outcome->set_status(rein::v1::CANCELLED);
  EXPECT_EQ(NoticeType(n), "dev.rein.run.cancelled");
  outcome->set_status(rein::v1::FINISHED);
  EXPECT_EQ(NoticeType(n), "dev.rein.run.finished");
}

TEST(CloudEventJsonTest, BytesThatAreNotUtf8DoNotThrow) {
  NoticeRun run = StartedRun();
  run.spec.set_goal(std::string("bad \xff\xfe bytes"));
  const nlohmann::json e = nlohmann::json::parse(CloudEventJson(PauseNotice(), run, "s", ""));
  EXPECT_NE(e["data"]["goal"].get<std::string>().find("bad"), std::string::npos);
}

}  // namespace
}  // namespace rein
