// Prometheus metrics with prometheus-cpp: a facade over one registry, and its /metrics endpoint.
#include "common/metrics.h"

#include <exception>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "prometheus/counter.h"
#include "prometheus/exposer.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "prometheus/text_serializer.h"

namespace rein {

const std::vector<double> kLatencyBucketsSeconds = {
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
    0.25,   0.5,     1,      2.5,   5,      10,    30,   60,    120};

std::optional<std::map<std::string, std::string>> ParseMetricLabels(absl::string_view labels) {
  std::map<std::string, std::string> parsed;
  size_t i = 0;
  while (i < labels.size()) {
    const size_t eq = labels.find('=', i);
    if (eq == absl::string_view::npos) return std::nullopt;
    const std::string name(absl::StripAsciiWhitespace(labels.substr(i, eq - i)));
    if (name.empty() || eq + 1 >= labels.size() || labels[eq + 1] != '"') return std::nullopt;
    std::string value;
    size_t j = eq + 2;
    for (; j < labels.size() && labels[j] != '"'; ++j) {
      if (labels[j] != '\\') {
        value.push_back(labels[j]);
        continue;
      }
      if (++j >= labels.size()) return std::nullopt;
      switch (labels[j]) {
        case '\\': value.push_back('\\'); break;
        case '"': value.push_back('"'); break;
        case 'n': value.push_back('\n'); break;
        default: return std::nullopt;
      }
    }
    if (j >= labels.size()) return std::nullopt;  // no closing quote
    if (!parsed.emplace(name, std::move(value)).second) return std::nullopt;
    i = j + 1;
    while (i < labels.size() && absl::ascii_isspace(static_cast<unsigned char>(labels[i]))) ++i;
    if (i < labels.size()) {
      if (labels[i] != ',') return std::nullopt;
      ++i;
    }
  }
  return parsed;
}

namespace {

// The series of `name` with `labels` in the family of `name`, registered on first use; nullptr
// when the labels do not parse or prometheus-cpp refuses the name or a label name.
template <typename T, typename Build, typename... Args>
T* Series(prometheus::Registry& registry, std::map<std::string, prometheus::Family<T>*>& families,
          const std::string& name, const std::string& labels, Build build, Args&&... args) {
  std::optional<std::map<std::string, std::string>> parsed = ParseMetricLabels(labels);
  if (!parsed) return nullptr;
  try {
    prometheus::Family<T>*& family = families[name];
    if (family == nullptr) family = &build().Name(name).Register(registry);
    return &family->Add(*parsed, std::forward<Args>(args)...);
  } catch (const std::exception&) {
    if (families[name] == nullptr) families.erase(name);
    return nullptr;
  }
}

}  // namespace

Metrics& Metrics::Global() {
  static Metrics* metrics = new Metrics();
  return *metrics;
}

Metrics::Metrics() : registry_(std::make_shared<prometheus::Registry>()) {}

Metrics::~Metrics() = default;

bool Metrics::Claim(const std::string& name, Kind kind) {
  return kinds_.emplace(name, kind).first->second == kind;
}

void Metrics::Add(const std::string& name, double delta, const std::string& labels) {
  absl::MutexLock lock(&mu_);
  if (!Claim(name, Kind::kCounter)) return;
  prometheus::Counter*& counter = counters_[{name, labels}];
  if (counter == nullptr) {
    counter = Series(*registry_, counter_families_, name, labels, prometheus::BuildCounter);
    if (counter == nullptr) return;
  }
  counter->Increment(delta);
}

void Metrics::Set(const std::string& name, double value, const std::string& labels) {
  absl::MutexLock lock(&mu_);
  if (!Claim(name, Kind::kGauge)) return;
  prometheus::Gauge*& gauge = gauges_[{name, labels}];
  if (gauge == nullptr) {
    gauge = Series(*registry_, gauge_families_, name, labels, prometheus::BuildGauge);
    if (gauge == nullptr) return;
  }
  gauge->Set(value);
}

void Metrics::Observe(const std::string& name, double seconds, const std::string& labels) {
  Observe(name, seconds, labels, kLatencyBucketsSeconds);
}

void Metrics::Observe(const std::string& name, double value, const std::string& labels,
                      const std::vector<double>& buckets) {
  absl::MutexLock lock(&mu_);
  if (!Claim(name, Kind::kHistogram)) return;
  prometheus::Histogram*& histogram = histograms_[{name, labels}];
  if (histogram == nullptr) {
    histogram =
        Series(*registry_, histogram_families_, name, labels, prometheus::BuildHistogram, buckets);
    if (histogram == nullptr) return;
  }
  histogram->Observe(value);
}

std::string Metrics::Render() const {
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, registry_->Collect());
  return out.str();
}

MetricsHttpServer::MetricsHttpServer(Metrics* metrics) : metrics_(metrics) {}

MetricsHttpServer::~MetricsHttpServer() { Stop(); }

absl::Status MetricsHttpServer::Start(const std::string& listen) {
  try {
    exposer_ = std::make_unique<prometheus::Exposer>(listen, /*num_threads=*/1);
  } catch (const std::exception& e) {
    return absl::UnavailableError(
        absl::StrCat("metrics: cannot listen on ", listen, ": ", e.what()));
  }
  exposer_->RegisterCollectable(metrics_->registry());
  const std::vector<int> ports = exposer_->GetListeningPorts();
  port_ = ports.empty() ? 0 : ports.front();
  return absl::OkStatus();
}

void MetricsHttpServer::Stop() { exposer_.reset(); }

absl::StatusOr<std::string> MetricsListenAddress(const std::string& metrics_listen,
                                                 int metrics_port) {
  if (metrics_port < 0 || metrics_port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("--metrics_port: must be in 0..65535, got ", metrics_port));
  }
  if (metrics_listen.empty()) {
    return metrics_port == 0 ? "" : absl::StrCat("127.0.0.1:", metrics_port);
  }
  if (metrics_port != 0) {
    return absl::InvalidArgumentError(
        "--metrics_listen and --metrics_port: give one (--metrics_port=P serves on "
        "127.0.0.1:P)");
  }
  const size_t colon = metrics_listen.rfind(':');
  int port = -1;
  if (colon == std::string::npos || colon == 0 ||
      !absl::SimpleAtoi(metrics_listen.substr(colon + 1), &port) || port < 0 || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("--metrics_listen: \"", metrics_listen.substr(0, 100), "\" is not HOST:PORT"));
  }
  return metrics_listen;
}

}  // namespace rein
