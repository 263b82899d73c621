// The GenAI semantic conventions' client metrics on the service's /metrics.
#include "trace/genai_metrics.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "trace/genai.h"
#include "trace/service_spans.h"

namespace rein::trace {
namespace {

// The conventions' advised bucket bounds of gen_ai.client.token.usage.
const std::vector<double>& TokenBuckets() {
  static const std::vector<double> buckets = {
      1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864};
  return buckets;
}

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
}

void RecordToolCall(Metrics& metrics, const std::string& tool, double seconds,
                    const std::string& error_type) {
  std::string labels = absl::StrCat(Pair(genai::kOperationName, genai::kExecuteTool), ",",
                                    Pair(genai::kToolName, tool));
  if (!error_type.empty()) absl::StrAppend(&labels, ",", Pair(genai::kErrorType, error_type));
  metrics.Observe(kOperationDurationMetric, seconds, labels);
}

}  // namespace rein::trace
