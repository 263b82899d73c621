// The files of the replay corpus: a recorded run as JSON lines (the Run, then its events).
#ifndef REIN_TESTS_REPLAY_CORPUS_FILE_H_
#define REIN_TESTS_REPLAY_CORPUS_FILE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "rein/v1/types.pb.h"

namespace rein::testing {

struct RecordedRun {
  rein::v1::Run run;
  std::vector<rein::v1::RunEvent> events;
};

// Line 1: the Run in proto3 JSON; each further line: one RunEvent, seq order.
std::string FormatRecordedRun(const RecordedRun& recorded);
absl::StatusOr<RecordedRun> ParseRecordedRun(const std::string& text);

}  // namespace rein::testing

#endif  // REIN_TESTS_REPLAY_CORPUS_FILE_H_
