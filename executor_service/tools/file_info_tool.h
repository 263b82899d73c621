// The `file_info` tool: describes one workspace path: type, size, mode, mtime, line count.
#ifndef REIN_EXECUTOR_SERVICE_FILE_INFO_TOOL_H_
#define REIN_EXECUTOR_SERVICE_FILE_INFO_TOOL_H_

#include "executor_service/tools/tool.h"

namespace rein {

// Read-only; immutable and thread-safe.
class FileInfoTool final : public Tool {
 public:
  FileInfoTool();
  const ToolSpec& spec() const override { return spec_; }
  ToolResult Execute(const ToolContext& context, const nlohmann::json& args) const override;

 private:
  ToolSpec spec_;
};

}  // namespace rein

#endif  // REIN_EXECUTOR_SERVICE_FILE_INFO_TOOL_H_
