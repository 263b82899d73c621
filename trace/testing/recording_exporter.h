// A SpanExporter for tests: keeps every ended span, in the order they ended.
#ifndef REIN_TRACE_TESTING_RECORDING_EXPORTER_H_
#define REIN_TRACE_TESTING_RECORDING_EXPORTER_H_

#include <utility>
#include <vector>

#include "trace/tracer.h"

namespace rein::trace::testing {

// Not thread-safe: for tests that end spans on one thread.
class RecordingExporter final : public SpanExporter {
 public:
  void OnEnd(SpanData span) override { spans.push_back(std::move(span)); }
  std::vector<SpanData> spans;
};

}  // namespace rein::trace::testing

#endif  // REIN_TRACE_TESTING_RECORDING_EXPORTER_H_
