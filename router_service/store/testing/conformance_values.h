// What the store conformance suites share: runs, events and states to store, and matchers.
#ifndef REIN_ROUTER_SERVICE_STORE_TESTING_CONFORMANCE_VALUES_H_
#define REIN_ROUTER_SERVICE_STORE_TESTING_CONFORMANCE_VALUES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "google/protobuf/timestamp.pb.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "rein/v1/router.pb.h"
#include "rein/v1/types.pb.h"
#include "router_service/store/run_store.h"

namespace rein::conformance {

constexpr int64_t kEpoch = 1700000000;  // created_at of the runs, in seconds

MATCHER_P(EqualsProto, expected, "equals " + expected.ShortDebugString()) {
  if (google::protobuf::util::MessageDifferencer::Equals(arg, expected)) return true;
  *result_listener << "which is " << arg.ShortDebugString();
  return false;
}

template <typename T>
inline absl::StatusCode CodeOf(const absl::StatusOr<T>& result) {
  return result.status().code();
}

inline google::protobuf::Timestamp Seconds(int64_t seconds, int32_t nanos = 0) {
  google::protobuf::Timestamp ts;
  ts.set_seconds(seconds);
  ts.set_nanos(nanos);
  return ts;
}

inline rein::v1::Run MakeRun(const std::string& run_id, int64_t created_seconds = kEpoch,
                             const std::string& request_id = "",
                             rein::v1::Stage stage = rein::v1::INITIALIZING) {
  rein::v1::Run run;
  run.set_run_id(run_id);
  run.set_request_id(request_id);
  run.mutable_spec()->set_goal(absl::StrCat("goal of ", run_id));
  run.mutable_spec()->set_workspace("default");
  run.mutable_spec()->add_tools("read_file");
  run.mutable_spec()->mutable_limits()->set_max_iterations(7);
  run.mutable_state()->set_stage(stage);
  run.mutable_state()->set_version(1);
  *run.mutable_created_at() = Seconds(created_seconds, 125000000);
  *run.mutable_updated_at() = Seconds(created_seconds, 125000000);
  return run;
}

inline rein::v1::Run MakeEndedRun(const std::string& run_id, int64_t created_seconds,
                                  rein::v1::Stage stage, rein::v1::TerminationReason reason) {
  rein::v1::Run run = MakeRun(run_id, created_seconds, /*request_id=*/"", stage);
  run.mutable_state()->mutable_outcome()->set_status(stage);
  run.mutable_state()->mutable_outcome()->set_reason(reason);
  return run;
}

inline rein::v1::RunEvent StageEvent(rein::v1::Stage from, rein::v1::Stage to,
                                     int64_t version = 1) {
  rein::v1::RunEvent event;
  event.set_version(version);
  *event.mutable_time() = Seconds(kEpoch);
  event.mutable_stage_changed()->set_from(from);
  event.mutable_stage_changed()->set_to(to);
  return event;
}

inline rein::v1::RunEvent NoteEvent(const std::string& text, int64_t version) {
  rein::v1::RunEvent event;
  event.set_version(version);
  event.mutable_error()->set_stage(rein::v1::PLANNING);
  event.mutable_error()->set_code("UNAVAILABLE");
  event.mutable_error()->set_message(text);
  return event;
}

// An unfinished run (PLANNING) owned by `owner` at epoch 1.
inline rein::v1::Run OwnedRun(const std::string& run_id, const std::string& owner) {
  rein::v1::Run run = MakeRun(run_id, kEpoch, "", rein::v1::PLANNING);
  run.set_owner(owner);
  return run;
}

// The state after one transition from `state`: version + 1, `stage`.
inline rein::v1::RunState Next(const rein::v1::RunState& state, rein::v1::Stage stage) {
  rein::v1::RunState next = state;
  next.set_version(state.version() + 1);
  next.set_stage(stage);
  return next;
}

inline std::vector<int64_t> Seqs(const std::vector<rein::v1::RunEvent>& events) {
  std::vector<int64_t> seqs;
  for (const rein::v1::RunEvent& event : events) seqs.push_back(event.seq());
  return seqs;
}

inline std::vector<std::string> Ids(const std::vector<rein::v1::Run>& runs) {
  std::vector<std::string> ids;
  for (const rein::v1::Run& run : runs) ids.push_back(run.run_id());
  return ids;
}

// Every run ListRuns(filter) returns, following its page tokens; a failed call, a page over
// `page_size` or more than ten pages is a test failure.
inline std::vector<rein::v1::Run> ListEveryPage(RunStore& store, const RunFilter& filter,
                                                int page_size) {
  std::vector<rein::v1::Run> runs;
  std::string token;
  int pages = 0;
  do {
    absl::StatusOr<RunPage> page = store.ListRuns(filter, page_size, token);
    if (!page.ok()) {
      ADD_FAILURE() << page.status();
      break;
    }
    EXPECT_LE(page->runs.size(), static_cast<size_t>(page_size));
    for (rein::v1::Run& run : page->runs) runs.push_back(std::move(run));
    token = page->next_page_token;
    if (++pages >= 10) {
      ADD_FAILURE() << "paging does not end";
      break;
    }
  } while (!token.empty());
  return runs;
}

inline absl::Time At(int64_t seconds) { return absl::FromUnixSeconds(seconds); }

}  // namespace rein::conformance

#endif  // REIN_ROUTER_SERVICE_STORE_TESTING_CONFORMANCE_VALUES_H_
