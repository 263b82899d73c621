// The `read_file` tool: reads a text file's lines with line numbers.
#ifndef REIN_EXECUTOR_SERVICE_READ_FILE_TOOL_H_
#define REIN_EXECUTOR_SERVICE_READ_FILE_TOOL_H_

#include "executor_service/tools/tool.h"

namespace rein {

// Read-only; immutable and thread-safe.
class ReadFileTool final : public Tool {
 public:
  ReadFileTool();
  const ToolSpec& spec() const override { return spec_; }
  ToolResult Execute(const ToolContext& context, const nlohmann::json& args) const override;

 private:
  ToolSpec spec_;
};

}  // namespace rein

#endif  // REIN_EXECUTOR_SERVICE_READ_FILE_TOOL_H_
