// One-line JSON logs on stderr: {"ts":..., "level":..., "service":..., "msg":..., "run_id":...}.
#ifndef REIN_COMMON_LOG_H_
#define REIN_COMMON_LOG_H_

#include <initializer_list>
#include <string>
#include <utility>

#include "absl/strings/string_view.h"

namespace rein {

enum class LogLevel { kDebug, kInfo, kWarning, kError };

// Sets the service name written in every line (once, from main). Thread-safe afterwards.
void SetLogService(absl::string_view service);

// Writes one JSON line. `fields` are extra string fields, e.g. {{"run_id", id}}.
// Thread-safe; a line is written with one write(2).
void Log(LogLevel level, absl::string_view message,
         std::initializer_list<std::pair<absl::string_view, absl::string_view>> fields = {});

inline void LogInfo(
    absl::string_view message,
    std::initializer_list<std::pair<absl::string_view, absl::string_view>> fields = {}) {
  Log(LogLevel::kInfo, message, fields);
}
inline void LogWarning(
    absl::string_view message,
    std::initializer_list<std::pair<absl::string_view, absl::string_view>> fields = {}) {
  Log(LogLevel::kWarning, message, fields);
}
inline void LogError(
    absl::string_view message,
    std::initializer_list<std::pair<absl::string_view, absl::string_view>> fields = {}) {
  Log(LogLevel::kError, message, fields);
}

// Escapes `s` as the inside of a JSON string (UTF-8 invalid bytes become \u00XX).
std::string JsonEscape(absl::string_view s);

}  // namespace rein

#endif  // REIN_COMMON_LOG_H_
