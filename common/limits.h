// The limits router, planner and executor share: one definition each, used by all three.
#ifndef REIN_COMMON_LIMITS_H_
#define REIN_COMMON_LIMITS_H_

#include <cstddef>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace rein {

// A person's or a caller's free text: a goal, an answer, a rejection's feedback, human input.
inline constexpr size_t kMaxTextBytes = 16 * 1024;

// A workspace is one name under the executors' workspace root.
inline constexpr size_t kMaxWorkspaceNameBytes = 255;
// Names starting with this are the executors' own (the call journal, workspace history) and
// are refused as a run's workspace everywhere, from StartRun on.
inline constexpr char kReservedWorkspacePrefix[] = ".rein-";

// OK when `name` may be a run's workspace: not empty, at most kMaxWorkspaceNameBytes, one
// name (no '/', no NUL, not "." or ".."), not starting with kReservedWorkspacePrefix.
// Otherwise INVALID_ARGUMENT whose message starts with `field` and names the rule.
absl::Status CheckWorkspaceName(absl::string_view name, absl::string_view field);

// Namespaces (docs/NAMESPACES.md): a run belongs to one; "" means this one.
inline constexpr char kDefaultNamespace[] = "default";
inline constexpr size_t kMaxNamespaceBytes = 63;

// OK when `name` may be a namespace: 1..63 bytes of [a-z0-9-], starting and ending with a
// letter or digit (a DNS label, so it is also a safe directory name). Otherwise
// INVALID_ARGUMENT whose message starts with `field` and names the rule.
absl::Status CheckNamespaceName(absl::string_view name, absl::string_view field);

// `name`, or kDefaultNamespace when it is empty.
inline absl::string_view NamespaceOrDefault(absl::string_view name) {
  return name.empty() ? absl::string_view(kDefaultNamespace) : name;
}

}  // namespace rein

#endif  // REIN_COMMON_LIMITS_H_
