// Workspace paths no tool may write.
#include "executor_service/sandbox/protected_paths.h"

#include <algorithm>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace rein {
namespace {

// True when `path` is `base` or lies beneath it.
bool Within(absl::string_view path, absl::string_view base) {
  return path == base ||
         (absl::StartsWith(path, base) && path.size() > base.size() && path[base.size()] == '/');
}

}  // namespace

absl::StatusOr<std::string> NormalizeRelativePath(absl::string_view path, absl::string_view field) {
  if (path.find('\0') != absl::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": must not contain a NUL byte"));
  }
  if (!path.empty() && path[0] == '/') {
    return absl::InvalidArgumentError(absl::StrCat(
        field, ": must be relative to the workspace, got \"", absl::CHexEscape(path), "\""));
  }
  std::vector<absl::string_view> parts;
  for (absl::string_view part : absl::StrSplit(path, '/')) {
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ": must not contain \"..\", got \"", absl::CHexEscape(path), "\""));
    }
    parts.push_back(part);
  }
  return absl::StrJoin(parts, "/");
}

absl::StatusOr<ProtectedPaths> ProtectedPaths::Create(const std::vector<std::string>& extra) {
  std::vector<std::string> paths(std::begin(kDefaultProtectedPaths),
                                 std::end(kDefaultProtectedPaths));
  if (extra.size() > kMaxExtraProtectedPaths) {
    return absl::InvalidArgumentError(
        absl::StrCat("protected_paths: at most ", kMaxExtraProtectedPaths, " entries"));
  }
  for (size_t i = 0; i < extra.size(); ++i) {
    const std::string field = absl::StrCat("protected_paths[", i, "]");
    if (extra[i].size() > 4096) {
      return absl::InvalidArgumentError(absl::StrCat(field, ": longer than 4096 bytes"));
    }
    absl::StatusOr<std::string> normalized = NormalizeRelativePath(extra[i], field);
    if (!normalized.ok()) return normalized.status();
    if (normalized->empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ": must name a path inside the workspace, not the workspace"));
    }
    paths.push_back(*std::move(normalized));
  }
  std::sort(paths.begin(), paths.end());
  paths.erase(std::unique(paths.begin(), paths.end()), paths.end());
  // An entry beneath another adds nothing; sorted, a parent comes right before its children.
  std::vector<std::string> kept;
  for (std::string& path : paths) {
    if (!kept.empty() && Within(path, kept.back())) continue;
    kept.push_back(std::move(path));
  }
  return ProtectedPaths(std::move(kept));
}

bool ProtectedPaths::RefusesFile(absl::string_view path) const {
  for (const std::string& p : paths_) {
    if (Within(path, p) || Within(p, path)) return true;
  }
  return false;
}

bool ProtectedPaths::RefusesDirectory(absl::string_view path) const {
  for (const std::string& p : paths_) {
    if (Within(path, p)) return true;
  }
  return false;
}

}  // namespace rein
