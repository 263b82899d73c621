// What reinctl reads besides its argv: the files its flags name, the console URL from the
// environment. Each error names the flag or variable and the problem.
#ifndef REIN_CLI_INPUTS_H_
#define REIN_CLI_INPUTS_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace rein::cli {

// The console URL from REIN_CONSOLE_URL (nullptr or "" = none): an http(s) URL with a host,
// returned without a trailing '/'; anything else is an error naming the variable.
absl::StatusOr<std::string> ConsoleUrlFromEnv(const char* value);

// Reads a whole file; NOT_FOUND / PERMISSION_DENIED-style errors name `flag` and the path.
absl::StatusOr<std::string> ReadFileForFlag(absl::string_view flag, const std::string& path);

}  // namespace rein::cli

#endif  // REIN_CLI_INPUTS_H_
