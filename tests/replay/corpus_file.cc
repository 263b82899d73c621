// The replay corpus's file format.
#include "tests/replay/corpus_file.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "google/protobuf/util/json_util.h"

namespace rein::testing {
namespace {

std::string Json(const google::protobuf::Message& message) {
  std::string out;
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  (void)google::protobuf::util::MessageToJsonString(message, &out, options);
  return out;
}

}  // namespace

std::string FormatRecordedRun(const RecordedRun& recorded) {
  std::string out = absl::StrCat(Json(recorded.run), "\n");
  for (const rein::v1::RunEvent& event : recorded.events) absl::StrAppend(&out, Json(event), "\n");
  return out;
}

absl::StatusOr<RecordedRun> ParseRecordedRun(const std::string& text) {
  RecordedRun recorded;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipWhitespace())) {
    ++line_number;
    google::protobuf::Message* target = &recorded.run;
    if (line_number > 1) target = &recorded.events.emplace_back();
    auto status = google::protobuf::util::JsonStringToMessage(std::string(line), target);
    if (!status.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("line ", line_number, ": ", status.message().as_string()));
    }
  }
  if (line_number == 0) return absl::InvalidArgumentError("empty file");
  return recorded;
}

}  // namespace rein::testing
