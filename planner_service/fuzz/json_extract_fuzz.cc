// Fuzz target: JSON extraction from model text and validation of the result as each stage's
// structured output. Aborts when an invariant breaks.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"
#include "planner_service/json_extract.h"
#include "planner_service/structured_output.h"

namespace {

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "json_extract_fuzz: invariant broken: %s\n", what);
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  (void)rein::JsonNestingDepth(text);
  std::optional<absl::string_view> object = rein::ExtractFirstJsonObject(text);
  if (!object.has_value()) return 0;
  Check(
      object->data() >= text.data() && object->data() + object->size() <= text.data() + text.size(),
      "the result is a view into the input");
  Check(object->front() == '{' && object->back() == '}', "the result is braced");
  Check(rein::JsonNestingDepth(*object) <= rein::kMaxJsonNesting, "the result is shallow");
  const nlohmann::json parsed =
      nlohmann::json::parse(object->begin(), object->end(), nullptr, /*allow_exceptions=*/false);
  Check(parsed.is_object(), "the result parses as an object");

  rein::v1::PlanRequest plan;
  plan.set_goal("g");
  plan.add_tools()->set_name("read_file");
  rein::v1::DecideRequest decide;
  decide.mutable_subtask()->set_id("s");
  decide.add_tools()->set_name("read_file");
  auto plan_reply = rein::PlanFromOutput(parsed, plan);
  auto decide_reply = rein::DecideFromOutput(parsed, decide);
  auto evaluate_reply = rein::EvaluateFromOutput(parsed);
  for (const absl::Status& s :
       {plan_reply.status(), decide_reply.status(), evaluate_reply.status()}) {
    Check(s.ok() || (s.code() == absl::StatusCode::kInternal &&
                     absl::string_view(s.message()).substr(0, 16) == "invalid output: "),
          "validation errors are INTERNAL invalid output");
  }
  if (decide_reply.ok() && decide_reply->has_tool_call()) {
    Check(decide_reply->tool_call().tool() == "read_file", "only an allowed tool is chosen");
    const nlohmann::json args = nlohmann::json::parse(decide_reply->tool_call().args_json(),
                                                      nullptr, /*allow_exceptions=*/false);
    Check(args.is_object(), "args_json is an object");
  }
  return 0;
}
