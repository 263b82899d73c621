// Tests of the GenAI client metrics: the tokens by type add up to the usage recorded, the
// durations land in the histogram with their labels.
#include "trace/genai_metrics.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace rein::trace {
namespace {

// The value of the exposition line that starts with `series` (-1 when absent).
double Sample(const std::string& text, const std::string& series) {
  size_t at = text.find(absl::StrCat("\n", series, " "));
  if (at == std::string::npos) return -1;
  at += series.size() + 2;
  return std::stod(text.substr(at, text.find('\n', at) - at));
}

TEST(GenAiMetricsTest, TokensByTypeSumToTheUsageOfTheRequests) {
  Metrics metrics;
  rein::v1::Usage first;
  first.set_input_tokens(100);
  first.set_output_tokens(20);
  first.set_cache_read_input_tokens(1000);
  first.set_cache_creation_input_tokens(50);
  rein::v1::Usage second;
  second.set_input_tokens(7);
  second.set_output_tokens(3);
  RecordModelCall(metrics, "anthropic:claude-x", "", first, 1.5, absl::OkStatus(), false);
  RecordModelCall(metrics, "anthropic:claude-x", "", second, 0.25, absl::OkStatus(), false);
  const std::string text = metrics.Render();
  const std::string labels =
      "gen_ai_operation_name=\"chat\",gen_ai_request_model=\"claude-x\",gen_ai_system="
      "\"anthropic\"";
  EXPECT_EQ(Sample(text, absl::StrCat("gen_ai_client_token_usage_sum{", labels,
                                      ",gen_ai_token_type=\"input\"}")),
            100 + 1000 + 50 + 7);
  EXPECT_EQ(Sample(text, absl::StrCat("gen_ai_client_token_usage_sum{", labels,
                                      ",gen_ai_token_type=\"output\"}")),
            23);
  EXPECT_EQ(Sample(text, absl::StrCat("gen_ai_client_token_usage_count{", labels,
                                      ",gen_ai_token_type=\"input\"}")),
            2);
  // The token buckets, not the latency ones: 10 tokens fall under le=16.
  EXPECT_EQ(Sample(text, absl::StrCat("gen_ai_client_token_usage_bucket{", labels,
                                      ",gen_ai_token_type=\"output\",le=\"16\"}")),
            1);
  EXPECT_EQ(
      Sample(text, absl::StrCat("gen_ai_client_operation_duration_seconds_sum{", labels, "}")),
      1.75);
}

TEST(GenAiMetricsTest, FailuresAndTheNewestNamesAreLabelled) {
  Metrics metrics;
  RecordModelCall(metrics, "scripted", "m", rein::v1::Usage(), 0.5, absl::UnavailableError("down"),
                  /*latest=*/true);
  RecordToolCall(metrics, "read_file", 0.125, "");
  RecordToolCall(metrics, "run_command", 2, "TIMEOUT");
  const std::string text = metrics.Render();
  EXPECT_EQ(Sample(text,
                   "gen_ai_client_operation_duration_seconds_count{error_type=\"UNAVAILABLE\","
                   "gen_ai_operation_name=\"chat\",gen_ai_provider_name=\"rein.scripted\","
                   "gen_ai_request_model=\"m\"}"),
            1);
  EXPECT_EQ(Sample(text,
                   "gen_ai_client_operation_duration_seconds_sum{gen_ai_operation_name="
                   "\"execute_tool\",gen_ai_tool_name=\"read_file\"}"),
            0.125);
  EXPECT_EQ(Sample(text,
                   "gen_ai_client_operation_duration_seconds_sum{error_type=\"TIMEOUT\","
                   "gen_ai_operation_name=\"execute_tool\",gen_ai_tool_name=\"run_command\"}"),
            2);
}

}  // namespace
}  // namespace rein::trace
