// Tests of a run's stretches: one trace, the first stretch the root, later ones under it.
#include "trace/run_stretches.h"

#include <vector>

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
  state.set_stage(rein::v1::PAUSED);
  state.mutable_pause()->set_reason(rein::v1::NEED_HUMAN);
  stretches.Committed("r1", state, 0.001);
  EXPECT_FALSE(stretches.ContextOf("r1").valid());

  // A restart: a new RunStretches reads the committed state.
  RunStretches after_restart(&tracer);
  state.set_stage(rein::v1::DECIDING);
  after_restart.Begin("r1", &state);
  state.set_stage(rein::v1::FINISHED);
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

TEST(RunStretchesTest, AbandonedStretchEndsSayingWhy) {
  RecordingExporter exporter;
  Tracer tracer(&exporter, Tracer::Options());
  RunStretches stretches(&tracer);
  rein::v1::RunState state;
  InitRunTrace(&state, nullptr);
  stretches.Begin("r1", &state);
  stretches.Abandon("r1", "lease lost");
  ASSERT_EQ(exporter.spans.size(), 1u);
  EXPECT_EQ(Str(exporter.spans[0], "rein.run.stretch_end"), "dropped: lease lost");
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

}  // namespace
}  // namespace rein::trace
