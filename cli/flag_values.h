// reinctl's flag values: one flag's text as a typed value, or a usage error naming the flag.
#ifndef REIN_CLI_FLAG_VALUES_H_
#define REIN_CLI_FLAG_VALUES_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "google/protobuf/descriptor.h"

namespace rein::cli {

// The values given for each flag, in order; booleans get "true"/"false".
using FlagValues = std::map<std::string, std::vector<std::string>>;

// A mistake on the command line (reinctl exits 2).
inline absl::Status UsageError(absl::string_view message) {
  return absl::InvalidArgumentError(message);
}

// The last value given for `name`, if any.
std::optional<std::string> Last(const FlagValues& values, const std::string& name);

// true/1/yes or false/0/no, any case.
absl::StatusOr<bool> ParseBool(absl::string_view flag, absl::string_view value);

// A positive duration as absl::ParseDuration reads it (500ms, 90s, 10m, 1h).
absl::StatusOr<absl::Duration> ParsePositiveDuration(absl::string_view flag,
                                                     absl::string_view value);

// An amount of US dollars: digits and at most one point, no sign or currency symbol; above 0
// unless `allow_zero`.
absl::StatusOr<double> ParseDollars(absl::string_view flag, absl::string_view value,
                                    bool allow_zero);

// The comma-separated items of every value, trimmed, empty ones dropped.
std::vector<std::string> SplitList(const std::vector<std::string>& values);

// An integer of type Int, at least `min`.
template <typename Int>
absl::StatusOr<Int> ParseInt(absl::string_view flag, absl::string_view value, Int min) {
  Int parsed;
  if (!absl::SimpleAtoi(value, &parsed)) {
    return UsageError(absl::StrCat("--", flag, ": \"", value, "\" is not an integer"));
  }
  if (parsed < min) {
    return UsageError(absl::StrCat("--", flag, ": ", parsed, " is below the minimum ", min));
  }
  return parsed;
}

// An enum value by its proto name, case-insensitively; *_UNSPECIFIED (0) is refused.
template <typename Enum>
absl::StatusOr<Enum> ParseEnum(absl::string_view flag, absl::string_view value,
                               const google::protobuf::EnumDescriptor* descriptor) {
  std::string upper = absl::AsciiStrToUpper(absl::StripAsciiWhitespace(value));
  const google::protobuf::EnumValueDescriptor* found = descriptor->FindValueByName(upper);
  if (found == nullptr || found->number() == 0) {
    std::vector<std::string> names;
    for (int i = 0; i < descriptor->value_count(); ++i) {
      if (descriptor->value(i)->number() != 0) names.push_back(descriptor->value(i)->name());
    }
    return UsageError(absl::StrCat("--", flag, ": \"", value, "\" is not a ", descriptor->name(),
                                   " (one of ", absl::StrJoin(names, ", "), ")"));
  }
  return static_cast<Enum>(found->number());
}

}  // namespace rein::cli

#endif  // REIN_CLI_FLAG_VALUES_H_
