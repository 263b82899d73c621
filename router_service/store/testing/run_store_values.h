// Small runs, events and states for the RunStore implementations' own tests.
#ifndef REIN_ROUTER_SERVICE_STORE_TESTING_RUN_STORE_VALUES_H_
#define REIN_ROUTER_SERVICE_STORE_TESTING_RUN_STORE_VALUES_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "rein/v1/router.pb.h"
#include "rein/v1/types.pb.h"
#include "router_service/store/run_store.h"

namespace rein::testing {

// A run at version 1 in INITIALIZING, created at 2023-11-14T22:13:20Z.
inline rein::v1::Run MakeRun(const std::string& run_id, const std::string& request_id = "") {
  rein::v1::Run run;
  run.set_run_id(run_id);
  run.set_request_id(request_id);
  run.mutable_spec()->set_goal("count the files");
  run.mutable_state()->set_stage(rein::v1::INITIALIZING);
  run.mutable_state()->set_version(1);
  run.mutable_created_at()->set_seconds(1700000000);
  return run;
}

// After a store that held run-old with request_id request-1 moved to namespaces: the key
// still names run-old in `default`, and is free in another namespace. An error says what
// did not hold.
inline absl::Status CheckRequestIdMovedToDefault(RunStore& store) {
  absl::StatusOr<CreateResult> again = store.CreateRun(MakeRun("run-new", "request-1"), {});
  if (!again.ok()) return again.status();
  if (again->created || again->run.run_id() != "run-old") {
    return absl::InternalError("request-1 in default no longer names run-old");
  }
  rein::v1::Run other = MakeRun("run-b", "request-1");
  other.mutable_spec()->set_namespace_("team-b");
  absl::StatusOr<CreateResult> b = store.CreateRun(other, {});
  if (!b.ok()) return b.status();
  if (!b->created) return absl::InternalError("request-1 in team-b did not create a run");
  return absl::OkStatus();
}

// An event that carries `message` (as an error event's message).
inline rein::v1::RunEvent Event(const std::string& message) {
  rein::v1::RunEvent event;
  event.mutable_error()->set_message(message);
  return event;
}

// A PLANNING state at `version`.
inline rein::v1::RunState NextState(int64_t version) {
  rein::v1::RunState state;
  state.set_stage(rein::v1::PLANNING);
  state.set_version(version);
  return state;
}

}  // namespace rein::testing

#endif  // REIN_ROUTER_SERVICE_STORE_TESTING_RUN_STORE_VALUES_H_
