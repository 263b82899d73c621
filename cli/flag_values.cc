// reinctl's flag values: one flag's text as a typed value.
#include "cli/flag_values.h"

#include <cmath>

#include "absl/strings/str_split.h"

namespace rein::cli {

std::optional<std::string> Last(const FlagValues& values, const std::string& name) {
  auto it = values.find(name);
  if (it == values.end() || it->second.empty()) return std::nullopt;
  return it->second.back();
}

absl::StatusOr<bool> ParseBool(absl::string_view flag, absl::string_view value) {
  std::string lower = absl::AsciiStrToLower(value);
  if (lower == "true" || lower == "1" || lower == "yes") return true;
  if (lower == "false" || lower == "0" || lower == "no") return false;
  return UsageError(absl::StrCat("--", flag, ": \"", value, "\" is not a boolean"));
}

absl::StatusOr<absl::Duration> ParsePositiveDuration(absl::string_view flag,
                                                     absl::string_view value) {
  absl::Duration parsed;
  if (!absl::ParseDuration(value, &parsed) || parsed == absl::InfiniteDuration()) {
    return UsageError(
        absl::StrCat("--", flag, ": \"", value, "\" is not a duration (e.g. 500ms, 90s, 10m, 1h)"));
  }
  if (parsed <= absl::ZeroDuration()) {
    return UsageError(absl::StrCat("--", flag, ": the duration must be positive"));
  }
  return parsed;
}

absl::StatusOr<double> ParseDollars(absl::string_view flag, absl::string_view value,
                                    bool allow_zero) {
  double parsed = 0;
  if (value.empty() || value.find_first_not_of("0123456789.") != absl::string_view::npos ||
      !absl::SimpleAtod(value, &parsed) || !std::isfinite(parsed)) {
    return UsageError(
        absl::StrCat("--", flag, ": \"", value, "\" is not an amount of US dollars (e.g. 0.50)"));
  }
  if (!allow_zero && parsed <= 0) {
    return UsageError(absl::StrCat("--", flag, ": the amount must be above 0"));
  }
  return parsed;
}

std::vector<std::string> SplitList(const std::vector<std::string>& values) {
  std::vector<std::string> items;
  for (const std::string& value : values) {
    for (absl::string_view item : absl::StrSplit(value, ',')) {
      item = absl::StripAsciiWhitespace(item);
      if (!item.empty()) items.emplace_back(item);
    }
  }
  return items;
}

}  // namespace rein::cli
