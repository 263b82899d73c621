// Flag values read from files.
#include "common/secret_flag.h"

#include <fstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace rein {

absl::StatusOr<std::string> ReadSecretFlag(absl::string_view flag, const std::string& value) {
  if (value.empty() || value[0] != '@') return value;
  const std::string path = value.substr(1);
  std::ifstream in(path, std::ios::binary);
  if (path.empty() || !in) {
    return absl::InvalidArgumentError(absl::StrCat(flag, ": cannot read \"", path, "\""));
  }
  std::string contents(kMaxSecretFileBytes + 1, '\0');
  in.read(contents.data(), static_cast<std::streamsize>(contents.size()));
  contents.resize(static_cast<size_t>(in.gcount()));
  if (contents.size() > kMaxSecretFileBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, ": ", path, " is larger than ", kMaxSecretFileBytes, " bytes"));
  }
  absl::StripAsciiWhitespace(&contents);
  if (contents.empty())
    return absl::InvalidArgumentError(absl::StrCat(flag, ": ", path, " is empty"));
  return contents;
}

}  // namespace rein
