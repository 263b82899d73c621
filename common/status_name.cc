// StatusCodeName: the canonical upper-case name of a status code.
#include "common/status_name.h"

#include "absl/strings/ascii.h"

namespace rein {

std::string StatusCodeName(absl::StatusCode code) {
  std::string name = absl::StatusCodeToString(code);
  for (char& c : name) c = (c == ' ') ? '_' : absl::ascii_toupper(static_cast<unsigned char>(c));
  return name;
}

}  // namespace rein
