// The standard OTEL_* environment variables, read into the exporter's and tracer's options.
#include "trace/otel_config.h"

#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace rein::trace {
namespace {

using Env = std::function<const char*(const char*)>;

std::string Get(const Env& getenv, const char* name) {
  const char* value = getenv(name);
  return value == nullptr ? "" : std::string(absl::StripAsciiWhitespace(value));
}

// The signal-specific variable when set, else the general one.
std::pair<std::string, std::string> GetEither(const Env& getenv, const char* traces,
                                              const char* general) {
  std::string v = Get(getenv, traces);
  if (!v.empty()) return {traces, v};
  return {general, Get(getenv, general)};
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  c = absl::ascii_tolower(c);
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// W3C Baggage's percent-decoding; nullopt on a bad escape.
std::optional<std::string> PercentDecode(absl::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out.push_back(s[i]);
      continue;
    }
    if (i + 2 >= s.size()) return std::nullopt;
    int hi = HexDigit(s[i + 1]), lo = HexDigit(s[i + 2]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out.push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  return out;
}

// "k1=v1,k2=v2" (values percent-encoded) to pairs; nullopt naming the bad entry in `error`.
std::optional<std::vector<std::pair<std::string, std::string>>> ParsePairs(absl::string_view text,
                                                                           std::string* error) {
  std::vector<std::pair<std::string, std::string>> pairs;
  for (absl::string_view entry : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    std::pair<absl::string_view, absl::string_view> kv =
        absl::StrSplit(entry, absl::MaxSplits('=', 1));
    absl::string_view key = absl::StripAsciiWhitespace(kv.first);
    std::optional<std::string> value = PercentDecode(absl::StripAsciiWhitespace(kv.second));
    if (key.empty() || !absl::StrContains(entry, '=') || !value.has_value()) {
      *error = absl::StrCat("\"", entry, "\" is not key=value (value percent-encoded)");
      return std::nullopt;
    }
    pairs.emplace_back(std::string(key), *value);
  }
  return pairs;
}

// A duration in milliseconds; nullopt when not a non-negative integer.
std::optional<absl::Duration> Millis(const std::string& text) {
  int64_t ms = 0;
  if (!absl::SimpleAtoi(text, &ms) || ms < 0) return std::nullopt;
  return absl::Milliseconds(ms);
}

void ReadSampler(const Env& getenv, LoadedConfig* out) {
  Sampler& s = out->config.sampler;
  const std::string name = absl::AsciiStrToLower(Get(getenv, "OTEL_TRACES_SAMPLER"));
  const std::string arg = Get(getenv, "OTEL_TRACES_SAMPLER_ARG");
  if (name.empty() || name == "parentbased_always_on") return;  // the default
  if (name == "always_on" || name == "always_off" || name == "traceidratio") {
    s.parent_based = false;
  } else if (name != "parentbased_always_off" && name != "parentbased_traceidratio") {
    out->warnings.push_back(absl::StrCat("OTEL_TRACES_SAMPLER: \"", name,
                                         "\" is not supported; using parentbased_always_on"));
    return;
  }
  if (absl::EndsWith(name, "always_off")) s.kind = Sampler::Kind::kAlwaysOff;
  if (absl::EndsWith(name, "traceidratio")) {
    s.kind = Sampler::Kind::kTraceIdRatio;
    double ratio = 1.0;
    if (!arg.empty() && (!absl::SimpleAtod(arg, &ratio) || !(ratio >= 0.0 && ratio <= 1.0))) {
      out->warnings.push_back(absl::StrCat("OTEL_TRACES_SAMPLER_ARG: \"", arg,
                                           "\" is not a probability in [0, 1]; using 1.0"));
      ratio = 1.0;
    }
    s.ratio = ratio;
  }
}

void ReadInt(const Env& getenv, const char* name, int* field, std::vector<std::string>* warnings) {
  const std::string text = Get(getenv, name);
  if (text.empty()) return;
  int value = 0;
  if (!absl::SimpleAtoi(text, &value) || value <= 0) {
    warnings->push_back(
        absl::StrCat(name, ": \"", text, "\" is not a positive integer; using ", *field));
    return;
  }
  *field = value;
}

void ReadDuration(const Env& getenv, const char* traces, const char* general, absl::Duration* field,
                  std::vector<std::string>* warnings) {
  auto [name, text] = general == nullptr ? std::make_pair(std::string(traces), Get(getenv, traces))
                                         : GetEither(getenv, traces, general);
  if (text.empty()) return;
  if (std::optional<absl::Duration> d = Millis(text)) {
    *field = *d;
  } else {
    warnings->push_back(absl::StrCat(name, ": \"", text,
                                     "\" is not a number of milliseconds; using ",
                                     absl::ToInt64Milliseconds(*field)));
  }
}

// An OTLP endpoint: the signal's own variable as it is, else the general one + `path`; "" when
// neither is set or the URL is not http(s) (with a warning).
bool IsHttpUrl(const std::string& url) {
  return absl::StartsWith(url, "http://") || absl::StartsWith(url, "https://");
}

// An OTLP endpoint: the signal's own variable as it is, else OTEL_EXPORTER_OTLP_ENDPOINT +
// `path`; "" when neither is set or the URL is not http(s) (a warning for the signal's own;
// ReadOtelConfig reports the general one, once).
std::string ReadEndpoint(const Env& getenv, const char* signal_name, const char* path,
                         const char* what, std::vector<std::string>* warnings) {
  std::string url = Get(getenv, signal_name);
  if (!url.empty()) {
    if (IsHttpUrl(url)) return url;
    warnings->push_back(absl::StrCat(signal_name, ": \"", url,
                                     "\" is not an http:// or https:// URL; ", what, " is off"));
    return "";
  }
  url = Get(getenv, "OTEL_EXPORTER_OTLP_ENDPOINT");
  if (url.empty() || !IsHttpUrl(url)) return "";
  return absl::StrCat(absl::StripSuffix(url, "/"), path);
}

void ReadMetrics(const Env& getenv, bool disabled, LoadedConfig* out) {
  OtelConfig& c = out->config;
  std::vector<std::string>& warnings = out->warnings;
  std::string error;
  auto [headers_name, headers_text] =
      GetEither(getenv, "OTEL_EXPORTER_OTLP_METRICS_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS");
  if (auto pairs = ParsePairs(headers_text, &error)) {
    c.metrics_headers = *std::move(pairs);
  } else {
    warnings.push_back(absl::StrCat(headers_name, ": ", error, "; ignored"));
  }
  auto [compression_name, compression] =
      GetEither(getenv, "OTEL_EXPORTER_OTLP_METRICS_COMPRESSION", "OTEL_EXPORTER_OTLP_COMPRESSION");
  c.metrics_gzip = compression == "gzip";
  if (!c.metrics_gzip && !compression.empty() && compression != "none") {
    warnings.push_back(
        absl::StrCat(compression_name, ": \"", compression, "\" is not gzip or none; using none"));
  }
  ReadDuration(getenv, "OTEL_EXPORTER_OTLP_METRICS_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT",
               &c.metrics_timeout, &warnings);
  ReadDuration(getenv, "OTEL_METRIC_EXPORT_INTERVAL", nullptr, &c.metric_export_interval,
               &warnings);
  const std::string exporter = absl::AsciiStrToLower(Get(getenv, "OTEL_METRICS_EXPORTER"));
  if (!exporter.empty() && exporter != "otlp" && exporter != "none") {
    warnings.push_back(
        absl::StrCat("OTEL_METRICS_EXPORTER: \"", exporter, "\" is not otlp or none; using otlp"));
  }
  const std::string url = ReadEndpoint(getenv, "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "/v1/metrics",
                                       "metrics export", &warnings);
  if (url.empty() || disabled || exporter == "none") return;
  c.metrics_url = url;
  c.metrics_enabled = true;
}

}  // namespace

LoadedConfig ReadOtelConfig(const Env& getenv, const std::string& service_name) {
  LoadedConfig out;
  OtelConfig& c = out.config;
  std::vector<std::string>& warnings = out.warnings;

  // Resource: OTEL_RESOURCE_ATTRIBUTES, then service.name over it.
  std::string error;
  std::string service = service_name;
  const std::string resource_text = Get(getenv, "OTEL_RESOURCE_ATTRIBUTES");
  if (auto pairs = ParsePairs(resource_text, &error)) {
    for (auto& [k, v] : *pairs) {
      if (k == "service.name") {
        service = v;
      } else {
        c.resource.emplace_back(k, v);
      }
    }
  } else {
    // The specification: a value that fails to parse is discarded whole, with an error.
    warnings.push_back(absl::StrCat("OTEL_RESOURCE_ATTRIBUTES: ", error, "; ignored"));
  }
  if (const std::string name = Get(getenv, "OTEL_SERVICE_NAME"); !name.empty()) service = name;
  c.resource.insert(c.resource.begin(), {"service.name", service});

  auto [headers_name, headers_text] =
      GetEither(getenv, "OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS");
  if (auto pairs = ParsePairs(headers_text, &error)) {
    c.headers = *std::move(pairs);
  } else {
    warnings.push_back(absl::StrCat(headers_name, ": ", error, "; ignored"));
  }

  ReadSampler(getenv, &out);
  auto [compression_name, compression] =
      GetEither(getenv, "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "OTEL_EXPORTER_OTLP_COMPRESSION");
  if (compression == "gzip") {
    c.gzip = true;
  } else if (!compression.empty() && compression != "none") {
    warnings.push_back(
        absl::StrCat(compression_name, ": \"", compression, "\" is not gzip or none; using none"));
  }
  auto [protocol_name, protocol] =
      GetEither(getenv, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL");
  if (!protocol.empty() && protocol != "http/protobuf") {
    warnings.push_back(absl::StrCat(protocol_name, ": \"", protocol,
                                    "\" is not supported (rein exports http/protobuf only); "
                                    "using http/protobuf"));
  }
  ReadDuration(getenv, "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT",
               &c.timeout, &warnings);
  ReadDuration(getenv, "OTEL_BSP_SCHEDULE_DELAY", nullptr, &c.schedule_delay, &warnings);
  ReadInt(getenv, "OTEL_BSP_MAX_QUEUE_SIZE", &c.max_queue_size, &warnings);
  ReadInt(getenv, "OTEL_BSP_MAX_EXPORT_BATCH_SIZE", &c.max_export_batch_size, &warnings);
  if (c.max_export_batch_size > c.max_queue_size) c.max_export_batch_size = c.max_queue_size;

  for (absl::string_view opt : absl::StrSplit(Get(getenv, "OTEL_SEMCONV_STABILITY_OPT_IN"), ',')) {
    if (absl::StripAsciiWhitespace(opt) == "gen_ai_latest_experimental") c.genai_latest = true;
  }
  const std::string capture =
      absl::AsciiStrToLower(Get(getenv, "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"));
  c.capture_content = capture == "true";

  // The endpoints last: without one (or disabled) the signal is off, whatever else is set.
  const std::string disabled = absl::AsciiStrToLower(Get(getenv, "OTEL_SDK_DISABLED"));
  if (!disabled.empty() && disabled != "true" && disabled != "false") {
    warnings.push_back(
        absl::StrCat("OTEL_SDK_DISABLED: \"", disabled, "\" is not true or false; using false"));
  }
  if (const std::string general = Get(getenv, "OTEL_EXPORTER_OTLP_ENDPOINT");
      !general.empty() && !IsHttpUrl(general)) {
    warnings.push_back(absl::StrCat("OTEL_EXPORTER_OTLP_ENDPOINT: \"", general,
                                    "\" is not an http:// or https:// URL; tracing and metrics "
                                    "export are off unless their own endpoints are set"));
  }
  ReadMetrics(getenv, disabled == "true", &out);
  const std::string url = ReadEndpoint(getenv, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "/v1/traces",
                                       "tracing", &warnings);
  if (url.empty() || disabled == "true") return out;
  c.traces_url = url;
  c.enabled = true;
  return out;
}

}  // namespace rein::trace
