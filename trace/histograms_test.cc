// Tests of the cumulative histograms kept for OTLP.
#include "trace/histograms.h"

#include "gtest/gtest.h"

namespace rein::trace {
namespace {

const MetricInfo kTokens = {"tokens", "{token}", "", {1, 4, 16}};

TEST(HistogramsTest, BucketsHoldValuesUpToTheirBoundAndSeriesAreKeyedByAttributes) {
  Histograms histograms;
  for (double v : {0.5, 1.0, 3.0, 4.0, 100.0}) {
    histograms.Record(kTokens, {{"b", "2"}, {"a", "1"}}, v);
  }
  histograms.Record(kTokens, {{"a", "1"}, {"b", "3"}}, 7);
  std::vector<HistogramSeries> series = histograms.Snapshot();
  ASSERT_EQ(series.size(), 2u);
  const HistogramSeries& s = series[0];
  EXPECT_EQ(s.attributes,
            (std::vector<std::pair<std::string, std::string>>{{"a", "1"}, {"b", "2"}}));
  // (-inf, 1], (1, 4], (4, 16], (16, +inf)
  EXPECT_EQ(s.counts, (std::vector<uint64_t>{2, 2, 0, 1}));
  EXPECT_EQ(s.count, 5u);
  EXPECT_DOUBLE_EQ(s.sum, 108.5);
  EXPECT_DOUBLE_EQ(s.min, 0.5);
  EXPECT_DOUBLE_EQ(s.max, 100);
  EXPECT_EQ(series[1].counts, (std::vector<uint64_t>{0, 0, 1, 0}));
}

TEST(HistogramsTest, GlobalIsNullUntilInstalled) {
  EXPECT_EQ(HistogramRecorder::Global(), nullptr);
  Histograms histograms;
  HistogramRecorder::InstallGlobal(&histograms);
  EXPECT_EQ(HistogramRecorder::Global(), &histograms);
  HistogramRecorder::InstallGlobal(nullptr);
}

}  // namespace
}  // namespace rein::trace
