// The `search_text` tool: searches the workspace's text files for an RE2 pattern.
#ifndef REIN_EXECUTOR_SERVICE_SEARCH_TEXT_TOOL_H_
#define REIN_EXECUTOR_SERVICE_SEARCH_TEXT_TOOL_H_

#include "executor_service/tools/tool.h"

namespace rein {

// Read-only; immutable and thread-safe.
class SearchTextTool final : public Tool {
 public:
  SearchTextTool();
  const ToolSpec& spec() const override { return spec_; }
  ToolResult Execute(const ToolContext& context, const nlohmann::json& args) const override;

 private:
  ToolSpec spec_;
};

}  // namespace rein

#endif  // REIN_EXECUTOR_SERVICE_SEARCH_TEXT_TOOL_H_
