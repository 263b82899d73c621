// The shared limits' checks.
#include "common/limits.h"

#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace rein {
namespace {

// Quotes `s` for an error message, bounded so that a huge name cannot flood it.
std::string Quote(absl::string_view s) {
  constexpr size_t kMax = 256;
  if (s.size() > kMax) return absl::StrFormat("\"%s...\"", absl::CHexEscape(s.substr(0, kMax)));
  return absl::StrFormat("\"%s\"", absl::CHexEscape(s));
}

}  // namespace

absl::Status CheckWorkspaceName(absl::string_view name, absl::string_view field) {
  auto bad = [&](auto&&... parts) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": ", parts...));
  };
  if (name.empty()) return bad("must not be empty");
  if (name.size() > kMaxWorkspaceNameBytes) {
    return bad("must be at most ", kMaxWorkspaceNameBytes, " bytes, got ", name.size());
  }
  if (name.find('\0') != absl::string_view::npos) return bad("must not contain a NUL byte");
  if (name.find('/') != absl::string_view::npos) {
    return bad("must be a single name without '/', got ", Quote(name));
  }
  if (name == "." || name == "..") return bad("must not be \".\" or \"..\", got ", Quote(name));
  if (absl::StartsWith(name, kReservedWorkspacePrefix)) {
    return bad("names starting with \"", kReservedWorkspacePrefix,
               "\" are reserved for the executors' own use, got ", Quote(name));
  }
  return absl::OkStatus();
}

absl::Status CheckNamespaceName(absl::string_view name, absl::string_view field) {
  auto bad = [&](auto&&... parts) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": ", parts...));
  };
  if (name.empty()) return bad("must not be empty");
  if (name.size() > kMaxNamespaceBytes) {
    return bad("must be at most ", kMaxNamespaceBytes, " bytes, got ", name.size());
  }
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  for (char c : name) {
    if (!alnum(c) && c != '-') {
      return bad("must be lower-case letters, digits and '-', got ", Quote(name));
    }
  }
  if (!alnum(name.front()) || !alnum(name.back())) {
    return bad("must start and end with a letter or digit, got ", Quote(name));
  }
  return absl::OkStatus();
}

}  // namespace rein
