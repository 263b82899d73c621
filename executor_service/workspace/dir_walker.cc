// Depth-first directory walk over descriptors.
#include "executor_service/workspace/dir_walker.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <linux/openat2.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "executor_service/process/unique_fd.h"
#include "executor_service/tools/tool.h"
#include "executor_service/workspace/workspace.h"

namespace rein {
namespace {

// Reads the names in `dir_fd` (excluding "." and ".."), sorted. Uses a duplicate descriptor
// so that `dir_fd` stays open for the caller.
absl::Status ReadNames(int dir_fd, size_t max_names, std::vector<std::string>* names,
                       bool* oversized) {
  int dup_fd = fcntl(dir_fd, F_DUPFD_CLOEXEC, 0);
  if (dup_fd < 0) return absl::InternalError(absl::StrCat("dup: ", strerror(errno)));
  DIR* dir = fdopendir(dup_fd);
  if (dir == nullptr) {
    const int err = errno;
    close(dup_fd);
    return absl::InternalError(absl::StrCat("fdopendir: ", strerror(err)));
  }
  rewinddir(dir);
  *oversized = false;
  errno = 0;
  while (struct dirent* entry = readdir(dir)) {
    if (strcmp(entry->d_name, ".") == 0 || strcmp(entry->d_name, "..") == 0) continue;
    if (names->size() >= max_names) {
      *oversized = true;
      break;
    }
    names->emplace_back(entry->d_name);
  }
  const int err = errno;
  closedir(dir);
  if (err != 0 && !*oversized) {
    return absl::InternalError(absl::StrCat("readdir: ", strerror(err)));
  }
  std::sort(names->begin(), names->end());
  return absl::OkStatus();
}

// Returns false when the walk must stop.
bool Walk(int dir_fd, const std::string& prefix, int depth, const WalkOptions& options,
          const std::function<WalkAction(const WalkEntry&)>& visit, WalkStats* stats,
          absl::Status* top_status) {
  std::vector<std::string> names;
  bool oversized = false;
  absl::Status read = ReadNames(dir_fd, options.max_names_per_directory, &names, &oversized);
  if (!read.ok()) {
    if (depth == 0) *top_status = read;
    ++stats->unreadable_directories;
    return true;
  }
  if (oversized) ++stats->oversized_directories;
  for (const std::string& name : names) {
    if (!options.include_hidden && name[0] == '.') continue;
    WalkEntry entry;
    entry.parent_fd = dir_fd;
    entry.name = name;
    entry.path = JoinDisplayPath(prefix, name);
    if (IsExcluded(options.exclude, name, entry.path)) continue;
    entry.depth = depth;
    if (fstatat(dir_fd, name.c_str(), &entry.st, AT_SYMLINK_NOFOLLOW) != 0) continue;  // gone
    if (visit(entry) == WalkAction::kStop) return false;
    if (!options.recursive || !S_ISDIR(entry.st.st_mode)) continue;
    if (depth + 1 > options.max_depth) {
      ++stats->depth_limited;
      continue;
    }
    absl::StatusOr<UniqueFd> child =
        OpenBeneath(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, RESOLVE_NO_SYMLINKS);
    if (!child.ok()) {
      ++stats->unreadable_directories;
      continue;
    }
    if (!Walk(child->get(), entry.path, depth + 1, options, visit, stats, top_status)) {
      return false;
    }
  }
  return true;
}

}  // namespace

nlohmann::json ExcludeArgumentSchema() {
  return {{"type", "array"},
          {"maxItems", kMaxExcludePatterns},
          {"items", {{"type", "string"}, {"minLength", 1}, {"maxLength", kMaxExcludePatternBytes}}},
          {"description",
           "Glob patterns (fnmatch) of entries to skip, matched against the base name and the "
           "workspace-relative path; a matching directory is not entered. Example: "
           "[\"node_modules\", \"*_test.*\"]"}};
}

absl::StatusOr<std::vector<std::string>> ExcludePatterns(const nlohmann::json& args) {
  std::vector<std::string> patterns;
  if (!args.contains("exclude")) return patterns;
  const nlohmann::json& list = args["exclude"];
  if (!list.is_array() || list.size() > kMaxExcludePatterns) {
    return absl::InvalidArgumentError(absl::StrCat("args.exclude: must be an array of at most ",
                                                   kMaxExcludePatterns, " glob patterns"));
  }
  for (size_t i = 0; i < list.size(); ++i) {
    if (!list[i].is_string()) {
      return absl::InvalidArgumentError(absl::StrCat("args.exclude[", i, "]: must be a string"));
    }
    std::string pattern = list[i].get<std::string>();
    if (pattern.empty() || pattern.size() > kMaxExcludePatternBytes) {
      return absl::InvalidArgumentError(absl::StrCat("args.exclude[", i, "]: must be 1 to ",
                                                     kMaxExcludePatternBytes, " bytes, got ",
                                                     pattern.size()));
    }
    if (pattern.find('\0') != std::string::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("args.exclude[", i, "]: must not contain a NUL byte"));
    }
    patterns.push_back(std::move(pattern));
  }
  return patterns;
}

bool IsExcluded(const std::vector<std::string>& patterns, const std::string& name,
                const std::string& path) {
  for (const std::string& pattern : patterns) {
    if (fnmatch(pattern.c_str(), name.c_str(), 0) == 0 ||
        fnmatch(pattern.c_str(), path.c_str(), 0) == 0) {
      return true;
    }
  }
  return false;
}

absl::Status WalkDirectory(int dir_fd, const std::string& prefix, const WalkOptions& options,
                           const std::function<WalkAction(const WalkEntry&)>& visit,
                           WalkStats* stats) {
  absl::Status status;
  Walk(dir_fd, prefix, 0, options, visit, stats, &status);
  return status;
}

}  // namespace rein
