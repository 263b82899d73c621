// Fuzz target: the scripted planner's script (JSON with comments), loaded and then asked each
// stage twice with requests that meet every kind of `when` condition. Aborts when an invariant
// breaks: load errors are INVALID_ARGUMENT naming the source, a loaded script answers and is
// stateless (the same request gets the same reply), replies say backend "scripted".
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/testing/fake_clock.h"
#include "google/protobuf/stubs/logging.h"
#include "google/protobuf/util/message_differencer.h"
#include "planner_service/script.h"
#include "planner_service/scripted_backend.h"

namespace {

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "script_fuzz: invariant broken: %s\n", what);
    std::abort();
  }
}

// Parses and checks the script, then builds the backend that answers from it.
absl::StatusOr<std::unique_ptr<rein::ScriptedBackend>> LoadScript(absl::string_view text,
                                                                  rein::Clock* clock) {
  absl::StatusOr<rein::Script> script = rein::ParseScript(text, "fuzz.json");
  if (!script.ok()) return script.status();
  return std::make_unique<rein::ScriptedBackend>(*std::move(script), clock);
}

template <typename Response>
void CheckSameReply(const absl::StatusOr<Response>& a, const absl::StatusOr<Response>& b) {
  Check(a.status() == b.status(), "the same request gets the same status");
  if (!a.ok()) {
    Check(a.status().code() != absl::StatusCode::kOk, "an error is not OK");
    return;
  }
  Check(google::protobuf::util::MessageDifferencer::Equals(*a, *b),
        "the same request gets the same reply");
  Check(a->backend() == "scripted", "a reply says backend \"scripted\"");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // libprotobuf logs every string with invalid UTF-8; a fuzzer makes millions of them.
  static const bool quiet = (google::protobuf::SetLogHandler(nullptr), true);
  (void)quiet;
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  rein::FakeClock clock;  // waiting takes no time: a delay_ms of an hour is as quick as none
  absl::StatusOr<std::unique_ptr<rein::ScriptedBackend>> backend = LoadScript(text, &clock);
  if (!backend.ok()) {
    Check(backend.status().code() == absl::StatusCode::kInvalidArgument,
          "load errors are INVALID_ARGUMENT");
    Check(absl::StartsWith(backend.status().message(), "fuzz.json: "),
          "load errors name the source");
    return 0;
  }

  for (int variant = 0; variant < 2; ++variant) {
    const bool rich = variant == 1;
    rein::v1::PlanRequest plan;
    plan.set_goal("g");
    plan.set_iteration(rich ? 3 : 0);
    plan.add_tools()->set_name("read_file");
    if (rich) {
      plan.set_latest_observation("x err ${iteration}");
      plan.set_replan_reason("stuck");
      plan.add_completed()->set_id("a");
      plan.add_human_inputs()->set_text("go on");
    }
    rein::v1::DecideRequest decide;
    decide.set_goal("g");
    decide.set_iteration(rich ? 3 : 0);
    decide.mutable_subtask()->set_id(rich ? "a" : "b\"\\");
    decide.add_tools()->set_name("read_file");
    if (rich) decide.add_human_inputs()->set_text("go");
    rein::v1::EvaluateRequest evaluate;
    evaluate.set_goal("g");
    evaluate.set_iteration(rich ? 3 : 0);
    evaluate.mutable_subtask()->set_id(rich ? "a" : "b");
    evaluate.mutable_action()->set_tool("read_file");
    evaluate.mutable_action()->set_ok(rich);
    evaluate.mutable_action()->set_observation("err");
    evaluate.set_observation(rich ? "x" : "");

    const auto deadline = [&clock] { return clock.Now() + absl::Hours(2); };
    CheckSameReply((*backend)->Plan(plan, deadline()), (*backend)->Plan(plan, deadline()));
    CheckSameReply((*backend)->Decide(decide, deadline()), (*backend)->Decide(decide, deadline()));
    CheckSameReply((*backend)->Evaluate(evaluate, deadline()),
                   (*backend)->Evaluate(evaluate, deadline()));
  }
  // A call that arrives after its deadline returns too (and does not wait).
  absl::StatusOr<rein::v1::PlanResponse> late =
      (*backend)->Plan(rein::v1::PlanRequest(), clock.Now() - absl::Seconds(1));
  (void)late;
  return 0;
}
