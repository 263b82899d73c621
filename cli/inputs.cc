// What reinctl reads besides its argv (see inputs.h).
#include "cli/inputs.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace rein::cli {

absl::StatusOr<std::string> ConsoleUrlFromEnv(const char* value) {
  std::string url = value == nullptr ? "" : value;
  while (!url.empty() && url.back() == '/') url.pop_back();
  if (url.empty()) return url;
  absl::string_view rest = url;
  if (!absl::ConsumePrefix(&rest, "http://") && !absl::ConsumePrefix(&rest, "https://")) {
    return absl::InvalidArgumentError(
        absl::StrCat("REIN_CONSOLE_URL: \"", url, "\" is not an http:// or https:// URL"));
  }
  if (rest.empty() || rest.front() == '/') {
    return absl::InvalidArgumentError(absl::StrCat("REIN_CONSOLE_URL: \"", url, "\" has no host"));
  }
  return url;
}

absl::StatusOr<std::string> ReadFileForFlag(absl::string_view flag, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag, ": cannot read ", path, ": ", std::strerror(errno)));
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) {
    return absl::InvalidArgumentError(absl::StrCat("--", flag, ": error reading ", path));
  }
  return text.str();
}

}  // namespace rein::cli
