// The `write_file` tool.
#include "executor_service/tools/write_file_tool.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "executor_service/workspace/durable_file.h"

namespace rein {
namespace {

absl::Status Protected(const ProtectedPaths& paths, absl::string_view path) {
  return absl::PermissionDeniedError(absl::StrCat(
      "path \"", absl::CHexEscape(path.substr(0, 256)), "\" is protected: tools may not write ",
      absl::StrJoin(paths.paths(), ", "), " or put a file in their place"));
}

// Joins a workspace-relative directory and a name.
std::string Join(const std::string& dir, absl::string_view name) {
  return dir.empty() ? std::string(name) : absl::StrCat(dir, "/", name);
}

// Opens the directory `parent` beneath the workspace; with `create`, makes the missing
// directories one at a time, each beneath the one before, refusing protected ones.
absl::StatusOr<UniqueFd> OpenParent(const Workspace& workspace, const std::string& parent,
                                    bool create, const ProtectedPaths& paths) {
  absl::StatusOr<UniqueFd> dir = OpenBeneath(workspace.dir_fd(), parent, O_PATH | O_DIRECTORY);
  if (dir.ok() || !create || dir.status().code() != absl::StatusCode::kNotFound) return dir;
  std::vector<std::string> parts;
  for (absl::string_view part : absl::StrSplit(parent, '/')) {
    if (part.empty() || part == ".") continue;
    if (part == "..") return dir;  // not created through ".."
    parts.emplace_back(part);
  }
  absl::StatusOr<UniqueFd> current = OpenBeneath(workspace.dir_fd(), ".", O_PATH | O_DIRECTORY);
  if (!current.ok()) return current;
  for (const std::string& part : parts) {
    absl::StatusOr<UniqueFd> next =
        OpenBeneath(current->get(), part, O_PATH | O_DIRECTORY, 0, parent);
    if (!next.ok() && next.status().code() == absl::StatusCode::kNotFound) {
      absl::StatusOr<std::string> here = workspace.RelativePathOf(current->get());
      if (!here.ok()) return here.status();
      const std::string created = Join(*here, part);
      if (paths.RefusesDirectory(created)) return Protected(paths, created);
      if (mkdirat(current->get(), part.c_str(), 0755) != 0 && errno != EEXIST) {
        return PathError(errno, parent);
      }
      next = OpenBeneath(current->get(), part, O_PATH | O_DIRECTORY, 0, parent);
    }
    if (!next.ok()) return next.status();
    current = std::move(next);
  }
  return current;
}

std::string TempName() {
  unsigned char bytes[8];
  if (getrandom(bytes, sizeof(bytes), 0) != static_cast<ssize_t>(sizeof(bytes))) {
    return absl::StrCat(".rein-write-", getpid(), "-", reinterpret_cast<uintptr_t>(&bytes));
  }
  return absl::StrCat(".rein-write-", absl::BytesToHexString(absl::string_view(
                                          reinterpret_cast<const char*>(bytes), sizeof(bytes))));
}

}  // namespace

WriteFileTool::WriteFileTool(const ProtectedPaths* protected_paths) : protected_(protected_paths) {
  spec_.name = "write_file";
  spec_.description =
      "Create or replace a text file in the workspace with the given content, atomically (a "
      "reader sees the old file or the new one, never a mix). Missing parent directories are "
      "created. A symbolic link at the path is replaced, never written through. "
      ".git/hooks, .git/config and .git/commondir cannot be written. At most 1 MiB.";
  spec_.input_schema = {
      {"type", "object"},
      {"additionalProperties", false},
      {"required", {"path", "content"}},
      {"properties",
       {{"path",
         {{"type", "string"},
          {"minLength", 1},
          {"maxLength", 4096},
          {"description", "File path relative to the workspace"}}},
        {"content", {{"type", "string"}, {"description", "The whole new content"}}},
        {"create_parents",
         {{"type", "boolean"},
          {"default", true},
          {"description", "Create missing parent directories"}}}}}};
  spec_.mutating = true;
  spec_.default_timeout = absl::Seconds(30);
}

ToolResult WriteFileTool::Execute(const ToolContext& context, const nlohmann::json& args) const {
  const std::string path = args["path"].get<std::string>();
  const std::string content = args["content"].get<std::string>();
  absl::Status valid = ValidateToolPath(path, "args.path");
  if (!valid.ok()) return ToolResult::Failure(valid);
  if (content.size() > kMaxWriteFileBytes) {
    return ToolResult::Failure("INVALID_ARGUMENT",
                               absl::StrCat("args.content: must be at most ", kMaxWriteFileBytes,
                                            " bytes, got ", content.size()));
  }
  const size_t slash = path.rfind('/');
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  const std::string parent =
      slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  if (name.empty() || name == "." || name == "..") {
    return ToolResult::Failure("INVALID_ARGUMENT",
                               absl::StrCat("args.path: \"", absl::CHexEscape(path.substr(0, 256)),
                                            "\" names a directory, not a file"));
  }
  // The path as written, when it is plain, is checked first so that no parent is created
  // for a protected file; the path as resolved is checked below in any case.
  absl::StatusOr<std::string> normalized = NormalizeRelativePath(path, "args.path");
  if (normalized.ok() && protected_->RefusesFile(*normalized)) {
    return ToolResult::Failure(Protected(*protected_, *normalized));
  }

  const Workspace& workspace = *context.workspace;
  absl::StatusOr<UniqueFd> dir =
      OpenParent(workspace, parent, args["create_parents"].get<bool>(), *protected_);
  if (!dir.ok()) return ToolResult::Failure(dir.status());
  absl::StatusOr<std::string> dir_path = workspace.RelativePathOf(dir->get());
  if (!dir_path.ok()) return ToolResult::Failure(dir_path.status());
  const std::string resolved = Join(*dir_path, name);
  if (protected_->RefusesFile(resolved))
    return ToolResult::Failure(Protected(*protected_, resolved));

  mode_t mode = 0644;
  bool replaced_link = false;
  bool existed = false;
  struct stat st;
  if (fstatat(dir->get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
    existed = true;
    if (S_ISDIR(st.st_mode)) {
      return ToolResult::Failure(PathError(EISDIR, path));
    }
    if (S_ISREG(st.st_mode)) mode = st.st_mode & 0777;  // never set-id bits
    replaced_link = S_ISLNK(st.st_mode);
  }
  const int err = WriteFileDurably(dir->get(), name, TempName(), content, mode);
  if (err != 0) return ToolResult::Failure(PathError(err, path));

  OutputBuffer out(context.max_output_bytes);
  out.Append(absl::StrCat(existed ? "replaced " : "created ", DisplayPath(resolved), " (",
                          content.size(), " bytes)\n"));
  if (replaced_link) out.AddNote("[the symbolic link at this path was replaced by the file]");
  return ToolResult::Success(std::move(out));
}

}  // namespace rein
