// The Tool interface's shared result helpers.
#include "executor_service/tools/tool.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/status_reason.h"

namespace rein {

ToolResult ToolResult::Failure(const absl::Status& status) {
  ToolResult result =
      Failure(absl::StatusCodeToString(status.code()), std::string(status.message()));
  result.error_reason = ReasonOf(status);
  return result;
}

ToolResult ToolResult::Failure(std::string code, std::string message) {
  ToolResult result;
  result.ok = false;
  result.error_code = std::move(code);
  result.error_message = std::move(message);
  return result;
}

ToolResult ToolResult::Success(OutputBuffer output) {
  ToolResult result;
  result.output = std::move(output).Finish(&result.truncated);
  return result;
}

ToolResult ToolResult::Timeout(OutputBuffer output, absl::string_view tool) {
  ToolResult result = Failure("TIMEOUT", absl::StrCat(tool, ": deadline exceeded"));
  result.timed_out = true;
  result.output = std::move(output).Finish(&result.truncated);
  return result;
}

std::string DisplayPath(absl::string_view path) {
  std::vector<absl::string_view> parts;
  for (absl::string_view part : absl::StrSplit(path, '/')) {
    if (part.empty() || part == ".") continue;
    parts.push_back(part);
  }
  std::string joined = absl::StrJoin(parts, "/");
  if (!path.empty() && path[0] == '/') return absl::StrCat("/", joined);
  return joined;
}

std::string JoinDisplayPath(absl::string_view parent, absl::string_view name) {
  if (parent.empty()) return std::string(name);
  return absl::StrCat(parent, "/", name);
}

}  // namespace rein
