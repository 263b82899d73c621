// Flag values that may be secrets: `@PATH` reads the value from a file (a mounted Secret), so
// that it is not on the command line where every local user can read it.
#ifndef REIN_COMMON_SECRET_FLAG_H_
#define REIN_COMMON_SECRET_FLAG_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace rein {

// Largest file a secret flag reads.
inline constexpr size_t kMaxSecretFileBytes = 64 * 1024;

// `value` itself, or when it starts with '@' the contents of the file it names with surrounding
// whitespace (the usual trailing newline) removed. An unreadable, empty or oversized file is
// INVALID_ARGUMENT naming `flag` and the path (never the contents).
absl::StatusOr<std::string> ReadSecretFlag(absl::string_view flag, const std::string& value);

}  // namespace rein

#endif  // REIN_COMMON_SECRET_FLAG_H_
