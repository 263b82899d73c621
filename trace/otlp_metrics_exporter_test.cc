// Tests of the OTLP metrics exporter against a collector on loopback.
#include "trace/otlp_metrics_exporter.h"

#include "gtest/gtest.h"
#include "trace/testing/otlp_collector.h"

namespace rein::trace {
namespace {

using opentelemetry::proto::collector::metrics::v1::ExportMetricsServiceRequest;
using testing::OtlpCollector;

const MetricInfo kDuration = {"gen_ai.client.operation.duration", "s", "d", {0.01, 0.02, 0.04}};

std::unique_ptr<OtlpTransport> To(const OtlpCollector& collector) {
  return MakeCurlTransport(collector.endpoint() + "/v1/metrics", {}, absl::Seconds(5));
}

TEST(OtlpMetricsExporterTest, SendsCumulativeHistogramsWithTheResource) {
  OtlpCollector collector;
  ASSERT_TRUE(collector.Start());
  Histograms histograms;
  PeriodicMetricExporter::Options options;
  options.resource = {{"service.name", std::string("rein-planner")}};
  options.interval = absl::Hours(1);  // exports only when asked
  options.gzip = true;
  PeriodicMetricExporter exporter(options, &histograms, To(collector));
  EXPECT_TRUE(exporter.ExportNow());
  EXPECT_EQ(collector.requests(), 0) << "nothing recorded: nothing sent";

  histograms.Record(kDuration, {{"gen_ai.tool.name", "read_file"}}, 0.015);
  ASSERT_TRUE(exporter.ExportNow());
  histograms.Record(kDuration, {{"gen_ai.tool.name", "read_file"}}, 0.5);
  ASSERT_TRUE(exporter.ExportNow());

  std::vector<ExportMetricsServiceRequest> received = collector.Metrics();
  ASSERT_EQ(received.size(), 2u);
  const auto& rm = received[1].resource_metrics(0);
  EXPECT_EQ(rm.resource().attributes(0).key(), "service.name");
  EXPECT_EQ(rm.resource().attributes(0).value().string_value(), "rein-planner");
  const auto& metric = rm.scope_metrics(0).metrics(0);
  EXPECT_EQ(rm.scope_metrics(0).scope().name(), "rein");
  EXPECT_EQ(metric.name(), "gen_ai.client.operation.duration");
  EXPECT_EQ(metric.unit(), "s");
  ASSERT_TRUE(metric.has_histogram());
  EXPECT_EQ(metric.histogram().aggregation_temporality(),
            opentelemetry::proto::metrics::v1::AGGREGATION_TEMPORALITY_CUMULATIVE);
  ASSERT_EQ(metric.histogram().data_points_size(), 1);
  const auto& point = metric.histogram().data_points(0);
  EXPECT_EQ(point.attributes(0).key(), "gen_ai.tool.name");
  EXPECT_EQ(point.attributes(0).value().string_value(), "read_file");
  // Cumulative: the second export holds both values, from the same start.
  EXPECT_EQ(point.count(), 2u);
  EXPECT_DOUBLE_EQ(point.sum(), 0.515);
  EXPECT_EQ(std::vector<double>(point.explicit_bounds().begin(), point.explicit_bounds().end()),
            (std::vector<double>{0.01, 0.02, 0.04}));
  EXPECT_EQ(std::vector<uint64_t>(point.bucket_counts().begin(), point.bucket_counts().end()),
            (std::vector<uint64_t>{0, 1, 0, 1}));
  const auto& first = received[0].resource_metrics(0).scope_metrics(0).metrics(0);
  EXPECT_EQ(first.histogram().data_points(0).count(), 1u);
  EXPECT_EQ(first.histogram().data_points(0).start_time_unix_nano(), point.start_time_unix_nano());
  EXPECT_LT(point.start_time_unix_nano(), point.time_unix_nano());
}

TEST(OtlpMetricsExporterTest, ExportsEveryIntervalAndOnceMoreAtShutdown) {
  OtlpCollector collector;
  ASSERT_TRUE(collector.Start());
  Histograms histograms;
  histograms.Record(kDuration, {}, 1);
  PeriodicMetricExporter::Options options;
  options.interval = absl::Milliseconds(50);
  auto exporter = std::make_unique<PeriodicMetricExporter>(options, &histograms, To(collector));
  const absl::Time until = absl::Now() + absl::Seconds(10);
  while (collector.Metrics().size() < 2 && absl::Now() < until) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_GE(collector.Metrics().size(), 2u);
  histograms.Record(kDuration, {}, 2);
  exporter.reset();  // the last export carries the value recorded just before
  const auto last = collector.Metrics().back();
  EXPECT_EQ(last.resource_metrics(0).scope_metrics(0).metrics(0).histogram().data_points(0).count(),
            2u);
}

TEST(OtlpMetricsExporterTest, ACollectorThatRefusesIsReportedAndTheNextExportCarriesTheTotals) {
  OtlpCollector collector;
  ASSERT_TRUE(collector.Start());
  collector.SetMode(OtlpCollector::Mode::kAccept, 503);
  Histograms histograms;
  PeriodicMetricExporter::Options options;
  options.interval = absl::Hours(1);
  PeriodicMetricExporter exporter(options, &histograms, To(collector));
  histograms.Record(kDuration, {}, 1);
  EXPECT_FALSE(exporter.ExportNow());
  collector.SetMode(OtlpCollector::Mode::kAccept, 200);
  histograms.Record(kDuration, {}, 1);
  ASSERT_TRUE(exporter.ExportNow());
  ASSERT_EQ(collector.Metrics().size(), 1u);
  EXPECT_EQ(collector.Metrics()[0]
                .resource_metrics(0)
                .scope_metrics(0)
                .metrics(0)
                .histogram()
                .data_points(0)
                .count(),
            2u);
}

}  // namespace
}  // namespace rein::trace
