// The `list_files` tool: lists the entries of a workspace directory, optionally recursively.
#ifndef REIN_EXECUTOR_SERVICE_LIST_FILES_TOOL_H_
#define REIN_EXECUTOR_SERVICE_LIST_FILES_TOOL_H_

#include "executor_service/tools/tool.h"

namespace rein {

// Read-only; immutable and thread-safe.
class ListFilesTool final : public Tool {
 public:
  ListFilesTool();
  const ToolSpec& spec() const override { return spec_; }
  ToolResult Execute(const ToolContext& context, const nlohmann::json& args) const override;

 private:
  ToolSpec spec_;
};

}  // namespace rein

#endif  // REIN_EXECUTOR_SERVICE_LIST_FILES_TOOL_H_
