// Tests of the tracer: ids, parents, sampling, attributes, and the thread's current context.
#include "trace/tracer.h"

#include <vector>

#include "gtest/gtest.h"
#include "trace/testing/recording_exporter.h"

namespace rein::trace {
namespace {

using testing::RecordingExporter;

Tracer::Options FixedTime() {
  Tracer::Options options;
  int64_t* now = new int64_t(1000);
  options.now_unix_nano = [now] { return (*now)++; };
  return options;
}

TEST(TracerTest, OffTracerRecordsNothingButMakesIds) {
  Tracer tracer;
  Span span = tracer.StartSpan("x", SpanContext(), SpanKind::kInternal);
  EXPECT_FALSE(span.recording());
  EXPECT_TRUE(span.context().valid());
  span.SetAttribute("k", "v");  // no effect, no crash
  span.End();
}

TEST(TracerTest, ChildSharesTraceAndNamesParent) {
  RecordingExporter exporter;
  Tracer tracer(&exporter, FixedTime());
  Span root = tracer.StartSpan("root", SpanContext(), SpanKind::kServer);
  {
    Span child = tracer.StartSpan("child", root.context(), SpanKind::kClient);
    child.SetAttribute("gen_ai.tool.name", "read_file");
    child.SetAttribute("n", 3);
    child.SetAttribute("n", 4);  // replaces
    child.AddEvent("retry", {{"attempt", int64_t{1}}});
    child.SetError("boom");
  }  // ended by the destructor
  root.End();
  root.End();  // once only
  ASSERT_EQ(exporter.spans.size(), 2u);
  const SpanData& child = exporter.spans[0];
  EXPECT_EQ(child.name, "child");
  EXPECT_EQ(child.context.trace_id, root.context().trace_id);
  EXPECT_EQ(child.parent_span_id, root.context().span_id);
  ASSERT_EQ(child.attributes.size(), 2u);
  EXPECT_EQ(std::get<int64_t>(child.attributes[1].second), 4);
  ASSERT_EQ(child.events.size(), 1u);
  EXPECT_EQ(child.status, StatusCode::kError);
  EXPECT_LT(child.start_unix_nano, child.end_unix_nano);
  EXPECT_TRUE(exporter.spans[1].parent_span_id.empty());
}

TEST(TracerTest, RootOfAGivenTraceKeepsItsIds) {
  RecordingExporter exporter;
  Tracer tracer(&exporter, FixedTime());
  const std::string trace_id = NewTraceId(), span_id = NewSpanId();
  tracer.StartRootSpan("stretch", trace_id, SpanKind::kInternal, span_id).End();
  ASSERT_EQ(exporter.spans.size(), 1u);
  EXPECT_EQ(exporter.spans[0].context.trace_id, trace_id);
  EXPECT_EQ(exporter.spans[0].context.span_id, span_id);
}

TEST(TracerTest, ParentBasedSamplerFollowsAnUnsampledParent) {
  RecordingExporter exporter;
  Tracer tracer(&exporter, FixedTime());
  SpanContext parent = *ContextFromHex("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7",
                                       /*sampled=*/false);
  Span span = tracer.StartSpan("x", parent, SpanKind::kServer);
  EXPECT_FALSE(span.recording());
  EXPECT_FALSE(span.context().sampled);
  EXPECT_EQ(span.context().trace_id, parent.trace_id);
}

TEST(TracerTest, AlwaysOffSamplesNothingAndRatioZeroNothing) {
  RecordingExporter exporter;
  Tracer::Options options = FixedTime();
  options.sampler.kind = Sampler::Kind::kAlwaysOff;
  Tracer off(&exporter, options);
  EXPECT_FALSE(off.StartSpan("x", SpanContext(), SpanKind::kInternal).recording());
  options.sampler.kind = Sampler::Kind::kTraceIdRatio;
  options.sampler.ratio = 0.0;
  Tracer none(&exporter, options);
  EXPECT_FALSE(none.StartSpan("x", SpanContext(), SpanKind::kInternal).recording());
  EXPECT_TRUE(exporter.spans.empty());
}

TEST(TracerTest, ScopedContextNestsAndRestores) {
  EXPECT_EQ(CurrentContext(), nullptr);
  SpanContext a = *ContextFromHex("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7");
  SpanContext b = *ContextFromHex("4bf92f3577b34da6a3ce929d0e0e4736", "11f067aa0ba902b7");
  {
    ScopedContext outer(a);
    ASSERT_NE(CurrentContext(), nullptr);
    EXPECT_EQ(CurrentContext()->span_id, a.span_id);
    {
      ScopedContext inner(b);
      EXPECT_EQ(CurrentContext()->span_id, b.span_id);
    }
    EXPECT_EQ(CurrentContext()->span_id, a.span_id);
  }
  EXPECT_EQ(CurrentContext(), nullptr);
}

}  // namespace
}  // namespace rein::trace
