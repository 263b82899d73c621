// The `read_file` tool.
#include "executor_service/tools/read_file_tool.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "executor_service/workspace/text_file.h"

namespace rein {

ReadFileTool::ReadFileTool() {
  spec_.name = "read_file";
  spec_.description =
      "Read a text file in the workspace. Returns lines as \"N: text\" where N is the file's "
      "1-based line number, starting after `offset` lines and returning at most `limit` lines; "
      "a note tells the offset to continue from when more lines remain. Binary files are "
      "refused.";
  spec_.input_schema = {{"type", "object"},
                        {"additionalProperties", false},
                        {"required", {"path"}},
                        {"properties",
                         {{"path",
                           {{"type", "string"},
                            {"minLength", 1},
                            {"maxLength", 4096},
                            {"description", "File relative to the workspace"}}},
                          {"offset",
                           {{"type", "integer"},
                            {"minimum", 0},
                            {"maximum", 1000000000},
                            {"default", 0},
                            {"description", "Lines to skip (0-based line offset)"}}},
                          {"limit",
                           {{"type", "integer"},
                            {"minimum", 1},
                            {"maximum", 20000},
                            {"default", 2000},
                            {"description", "Most lines to return"}}}}}};
  spec_.default_timeout = absl::Seconds(30);
}

ToolResult ReadFileTool::Execute(const ToolContext& context, const nlohmann::json& args) const {
  const std::string path = args["path"].get<std::string>();
  const int64_t offset = args["offset"].get<int64_t>();
  const int64_t limit = args["limit"].get<int64_t>();
  absl::Status valid = ValidateToolPath(path);
  if (!valid.ok()) return ToolResult::Failure(valid);
  absl::StatusOr<RegularFile> file =
      OpenRegularFile(context.workspace->dir_fd(), path, path, /*no_symlinks=*/false);
  if (!file.ok()) return ToolResult::Failure(file.status());
  const int fd = file->fd.get();

  absl::StatusOr<std::string> head = ReadAt(fd, 0, kBinaryCheckBytes);
  if (!head.ok()) return ToolResult::Failure(head.status());
  if (LooksBinary(*head)) {
    return ToolResult::Failure("BINARY_FILE",
                               absl::StrCat("path \"", absl::CHexEscape(path),
                                            "\" is a binary file (a NUL byte in its first ",
                                            kBinaryCheckBytes, " bytes); use file_info instead"));
  }

  OutputBuffer out(context.max_output_bytes);
  const int64_t end = offset + limit;  // first line not returned
  int64_t line = 0;                    // 0-based index of the line being read
  bool at_line_start = true;
  bool more = false;  // a line at index >= end exists
  bool any_byte = false;
  char buf[65536];
  off_t pos = 0;
  while (true) {
    if (context.Expired()) return ToolResult::Timeout(std::move(out), spec_.name);
    const ssize_t n = pread(fd, buf, sizeof(buf), pos);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ToolResult::Failure("INTERNAL", absl::StrCat("read failed: ", strerror(errno)));
    }
    if (n == 0) break;
    pos += n;
    any_byte = true;
    const char* p = buf;
    const char* const stop = buf + n;
    while (p < stop) {
      if (line >= end) {
        more = true;
        break;
      }
      const char* nl = static_cast<const char*>(memchr(p, '\n', static_cast<size_t>(stop - p)));
      const char* segment_end = nl != nullptr ? nl : stop;
      if (line >= offset) {
        if (at_line_start) out.Append(absl::StrCat(line + 1, ": "));
        out.Append(absl::string_view(p, static_cast<size_t>(segment_end - p)));
        if (nl != nullptr) out.Append("\n");
      }
      if (nl != nullptr) {
        ++line;
        at_line_start = true;
        p = nl + 1;
      } else {
        at_line_start = false;
        p = stop;
      }
    }
    if (more) break;
  }
  // `line` counts completed lines; an unterminated last line counts too.
  const int64_t total_lines = line + ((!at_line_start) ? 1 : 0);
  if (!at_line_start && line >= offset && line < end) out.Append("\n");
  if (!any_byte) {
    out.AddNote("[empty file]");
  } else if (more) {
    out.AddNote(absl::StrCat("[more lines after line ", end, "; continue with offset=", end, "]"));
  } else if (offset >= total_lines) {
    out.AddNote(absl::StrCat("[offset ", offset, " is past the end of the file (", total_lines,
                             " lines)]"));
  }
  return ToolResult::Success(std::move(out));
}

}  // namespace rein
