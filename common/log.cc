// One-line JSON logs on stderr.
#include "common/log.h"

#include <unistd.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "trace/span_context.h"
#include "trace/tracer.h"

namespace rein {
namespace {

std::string& Service() {
  static std::string* service = new std::string("rein");
  return *service;
}

const char* LevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug: return "debug";
    case LogLevel::kInfo: return "info";
    case LogLevel::kWarning: return "warning";
    case LogLevel::kError: return "error";
  }
  return "info";
}

}  // namespace

void SetLogService(absl::string_view service) { Service() = std::string(service); }

std::string JsonEscape(absl::string_view s) {
  std::string out;
  out.reserve(s.size() + 8);
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20 || c >= 0x80) {
          // Pass valid UTF-8 sequences through; escape everything else.
          int len = (c >= 0xF0 && c <= 0xF4)  ? 4
                    : (c >= 0xE0)             ? 3
                    : (c >= 0xC2 && c < 0xE0) ? 2
                                              : 0;
          bool valid = c >= 0x80 && len > 0 && i + len <= s.size();
          for (int k = 1; valid && k < len; ++k) {
            valid = (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
          }
          if (valid) {
            out.append(s.data() + i, len);
            i += len - 1;
          } else {
            out += absl::StrFormat("\\u%04x", c);
          }
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out;
}

void Log(LogLevel level, absl::string_view message,
         std::initializer_list<std::pair<absl::string_view, absl::string_view>> fields) {
  std::string line = absl::StrCat(
      "{\"ts\":\"", absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::Now(), absl::UTCTimeZone()),
      "\",\"level\":\"", LevelName(level), "\",\"service\":\"", JsonEscape(Service()),
      "\",\"msg\":\"", JsonEscape(message), "\"");
  bool about_a_run = false, has_trace = false;
  for (const auto& [key, value] : fields) {
    absl::StrAppend(&line, ",\"", JsonEscape(key), "\":\"", JsonEscape(value), "\"");
    about_a_run |= key == "run_id";
    has_trace |= key == "trace_id";
  }
  // A line about a run, written while serving one of its calls, names the run's trace (the
  // caller's traceparent is the run's; unknown with tracing off).
  if (about_a_run && !has_trace) {
    const trace::SpanContext* context = trace::CurrentContext();
    if (context != nullptr && context->valid()) {
      absl::StrAppend(&line, ",\"trace_id\":\"", context->trace_id_hex(), "\"");
    }
  }
  line += "}\n";
  ssize_t ignored = write(STDERR_FILENO, line.data(), line.size());
  (void)ignored;
}

}  // namespace rein
