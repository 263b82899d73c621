// Tests of a run's stretches: one trace, the first stretch the root, later ones under it.
#include "trace/run_stretches.h"

#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "trace/testing/recording_exporter.h"

namespace rein::trace {
namespace {

using testing::RecordingExporter;

std::string Str(const SpanData& span, const std::string& key) {
  for (const auto& [k, v] : span.attributes) {
    if (k == key) return std::get<std::string>(v);
  }
  return "<absent>";
}

TEST(RunStretchesTest, PauseAndResumeStayInOneTrace) {
  RecordingExporter exporter;
  Tracer tracer(&exporter, Tracer::Options());
  RunStretches stretches(&tracer);
  rein::v1::RunState state;
  SpanContext caller = *ContextFromHex("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7");
  InitRunTrace(&state, &caller);
  state.set_stage(rein::v1::PLANNING);
  stretches.Begin("r1", &state);
  stretches.Begin("r1", &state);  // already open: nothing
  EXPECT_EQ(stretches.ContextOf("r1").span_id_hex(), state.trace().root_span_id());
  EXPECT_NE(state.trace().open_since_unix_nano(), 0);
  state.set_stage(rein::v1::PAUSED);
  state.mutable_pause()->set_reason(rein::v1::NEED_HUMAN);
  stretches.Begin("r1", &state);  // the state to be committed: the stretch ends with it
  EXPECT_EQ(state.trace().open_since_unix_nano(), 0);
  stretches.Committed("r1", state, 0.001);
  EXPECT_FALSE(stretches.ContextOf("r1").valid());

  // A restart: a new RunStretches reads the committed state.
  RunStretches after_restart(&tracer);
  state.set_stage(rein::v1::DECIDING);
  after_restart.Begin("r1", &state);
  state.set_stage(rein::v1::FINISHED);
  after_restart.Begin("r1", &state);
  after_restart.Committed("r1", state, 0.002);

  ASSERT_EQ(exporter.spans.size(), 2u);
  const SpanData& first = exporter.spans[0];
  const SpanData& second = exporter.spans[1];
  EXPECT_EQ(first.name, "invoke_agent rein");
  EXPECT_EQ(first.context.trace_id_hex(), state.trace().trace_id());
  EXPECT_EQ(first.context.span_id_hex(), state.trace().root_span_id());
  EXPECT_TRUE(first.parent_span_id.empty());
  ASSERT_EQ(first.links.size(), 1u);
  EXPECT_EQ(first.links[0].context.trace_id, caller.trace_id);
  EXPECT_EQ(Str(first, "rein.run.pause_reason"), "NEED_HUMAN");
  EXPECT_EQ(Str(first, "rein.run.stretch_end"), "paused");
  EXPECT_EQ(second.context.trace_id, first.context.trace_id);
  EXPECT_EQ(second.parent_span_id, first.context.span_id);
  ASSERT_EQ(second.links.size(), 1u);
  EXPECT_EQ(second.links[0].context.span_id, first.context.span_id);
  EXPECT_EQ(second.status, StatusCode::kOk);
  EXPECT_EQ(Str(second, "gen_ai.operation.name"), "invoke_agent");
  EXPECT_EQ(state.trace().stretches(), 2);
  EXPECT_EQ(state.trace().last_stretch_span_id(), second.context.span_id_hex());
}

// One router's stretches of a new run, recorded.
class OneRouterTest : public ::testing::Test {
 protected:
  void SetUp() override { InitRunTrace(&state, nullptr); }
  RecordingExporter exporter;
  Tracer tracer{&exporter, Tracer::Options()};
  RunStretches stretches{&tracer};
  rein::v1::RunState state;
};

TEST_F(OneRouterTest, AbandonedStretchEndsSayingWhy) {
  stretches.Begin("r1", &state);
  stretches.Abandon("r1", "lease lost");
  ASSERT_EQ(exporter.spans.size(), 1u);
  EXPECT_EQ(Str(exporter.spans[0], "rein.run.stretch_end"), "dropped: lease lost");
}

TEST(RunStretchesTest, StretchLeftOpenIsExportedInterruptedByTheNextRouter) {
  RecordingExporter exporter;
  int64_t now = 1000;
  Tracer::Options options;
  options.now_unix_nano = [&now] { return now; };
  Tracer tracer(&exporter, options);
  rein::v1::RunState state;
  InitRunTrace(&state, nullptr);
  state.set_stage(rein::v1::DECIDING);
  {
    RunStretches killed(&tracer);
    killed.Begin("r1", &state);  // the state committed while the stretch is open
    killed.Committed("r1", state, 0.001);
    now = 2000;
    killed.Abandon("r1", "lease lost");  // named by a commit: left to the next router
  }
  EXPECT_TRUE(exporter.spans.empty());
  EXPECT_EQ(state.trace().open_since_unix_nano(), 1000);

  now = 5000;  // the next router drives the run from the committed state
  RunStretches next(&tracer);
  next.Begin("r1", &state);
  ASSERT_EQ(exporter.spans.size(), 1u);
  const SpanData lost = exporter.spans[0];  // a copy: the vector grows below
  EXPECT_EQ(lost.context.span_id_hex(), state.trace().root_span_id());
  EXPECT_TRUE(lost.parent_span_id.empty());
  EXPECT_EQ(lost.start_unix_nano, 1000);
  EXPECT_EQ(lost.end_unix_nano, 5000);
  EXPECT_EQ(lost.status, StatusCode::kError);
  EXPECT_EQ(Str(lost, "rein.run.stretch_end"), "interrupted");
  EXPECT_EQ(Str(lost, "rein.stage"), "DECIDING");
  EXPECT_EQ(state.trace().stretches(), 2);
  EXPECT_EQ(state.trace().open_since_unix_nano(), 5000);
  state.set_stage(rein::v1::FINISHED);
  next.Begin("r1", &state);
  next.Committed("r1", state, 0.001);
  ASSERT_EQ(exporter.spans.size(), 2u);
  const SpanData& resumed = exporter.spans[1];
  EXPECT_EQ(resumed.parent_span_id, lost.context.span_id);
  ASSERT_EQ(resumed.links.size(), 1u);
  EXPECT_EQ(resumed.links[0].context.span_id, lost.context.span_id);
  EXPECT_EQ(resumed.start_unix_nano, 5000);
  EXPECT_EQ(state.trace().open_since_unix_nano(), 0);  // ended: no next router exports it
}

TEST_F(OneRouterTest, StateReadBackMeanwhileGetsTheOpenStretchAtTheNextCommit) {
  state.set_stage(rein::v1::PLANNING);
  const rein::v1::RunState stored = state;  // as the store has it, before this stretch
  stretches.Begin("r1", &state);            // a call went out: the stretch is open
  rein::v1::RunState fresh = stored;        // another router's commit, read back
  fresh.set_stage(rein::v1::DECIDING);
  stretches.Begin("r1", &fresh);  // this router's next commit
  EXPECT_EQ(fresh.trace().last_stretch_span_id(), stretches.ContextOf("r1").span_id_hex());
  EXPECT_EQ(fresh.trace().stretches(), 1);
  EXPECT_NE(fresh.trace().open_since_unix_nano(), 0);
}

TEST(RunStretchesTest, LaterInterruptedStretchIsAChildOfTheRoot) {
  RecordingExporter exporter;
  Tracer tracer(&exporter, Tracer::Options());
  rein::v1::RunState state;
  InitRunTrace(&state, nullptr);
  state.set_stage(rein::v1::PAUSED);
  {
    RunStretches first(&tracer);
    first.Begin("r1", &state);
    first.Committed("r1", state, 0.001);  // paused: exported, nothing left open
  }
  state.set_stage(rein::v1::PLANNING);
  {
    RunStretches second(&tracer);
    second.Begin("r1", &state);
    second.Committed("r1", state, 0.001);
  }
  const std::string lost_id = state.trace().last_stretch_span_id();
  RunStretches third(&tracer);
  third.Begin("r1", &state);
  ASSERT_EQ(exporter.spans.size(), 2u);
  EXPECT_EQ(exporter.spans[1].context.span_id_hex(), lost_id);
  EXPECT_EQ(exporter.spans[1].parent_span_id, exporter.spans[0].context.span_id);
  EXPECT_EQ(Str(exporter.spans[1], "rein.run.stretch_end"), "interrupted");
  // Its link to the stretch before, as the second router's span had it.
  ASSERT_EQ(exporter.spans[1].links.size(), 1u);
  EXPECT_EQ(exporter.spans[1].links[0].context.span_id, exporter.spans[0].context.span_id);
}

TEST(RunStretchesTest, RunWithoutTraceGetsOne) {
  RecordingExporter exporter;
  Tracer tracer(&exporter, Tracer::Options());
  RunStretches stretches(&tracer);
  rein::v1::RunState state;
  stretches.Begin("old", &state);
  EXPECT_EQ(state.trace().trace_id().size(), 32u);
  EXPECT_EQ(stretches.ContextOf("old").trace_id_hex(), state.trace().trace_id());
}

TEST(RunStretchesTest, TracingOffTouchesNothing) {
  Tracer off;
  RunStretches stretches(&off);
  rein::v1::RunState state;
  InitRunTrace(&state, nullptr);
  const std::string before = state.SerializeAsString();
  stretches.Begin("r1", &state);
  EXPECT_EQ(state.SerializeAsString(), before);
  EXPECT_FALSE(stretches.ContextOf("r1").valid());
}

// STAGNATION's message quotes the model's tool arguments, REJECTED_BY_REVIEWER's the reviewer's
// words: without content capture the span's status says the reason only.
TEST(RunStretchesTest, AFailedRunsMessageIsRecordedOnlyWithContentCapture) {
  constexpr char kMarker[] = "SECRET-ARG-7f3a";
  for (bool capture : {false, true}) {
    RecordingExporter exporter;
    Tracer::Options options;
    options.capture_content = capture;
    Tracer tracer(&exporter, options);
    RunStretches stretches(&tracer);
    rein::v1::RunState state;
    InitRunTrace(&state, nullptr);
    state.set_stage(rein::v1::DECIDING);
    stretches.Begin("r1", &state);
    state.set_stage(rein::v1::FAILED);
    state.mutable_outcome()->set_status(rein::v1::FAILED);
    state.mutable_outcome()->set_reason(rein::v1::STAGNATION);
    state.mutable_outcome()->set_message(
        absl::StrCat("the same call 3 times: write_file {\"path\":\"", kMarker, "\"}"));
    stretches.Begin("r1", &state);
    stretches.Committed("r1", state, 0.001);
    ASSERT_EQ(exporter.spans.size(), 1u);
    const SpanData& span = exporter.spans[0];
    EXPECT_EQ(span.status, StatusCode::kError);
    bool anywhere = absl::StrContains(span.status_message, kMarker);
    for (const auto& [key, value] : span.attributes) {
      if (const auto* text = std::get_if<std::string>(&value)) {
        anywhere = anywhere || absl::StrContains(*text, kMarker);
      }
    }
    for (const SpanEvent& event : span.events) {
      for (const auto& [key, value] : event.attributes) {
        if (const auto* text = std::get_if<std::string>(&value)) {
          anywhere = anywhere || absl::StrContains(*text, kMarker);
        }
      }
    }
    EXPECT_EQ(anywhere, capture) << "capture " << capture;
    if (!capture) {
      EXPECT_EQ(span.status_message, "STAGNATION");
    }
  }
}

}  // namespace
}  // namespace rein::trace
