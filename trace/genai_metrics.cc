// The GenAI semantic conventions' client metrics on the service's /metrics.
#include "trace/genai_metrics.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "trace/genai.h"
#include "trace/histograms.h"
#include "trace/service_spans.h"

namespace rein::trace {
namespace {

// The conventions' advised bucket bounds of gen_ai.client.token.usage.
const std::vector<double>& TokenBuckets() {
  static const std::vector<double> buckets = {
      1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864};
  return buckets;
}

// The conventions' advised bucket bounds of gen_ai.client.operation.duration (seconds).
const std::vector<double>& DurationBuckets() {
  static const std::vector<double> buckets = {0.01, 0.02, 0.04, 0.08,  0.16,  0.32,  0.64,
                                              1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92};
  return buckets;
}

const MetricInfo& TokenUsage() {
  static const MetricInfo info = {"gen_ai.client.token.usage", "{token}",
                                  "Number of input and output tokens used.", TokenBuckets()};
  return info;
}

const MetricInfo& OperationDuration() {
  static const MetricInfo info = {"gen_ai.client.operation.duration", "s",
                                  "GenAI operation duration.", DurationBuckets()};
  return info;
}

using OtlpAttributes = std::vector<std::pair<std::string, std::string>>;

// An attribute name as a Prometheus label name (gen_ai.system -> gen_ai_system).
std::string Label(const char* attribute) { return absl::StrReplaceAll(attribute, {{".", "_"}}); }

// A label value as Metrics takes it (`\` and `"` escaped).
std::string Value(const std::string& value) {
  return absl::StrReplaceAll(value, {{"\\", "\\\\"}, {"\"", "\\\""}, {"\n", "\\n"}});
}

std::string Pair(const char* attribute, const std::string& value) {
  return absl::StrCat(Label(attribute), "=\"", Value(value), "\"");
}

}  // namespace

void RecordModelCall(Metrics& metrics, const std::string& backend, const std::string& request_model,
                     const rein::v1::Usage& usage, double seconds, const absl::Status& status,
                     bool latest) {
  auto [provider, model] = ProviderAndModel(backend);
  if (!request_model.empty()) model = request_model;
  std::string labels = absl::StrCat(Pair(genai::kOperationName, genai::kChat), ",",
                                    Pair(genai::ProviderKey(latest), provider), ",",
                                    Pair(genai::kRequestModel, model));
  if (!status.ok()) {
    absl::StrAppend(&labels, ",", Pair(genai::kErrorType, absl::StatusCodeToString(status.code())));
  }
  metrics.Observe(kOperationDurationMetric, seconds, labels);
  const int64_t input =
      usage.input_tokens() + usage.cache_read_input_tokens() + usage.cache_creation_input_tokens();
  metrics.Observe(kTokenUsageMetric, static_cast<double>(input),
                  absl::StrCat(labels, ",", Pair(genai::kTokenType, "input")), TokenBuckets());
  metrics.Observe(kTokenUsageMetric, static_cast<double>(usage.output_tokens()),
                  absl::StrCat(labels, ",", Pair(genai::kTokenType, "output")), TokenBuckets());
  if (HistogramRecorder* otlp = HistogramRecorder::Global()) {
    OtlpAttributes attributes = {{genai::kOperationName, genai::kChat},
                                 {genai::ProviderKey(latest), provider},
                                 {genai::kRequestModel, model}};
    if (!status.ok()) {
      attributes.emplace_back(genai::kErrorType, absl::StatusCodeToString(status.code()));
    }
    otlp->Record(OperationDuration(), attributes, seconds);
    OtlpAttributes in = attributes, out = attributes;
    in.emplace_back(genai::kTokenType, "input");
    out.emplace_back(genai::kTokenType, "output");
    otlp->Record(TokenUsage(), in, static_cast<double>(input));
    otlp->Record(TokenUsage(), out, static_cast<double>(usage.output_tokens()));
  }
}

void RecordToolCall(Metrics& metrics, const std::string& tool, double seconds,
                    const std::string& error_type) {
  std::string labels = absl::StrCat(Pair(genai::kOperationName, genai::kExecuteTool), ",",
                                    Pair(genai::kToolName, tool));
  if (!error_type.empty()) absl::StrAppend(&labels, ",", Pair(genai::kErrorType, error_type));
  metrics.Observe(kOperationDurationMetric, seconds, labels);
  if (HistogramRecorder* otlp = HistogramRecorder::Global()) {
    OtlpAttributes attributes = {{genai::kOperationName, genai::kExecuteTool},
                                 {genai::kToolName, tool}};
    if (!error_type.empty()) attributes.emplace_back(genai::kErrorType, error_type);
    otlp->Record(OperationDuration(), attributes, seconds);
  }
}

}  // namespace rein::trace
