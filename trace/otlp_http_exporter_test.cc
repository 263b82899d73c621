// Tests of the OTLP/HTTP exporter against the test collector on loopback.
#include "trace/otlp_http_exporter.h"

#include <chrono>

#include "gtest/gtest.h"
#include "trace/testing/otlp_collector.h"

namespace rein::trace {
namespace {

using testing::CollectedSpan;
using testing::OtlpCollector;

BatchSpanExporter::Options Fast() {
  BatchSpanExporter::Options options;
  options.resource = {{"service.name", std::string("rein-test")}};
  options.schedule_delay = absl::Milliseconds(20);
  options.first_backoff = absl::Milliseconds(10);
  return options;
}

TEST(OtlpHttpExporterTest, SpansArriveDecodedWithTheirAttributes) {
  OtlpCollector collector;
  ASSERT_TRUE(collector.Start());
  BatchSpanExporter::Options options = Fast();
  options.gzip = true;
  BatchSpanExporter exporter(options, MakeCurlTransport(collector.endpoint() + "/v1/traces",
                                                        {{"api-key", "k1"}}, absl::Seconds(5)));
  Tracer::Options tracer_options;
  Tracer tracer(&exporter, tracer_options);
  Span parent = tracer.StartSpan("invoke_agent rein", SpanContext(), SpanKind::kInternal);
  Span child = tracer.StartSpan("execute_tool read_file", parent.context(), SpanKind::kInternal);
  child.SetAttribute("gen_ai.tool.name", "read_file");
  child.SetAttribute("gen_ai.usage.input_tokens", int64_t{42});
  child.SetAttribute("rein.tool.mutating", false);
  child.AddLink(parent.context());
  child.End();
  parent.End();
  ASSERT_TRUE(exporter.Flush(absl::Seconds(10)));
  std::vector<CollectedSpan> spans = collector.Spans();
  ASSERT_EQ(spans.size(), 2u);
  EXPECT_EQ(spans[0].service, "rein-test");
  EXPECT_EQ(spans[0].span.name(), "execute_tool read_file");
  EXPECT_EQ(spans[0].Str("gen_ai.tool.name"), "read_file");
  EXPECT_EQ(spans[0].Int("gen_ai.usage.input_tokens"), 42);
  EXPECT_TRUE(spans[0].Has("rein.tool.mutating"));
  EXPECT_EQ(spans[0].parent_span_id_hex(), spans[1].span_id_hex());
  EXPECT_EQ(spans[0].trace_id_hex(), spans[1].trace_id_hex());
  EXPECT_EQ(spans[0].span.links_size(), 1);
  bool saw_key = false, saw_type = false, saw_gzip = false;
  for (const std::string& h : collector.headers_seen()) {
    saw_key |= h == "api-key: k1";
    saw_type |= h == "content-type: application/x-protobuf";
    saw_gzip |= h == "content-encoding: gzip";
  }
  EXPECT_TRUE(saw_key && saw_type && saw_gzip);
  EXPECT_EQ(exporter.exported(), 2);
  EXPECT_EQ(exporter.dropped(), 0);
}

TEST(OtlpHttpExporterTest, HangingCollectorNeverBlocksOnEndAndTheQueueIsBounded) {
  OtlpCollector collector;
  ASSERT_TRUE(collector.Start());
  collector.SetMode(OtlpCollector::Mode::kHang);
  BatchSpanExporter::Options options = Fast();
  options.max_queue_size = 100;
  options.max_export_batch_size = 10;
  BatchSpanExporter exporter(
      options, MakeCurlTransport(collector.endpoint() + "/v1/traces", {}, absl::Milliseconds(300)));
  Tracer tracer(&exporter, Tracer::Options());
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 10000; ++i) tracer.StartSpan("s", SpanContext(), SpanKind::kInternal).End();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // 10,000 spans queued or dropped while the collector hangs: well under a second (each is a
  // few allocations under a mutex; no network wait).
  EXPECT_LT(seconds, 1.0);
  EXPECT_GE(exporter.dropped(), 10000 - 100 - 10);
  exporter.Shutdown(absl::Milliseconds(100));
}

TEST(OtlpHttpExporterTest, RejectedBatchIsDroppedNotRetried) {
  OtlpCollector collector;
  ASSERT_TRUE(collector.Start());
  collector.SetMode(OtlpCollector::Mode::kAccept, 400);
  BatchSpanExporter exporter(
      Fast(), MakeCurlTransport(collector.endpoint() + "/v1/traces", {}, absl::Seconds(5)));
  Tracer tracer(&exporter, Tracer::Options());
  tracer.StartSpan("s", SpanContext(), SpanKind::kInternal).End();
  ASSERT_TRUE(exporter.Flush(absl::Seconds(10)));
  EXPECT_EQ(collector.requests(), 1);
  EXPECT_EQ(exporter.dropped(), 1);
}

TEST(OtlpHttpExporterTest, UnavailableCollectorIsRetriedThenDropped) {
  OtlpCollector collector;
  ASSERT_TRUE(collector.Start());
  collector.SetMode(OtlpCollector::Mode::kAccept, 503);
  BatchSpanExporter exporter(
      Fast(), MakeCurlTransport(collector.endpoint() + "/v1/traces", {}, absl::Seconds(5)));
  Tracer tracer(&exporter, Tracer::Options());
  tracer.StartSpan("s", SpanContext(), SpanKind::kInternal).End();
  ASSERT_TRUE(exporter.Flush(absl::Seconds(10)));
  EXPECT_EQ(collector.requests(), 4);  // the first and three retries
  EXPECT_EQ(exporter.dropped(), 1);
}

TEST(OtlpHttpExporterTest, GzipRoundTripsThroughTheCollector) {
  const std::string data(10000, 'a');
  const std::string zipped = Gzip(data);
  EXPECT_LT(zipped.size(), data.size() / 10);
  EXPECT_EQ(static_cast<unsigned char>(zipped[0]), 0x1f);
}

}  // namespace
}  // namespace rein::trace
