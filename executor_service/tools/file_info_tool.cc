// The `file_info` tool.
#include "executor_service/tools/file_info_tool.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "executor_service/workspace/text_file.h"

namespace rein {

FileInfoTool::FileInfoTool() {
  spec_.name = "file_info";
  spec_.description =
      "Describe one path in the workspace as JSON: type, size, mode, mtime (RFC 3339, UTC), "
      "nlink, whether it is a symbolic link (and its target), and for text files up to 10 MiB "
      "the line count. Symbolic links are followed only within the workspace.";
  spec_.input_schema = {{"type", "object"},
                        {"additionalProperties", false},
                        {"required", {"path"}},
                        {"properties",
                         {{"path",
                           {{"type", "string"},
                            {"minLength", 1},
                            {"maxLength", 4096},
                            {"description", "Path relative to the workspace"}}}}}};
  spec_.default_timeout = absl::Seconds(30);
}

ToolResult FileInfoTool::Execute(const ToolContext& context, const nlohmann::json& args) const {
  const std::string path = args["path"].get<std::string>();
  const Workspace& workspace = *context.workspace;
  // Resolve the path (following links within the workspace) first: a link that leads out is
  // refused just as read_file refuses it.
  absl::StatusOr<UniqueFd> target = workspace.Open(path, O_PATH);
  if (!target.ok()) return ToolResult::Failure(target.status());
  struct stat st;
  if (fstat(target->get(), &st) != 0) return ToolResult::Failure(PathError(errno, path));

  nlohmann::json info;
  info["path"] = DisplayPath(path).empty() ? "." : DisplayPath(path);
  info["type"] = FileTypeName(st.st_mode);
  info["size"] = static_cast<int64_t>(st.st_size);
  info["mode"] = absl::StrFormat("%04o", st.st_mode & 07777);
  info["mtime"] = absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::TimeFromTimespec(st.st_mtim),
                                   absl::UTCTimeZone());
  info["nlink"] = static_cast<uint64_t>(st.st_nlink);

  absl::StatusOr<UniqueFd> link = workspace.Open(path, O_PATH | O_NOFOLLOW);
  struct stat lst;
  info["symlink"] = false;
  if (link.ok() && fstat(link->get(), &lst) == 0 && S_ISLNK(lst.st_mode)) {
    info["symlink"] = true;
    char buf[4096];
    const ssize_t n = readlinkat(link->get(), "", buf, sizeof(buf));
    if (n >= 0) info["symlink_target"] = std::string(buf, static_cast<size_t>(n));
  }

  if (S_ISREG(st.st_mode) && static_cast<size_t>(st.st_size) <= kMaxScannedFileBytes) {
    absl::StatusOr<RegularFile> file =
        OpenRegularFile(workspace.dir_fd(), path, path, /*no_symlinks=*/false);
    if (!file.ok()) return ToolResult::Failure(file.status());
    absl::StatusOr<std::string> content = ReadAt(file->fd.get(), 0, kMaxScannedFileBytes);
    if (!content.ok()) return ToolResult::Failure(content.status());
    const bool binary = LooksBinary(*content);
    info["binary"] = binary;
    if (!binary) {
      int64_t lines = std::count(content->begin(), content->end(), '\n');
      if (!content->empty() && content->back() != '\n') ++lines;
      info["lines"] = lines;
    }
  }

  OutputBuffer out(context.max_output_bytes);
  out.Append(info.dump(2, ' ', /*ensure_ascii=*/false, nlohmann::json::error_handler_t::replace));
  out.Append("\n");
  return ToolResult::Success(std::move(out));
}

}  // namespace rein
