// What the router logs and counts about a committed transition.
#include "router_service/run_log.h"

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "common/metrics.h"
#include "router_service/transition.h"

namespace rein {

void LogCommitted(const rein::v1::Run& run, rein::v1::Stage before,
                  const std::vector<rein::v1::RunEvent>& stored) {
  if (run.state().stage() != before) {
    const auto& st = run.state();
    if (IsTerminalStage(st.stage())) {
      LogInfo("run ended", {{"run_id", run.run_id()},
                            {"trace_id", st.trace().trace_id()},
                            {"stage", rein::v1::Stage_Name(st.stage())},
                            {"reason", rein::v1::TerminationReason_Name(st.outcome().reason())},
                            {"message", st.outcome().message()}});
      Metrics::Global().Add(
          "rein_router_runs_ended_total", 1,
          absl::StrCat("reason=\"", rein::v1::TerminationReason_Name(st.outcome().reason()), "\""));
    } else if (st.stage() == rein::v1::PAUSED) {
      LogInfo("run paused", {{"run_id", run.run_id()},
                             {"trace_id", st.trace().trace_id()},
                             {"reason", rein::v1::PauseReason_Name(st.pause().reason())},
                             {"detail", st.pause().detail()}});
    }
  }
  for (const rein::v1::RunEvent& event : stored) {
    if (event.has_error()) {
      LogWarning("stage attempt failed", {{"run_id", run.run_id()},
                                          {"trace_id", run.state().trace().trace_id()},
                                          {"stage", rein::v1::Stage_Name(event.error().stage())},
                                          {"code", event.error().code()},
                                          {"error", event.error().message()}});
    }
  }
}

}  // namespace rein
