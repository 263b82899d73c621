#include "router_service/fairness/call_gate.h"

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/metrics.h"
#include "gtest/gtest.h"

namespace rein {
namespace {

// A call that answers when told to: records when it started, and keeps its release.
class Recorder {
 public:
  CallGate::Start Held(const std::string& name) {
    return [this, name](std::function<void()> release) -> std::shared_ptr<PendingCall> {
      started.push_back(name);
      releases.push_back(std::move(release));
      return std::make_shared<Cancellable>(&cancelled_calls, name);
    };
  }
  // Answers the oldest call still unanswered.
  void AnswerOne() {
    ASSERT_LT(answered, releases.size());
    std::function<void()> release = releases[answered++];
    release();
  }

  std::vector<std::string> started;
  std::vector<std::function<void()>> releases;
  size_t answered = 0;
  std::vector<std::string> cancelled_calls;

 private:
  class Cancellable final : public PendingCall {
   public:
    Cancellable(std::vector<std::string>* log, std::string name) : log_(log), name_(name) {}
    void Cancel() override { log_->push_back(name_); }

   private:
    std::vector<std::string>* log_;
    std::string name_;
  };
};

TEST(CallGateTest, NoMoreThanTheLimitAreInFlight) {
  auto gate = CallGate::Make(3);
  Recorder r;
  for (int i = 0; i < 10; ++i) gate->Submit("a", r.Held(std::to_string(i)), nullptr);
  EXPECT_EQ(r.started.size(), 3u);
  EXPECT_EQ(gate->in_flight(), 3);
  EXPECT_EQ(gate->waiting(), 7);
  r.AnswerOne();
  EXPECT_EQ(r.started.size(), 4u);
  EXPECT_EQ(r.started.back(), "3");  // within a share, in the order submitted
  EXPECT_EQ(gate->in_flight(), 3);
  // A release runs once, however often it is called.
  r.releases[0]();
  EXPECT_EQ(gate->in_flight(), 3);
  EXPECT_EQ(r.started.size(), 4u);
}

TEST(CallGateTest, TheCallsThatWaitAreCountedAndTheWaitingShown) {
  auto gate = CallGate::Make(1, nullptr, R"(to="metrics-test")");
  Recorder r;
  for (int i = 0; i < 4; ++i) gate->Submit("a", r.Held("a"), nullptr);
  const std::string text = Metrics::Global().Render();
  EXPECT_NE(text.find(R"(rein_router_calls_waited_total{to="metrics-test"} 3)"), std::string::npos)
      << text;
  EXPECT_NE(text.find(R"(rein_router_calls_waiting{to="metrics-test"} 3)"), std::string::npos)
      << text;
  r.AnswerOne();
  EXPECT_NE(Metrics::Global().Render().find(R"(rein_router_calls_waiting{to="metrics-test"} 2)"),
            std::string::npos);
}

TEST(CallGateTest, AQuietNamespacesCallGoesNextBehindAThousandWaiting) {
  auto gate = CallGate::Make(4);
  Recorder r;
  for (int i = 0; i < 1000; ++i) gate->Submit("flood", r.Held("flood"), nullptr);
  gate->Submit("quiet", r.Held("quiet"), nullptr);
  ASSERT_EQ(r.started.size(), 4u);
  // The flood holds every slot and its turn came first: the first slot to free is its, the
  // second the quiet namespace's, not the 997th.
  r.AnswerOne();
  ASSERT_EQ(r.started.size(), 5u);
  EXPECT_EQ(r.started.back(), "flood");
  r.AnswerOne();
  EXPECT_EQ(r.started.back(), "quiet");
  r.AnswerOne();
  EXPECT_EQ(r.started.back(), "flood");
}

TEST(CallGateTest, SharesTakeTurnsByWeight) {
  std::map<std::string, int> weights = {{"a", 3}, {"b", 1}, {"c", 0}};
  auto gate = CallGate::Make(1, [&weights](const std::string& share) { return weights[share]; });
  Recorder r;
  gate->Submit("first", r.Held("first"), nullptr);  // holds the one slot
  for (int i = 0; i < 8; ++i) gate->Submit("a", r.Held("a"), nullptr);
  for (int i = 0; i < 4; ++i) gate->Submit("b", r.Held("b"), nullptr);
  for (int i = 0; i < 2; ++i) gate->Submit("c", r.Held("c"), nullptr);  // weight 0 counts as 1
  for (int i = 0; i < 14; ++i) r.AnswerOne();
  const std::vector<std::string> want = {"first", "a", "a", "a", "b", "c", "a", "a",
                                         "a",     "b", "c", "a", "a", "b", "b"};
  EXPECT_EQ(r.started, want);
}

TEST(CallGateTest, AWaitingCallCancelledIsAnsweredWithoutBeingSent) {
  auto gate = CallGate::Make(1);
  Recorder r;
  gate->Submit("a", r.Held("a0"), nullptr);
  int cancelled = 0;
  std::shared_ptr<PendingCall> waiting = gate->Submit("b", r.Held("b0"), [&] { ++cancelled; });
  gate->Submit("b", r.Held("b1"), nullptr);
  waiting->Cancel();
  waiting->Cancel();
  EXPECT_EQ(cancelled, 1);
  EXPECT_EQ(gate->waiting(), 1);
  r.AnswerOne();
  EXPECT_EQ(r.started, (std::vector<std::string>{"a0", "b1"}));
  EXPECT_EQ(gate->in_flight(), 1);
  EXPECT_TRUE(r.cancelled_calls.empty());
}

TEST(CallGateTest, CancellingAStartedCallCancelsWhatWasSent) {
  auto gate = CallGate::Make(1);
  Recorder r;
  int cancelled = 0;
  std::shared_ptr<PendingCall> call = gate->Submit("a", r.Held("a0"), [&] { ++cancelled; });
  call->Cancel();
  EXPECT_EQ(cancelled, 0);
  EXPECT_EQ(r.cancelled_calls, (std::vector<std::string>{"a0"}));
}

TEST(CallGateTest, StopAnswersTheWaitingAndWhatComesAfter) {
  auto gate = CallGate::Make(1);
  Recorder r;
  int cancelled = 0;
  gate->Submit("a", r.Held("a0"), [&] { ++cancelled; });
  gate->Submit("a", r.Held("a1"), [&] { ++cancelled; });
  gate->Submit("b", r.Held("b0"), [&] { ++cancelled; });
  gate->Stop();
  EXPECT_EQ(cancelled, 2);
  gate->Submit("b", r.Held("b1"), [&] { ++cancelled; });
  EXPECT_EQ(cancelled, 3);
  r.AnswerOne();  // the call in flight completes; nothing more starts
  EXPECT_EQ(r.started, (std::vector<std::string>{"a0"}));
  EXPECT_EQ(gate->in_flight(), 0);
}

TEST(CallGateTest, RepliesInsideTheirStartDoNotNestPerCall) {
  // A client that answers inside the call (as the test fakes do) releases the slot from
  // within the start; the calls waiting then start in a loop, not one frame deeper each.
  auto gate = CallGate::Make(1);
  Recorder r;
  gate->Submit("hold", r.Held("hold"), nullptr);
  int answered = 0;
  for (int i = 0; i < 200000; ++i) {
    gate->Submit(
        "sync",
        [&answered](std::function<void()> release) -> std::shared_ptr<PendingCall> {
          ++answered;
          release();
          return nullptr;
        },
        nullptr);
  }
  EXPECT_EQ(answered, 0);
  r.AnswerOne();
  EXPECT_EQ(answered, 200000);
  EXPECT_EQ(gate->in_flight(), 0);
  EXPECT_EQ(gate->waiting(), 0);
}

TEST(CallGateTest, WithoutALimitEveryCallStartsAtOnce) {
  auto gate = CallGate::Make(0);
  Recorder r;
  for (int i = 0; i < 100; ++i) gate->Submit("a", r.Held("a"), nullptr);
  EXPECT_EQ(r.started.size(), 100u);
}

}  // namespace
}  // namespace rein
