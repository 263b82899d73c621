// Tests of the OTEL_* environment variables.
#include "trace/otel_config.h"

#include <map>

#include "gtest/gtest.h"

namespace rein::trace {
namespace {

LoadedConfig Read(const std::map<std::string, std::string>& env) {
  return ReadOtelConfig(
      [&env](const char* name) -> const char* {
        auto it = env.find(name);
        return it == env.end() ? nullptr : it->second.c_str();
      },
      "rein-router");
}

std::string Attr(const Attributes& attributes, const std::string& key) {
  for (const auto& [k, v] : attributes) {
    if (k == key) return std::get<std::string>(v);
  }
  return "<absent>";
}

TEST(OtelConfigTest, NoEndpointIsOff) {
  LoadedConfig c = Read({{"OTEL_SERVICE_NAME", "x"}});
  EXPECT_FALSE(c.config.enabled);
  EXPECT_TRUE(c.warnings.empty());
}

TEST(OtelConfigTest, BaseEndpointGetsTheTracesPath) {
  LoadedConfig c = Read({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/"}});
  EXPECT_TRUE(c.config.enabled);
  EXPECT_EQ(c.config.traces_url, "http://collector:4318/v1/traces");
  EXPECT_EQ(Attr(c.config.resource, "service.name"), "rein-router");
}

TEST(OtelConfigTest, TracesEndpointIsUsedAsItIs) {
  LoadedConfig c = Read({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://a:4318"},
                         {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "https://b/custom"}});
  EXPECT_EQ(c.config.traces_url, "https://b/custom");
}

TEST(OtelConfigTest, SdkDisabledWinsOverAnEndpoint) {
  LoadedConfig c =
      Read({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://a:4318"}, {"OTEL_SDK_DISABLED", "true"}});
  EXPECT_FALSE(c.config.enabled);
}

TEST(OtelConfigTest, EndpointThatIsNotAUrlIsOffWithAWarning) {
  LoadedConfig c = Read({{"OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318"}});
  EXPECT_FALSE(c.config.enabled);
  ASSERT_EQ(c.warnings.size(), 1u);
  EXPECT_NE(c.warnings[0].find("OTEL_EXPORTER_OTLP_ENDPOINT"), std::string::npos);
}

TEST(OtelConfigTest, HeadersAreDecoded) {
  LoadedConfig c = Read({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://a"},
                         {"OTEL_EXPORTER_OTLP_HEADERS", "api-key=abc%20def, x-tenant = t1"}});
  ASSERT_EQ(c.config.headers.size(), 2u);
  EXPECT_EQ(c.config.headers[0].first, "api-key");
  EXPECT_EQ(c.config.headers[0].second, "abc def");
  EXPECT_EQ(c.config.headers[1].second, "t1");
}

TEST(OtelConfigTest, BadHeadersAreIgnoredNamingTheVariable) {
  LoadedConfig c = Read({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://a"},
                         {"OTEL_EXPORTER_OTLP_TRACES_HEADERS", "novalue,k=%zz"}});
  EXPECT_TRUE(c.config.headers.empty());
  ASSERT_EQ(c.warnings.size(), 1u);
  EXPECT_NE(c.warnings[0].find("OTEL_EXPORTER_OTLP_TRACES_HEADERS"), std::string::npos);
}

TEST(OtelConfigTest, ServiceNameOverridesResourceAttributes) {
  LoadedConfig c = Read({{"OTEL_RESOURCE_ATTRIBUTES", "service.name=a,deployment.environment=prod"},
                         {"OTEL_SERVICE_NAME", "b"}});
  EXPECT_EQ(Attr(c.config.resource, "service.name"), "b");
  EXPECT_EQ(Attr(c.config.resource, "deployment.environment"), "prod");
  LoadedConfig d = Read({{"OTEL_RESOURCE_ATTRIBUTES", "service.name=a"}});
  EXPECT_EQ(Attr(d.config.resource, "service.name"), "a");
}

TEST(OtelConfigTest, MalformedResourceAttributesAreDiscardedWhole) {
  LoadedConfig c = Read({{"OTEL_RESOURCE_ATTRIBUTES", "a=1,broken"}});
  EXPECT_EQ(Attr(c.config.resource, "a"), "<absent>");
  ASSERT_EQ(c.warnings.size(), 1u);
  EXPECT_NE(c.warnings[0].find("OTEL_RESOURCE_ATTRIBUTES"), std::string::npos);
}

TEST(OtelConfigTest, SamplerChoices) {
  EXPECT_TRUE(Read({}).config.sampler.parent_based);
  LoadedConfig ratio =
      Read({{"OTEL_TRACES_SAMPLER", "traceidratio"}, {"OTEL_TRACES_SAMPLER_ARG", "0.25"}});
  EXPECT_EQ(ratio.config.sampler.kind, Sampler::Kind::kTraceIdRatio);
  EXPECT_FALSE(ratio.config.sampler.parent_based);
  EXPECT_DOUBLE_EQ(ratio.config.sampler.ratio, 0.25);
  LoadedConfig bad_arg =
      Read({{"OTEL_TRACES_SAMPLER", "parentbased_traceidratio"}, {"OTEL_TRACES_SAMPLER_ARG", "2"}});
  EXPECT_DOUBLE_EQ(bad_arg.config.sampler.ratio, 1.0);
  EXPECT_EQ(bad_arg.warnings.size(), 1u);
  LoadedConfig unknown = Read({{"OTEL_TRACES_SAMPLER", "jaeger_remote"}});
  EXPECT_EQ(unknown.config.sampler.kind, Sampler::Kind::kAlwaysOn);
  EXPECT_EQ(unknown.warnings.size(), 1u);
}

TEST(OtelConfigTest, OptInAndContentCaptureAndNumbers) {
  LoadedConfig c = Read({{"OTEL_SEMCONV_STABILITY_OPT_IN", "http, gen_ai_latest_experimental"},
                         {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "TRUE"},
                         {"OTEL_EXPORTER_OTLP_COMPRESSION", "gzip"},
                         {"OTEL_EXPORTER_OTLP_TIMEOUT", "2500"},
                         {"OTEL_BSP_MAX_QUEUE_SIZE", "-1"},
                         {"OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"}});
  EXPECT_TRUE(c.config.genai_latest);
  EXPECT_TRUE(c.config.capture_content);
  EXPECT_TRUE(c.config.gzip);
  EXPECT_EQ(c.config.timeout, absl::Milliseconds(2500));
  EXPECT_EQ(c.config.max_queue_size, 2048);
  EXPECT_EQ(c.warnings.size(), 2u);  // the queue size and the protocol
  EXPECT_FALSE(Read({}).config.genai_latest);
}

TEST(OtelConfigTest, MetricsFollowTheBaseEndpointWithTheirOwnPathAndInterval) {
  LoadedConfig c = Read({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/"},
                         {"OTEL_EXPORTER_OTLP_METRICS_HEADERS", "k=v"},
                         {"OTEL_EXPORTER_OTLP_COMPRESSION", "gzip"}});
  EXPECT_TRUE(c.config.metrics_enabled);
  EXPECT_EQ(c.config.metrics_url, "http://collector:4318/v1/metrics");
  EXPECT_EQ(c.config.metric_export_interval, absl::Seconds(60));  // the specification's default
  EXPECT_TRUE(c.config.metrics_gzip);
  ASSERT_EQ(c.config.metrics_headers.size(), 1u);
  EXPECT_EQ(c.config.metrics_headers[0].first, "k");
  EXPECT_TRUE(c.config.headers.empty()) << "the metrics' headers are not the traces'";
  EXPECT_TRUE(c.warnings.empty());

  c = Read({{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "http://m:1/x"},
            {"OTEL_METRIC_EXPORT_INTERVAL", "250"}});
  EXPECT_TRUE(c.config.metrics_enabled);
  EXPECT_FALSE(c.config.enabled) << "no traces endpoint";
  EXPECT_EQ(c.config.metrics_url, "http://m:1/x");
  EXPECT_EQ(c.config.metric_export_interval, absl::Milliseconds(250));

  c = Read({{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://t:1/v1/traces"}});
  EXPECT_TRUE(c.config.enabled);
  EXPECT_FALSE(c.config.metrics_enabled) << "a traces endpoint says nothing of metrics";
}

TEST(OtelConfigTest, MetricsAreOffWhenTheExporterIsNoneOrTheSdkDisabled) {
  EXPECT_FALSE(
      Read({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://a"}, {"OTEL_METRICS_EXPORTER", "none"}})
          .config.metrics_enabled);
  EXPECT_FALSE(Read({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://a"}, {"OTEL_SDK_DISABLED", "true"}})
                   .config.metrics_enabled);
  LoadedConfig c =
      Read({{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "m:1"}, {"OTEL_METRIC_EXPORT_INTERVAL", "x"}});
  EXPECT_FALSE(c.config.metrics_enabled);
  EXPECT_EQ(c.warnings.size(), 2u);  // each names its variable
  EXPECT_EQ(c.config.metric_export_interval, absl::Seconds(60));
}

}  // namespace
}  // namespace rein::trace
