// The `list_files` tool.
#include "executor_service/tools/list_files_tool.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "executor_service/workspace/dir_walker.h"

namespace rein {
namespace {

std::string EntryLine(const std::string& path, const struct stat& st) {
  const bool dir = S_ISDIR(st.st_mode);
  return absl::StrCat(path, dir ? "/" : "", "\t", FileTypeName(st.st_mode), "\t",
                      static_cast<int64_t>(st.st_size), "\n");
}

}  // namespace

ListFilesTool::ListFilesTool() {
  spec_.name = "list_files";
  spec_.description =
      "List the entries of a directory in the workspace, one per line as "
      "\"path<TAB>type<TAB>size\" (directories end with '/'), sorted by path. Paths are "
      "relative to the workspace. Symbolic links are listed, not followed.";
  spec_.input_schema = {
      {"type", "object"},
      {"additionalProperties", false},
      {"properties",
       {{"path",
         {{"type", "string"},
          {"minLength", 1},
          {"maxLength", 4096},
          {"default", "."},
          {"description", "Directory (or file) relative to the workspace; default \".\""}}},
        {"recursive",
         {{"type", "boolean"}, {"default", false}, {"description", "Descend into subdirectories"}}},
        {"max_entries",
         {{"type", "integer"},
          {"minimum", 1},
          {"maximum", 10000},
          {"default", 1000},
          {"description", "Stop after this many entries"}}},
        {"include_hidden",
         {{"type", "boolean"},
          {"default", false},
          {"description", "Include names starting with '.'"}}},
        {"exclude", ExcludeArgumentSchema()}}}};
  spec_.default_timeout = absl::Seconds(30);
}

ToolResult ListFilesTool::Execute(const ToolContext& context, const nlohmann::json& args) const {
  const std::string path = args["path"].get<std::string>();
  const bool recursive = args["recursive"].get<bool>();
  const size_t max_entries = static_cast<size_t>(args["max_entries"].get<int64_t>());
  absl::StatusOr<std::vector<std::string>> exclude = ExcludePatterns(args);
  if (!exclude.ok()) return ToolResult::Failure(exclude.status());
  OutputBuffer out(context.max_output_bytes);

  absl::StatusOr<UniqueFd> target = context.workspace->Open(path, O_PATH);
  if (!target.ok()) return ToolResult::Failure(target.status());
  struct stat st;
  if (fstat(target->get(), &st) != 0) return ToolResult::Failure(PathError(errno, path));
  const std::string display = DisplayPath(path);
  if (!S_ISDIR(st.st_mode)) {
    out.Append(EntryLine(display, st));
    return ToolResult::Success(std::move(out));
  }
  absl::StatusOr<UniqueFd> dir = OpenBeneath(target->get(), ".", O_RDONLY | O_DIRECTORY, 0, path);
  if (!dir.ok()) return ToolResult::Failure(dir.status());

  WalkOptions options;
  options.recursive = recursive;
  options.include_hidden = args["include_hidden"].get<bool>();
  options.exclude = *std::move(exclude);
  std::vector<std::pair<std::string, std::string>> entries;  // path, line
  bool more = false;
  bool timed_out = false;
  WalkStats stats;
  absl::Status walked = WalkDirectory(
      dir->get(), display, options,
      [&](const WalkEntry& entry) {
        if (context.Expired()) {
          timed_out = true;
          return WalkAction::kStop;
        }
        if (entries.size() >= max_entries) {
          more = true;
          return WalkAction::kStop;
        }
        entries.emplace_back(entry.path, EntryLine(entry.path, entry.st));
        return WalkAction::kContinue;
      },
      &stats);
  if (!walked.ok()) return ToolResult::Failure(walked);

  std::sort(entries.begin(), entries.end());
  for (const auto& entry : entries) out.Append(entry.second);
  if (entries.empty()) out.AddNote("[no entries]");
  if (more) {
    out.AddNote(
        absl::StrCat("[listing stopped at max_entries=", max_entries, "; more entries exist]"));
  }
  if (stats.depth_limited > 0) {
    out.AddNote(absl::StrCat("[", stats.depth_limited, " directories deeper than ",
                             options.max_depth, " levels not entered]"));
  }
  if (stats.unreadable_directories > 0) {
    out.AddNote(absl::StrCat("[", stats.unreadable_directories, " directories could not be read]"));
  }
  if (stats.oversized_directories > 0) {
    out.AddNote(absl::StrCat("[", stats.oversized_directories, " directories have more than ",
                             options.max_names_per_directory, " entries; listed in part]"));
  }
  if (timed_out) return ToolResult::Timeout(std::move(out), spec_.name);
  return ToolResult::Success(std::move(out));
}

}  // namespace rein
