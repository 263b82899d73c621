// Checks the next call an Evaluate reply proposes, dropping one that a Decide reply could not
// carry.
#include "planner_service/proposal.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"
#include "planner_service/json_extract.h"

namespace rein {
namespace {

// Whether `text` is a JSON object (untrusted text: its depth is checked before parsing).
bool IsJsonObject(const std::string& text) {
  if (JsonNestingDepth(text) > kMaxJsonNesting) return false;
  return nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false).is_object();
}

void Drop(rein::v1::EvaluateResponse* reply, const std::string& why) {
  reply->set_next_call_dropped(absl::StrCat(
      "next call ", reply->next_call().tool().empty() ? "(no tool)" : reply->next_call().tool(),
      " dropped: ", why));
  reply->clear_next_call();
}

}  // namespace

void CheckProposedCall(const rein::v1::EvaluateRequest& request,
                       rein::v1::EvaluateResponse* reply) {
  if (!reply->has_next_call()) return;
  if (!request.propose_next()) {
    Drop(reply, "not asked for (propose_next is false)");
    return;
  }
  if (reply->status() != rein::v1::RunEvent::Evaluation::NEEDS_MORE_WORK ||
      reply->goal_achieved()) {
    Drop(reply, "a next call comes only with status NEEDS_MORE_WORK and goal_achieved false");
    return;
  }
  const std::string& tool = reply->next_call().tool();
  const auto& allowed = request.subtask().allowed_tools();
  const rein::v1::ToolSpec* spec = nullptr;
  for (const rein::v1::ToolSpec& t : request.run_tools()) {
    if (t.name() == tool) spec = &t;
  }
  if (spec == nullptr || std::find(allowed.begin(), allowed.end(), tool) == allowed.end()) {
    Drop(reply, absl::StrCat(
                    "\"", tool, "\" is not allowed for subtask \"", request.subtask().id(),
                    "\" (allowed: ", allowed.empty() ? "none" : absl::StrJoin(allowed, ", "), ")"));
    return;
  }
  if (!IsJsonObject(reply->next_call().args_json())) {
    Drop(reply, "args must be a JSON object");
    return;
  }
  reply->mutable_next_call()->set_mutating(spec->mutating());
}

}  // namespace rein
