// The run's subtask stack: ending subtasks, checking planned ones, making a call for the top one.
#ifndef REIN_ROUTER_SERVICE_SUBTASKS_H_
#define REIN_ROUTER_SERVICE_SUBTASKS_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "rein/v1/types.pb.h"

namespace rein {

inline constexpr int kMaxSubtasksPerPlan = 64;   // per plan or edited plan
inline constexpr int kMaxPendingSubtasks = 256;  // on the stack at once
inline constexpr size_t kMaxTextBytes = 4096;    // a subtask's description or summary
inline constexpr int kMaxCompletedKept = 200;  // ended subtasks kept in RunState (the log has all)

// Moves `task` to the ended subtasks with `status` and `summary` (capped), keeping at most
// kMaxCompletedKept of them.
void EndSubtask(rein::v1::RunState& st, const rein::v1::SubTask& task,
                rein::v1::SubTask::Status status, const std::string& summary);

// Ends every pending subtask (the stack) as FAILED with `why`.
void DropStack(rein::v1::RunState& st, const std::string& why);

// Validates subtasks from the planner or a reviewer; fills in defaults. `field` prefixes
// error messages.
absl::Status ValidateSubtasks(const rein::v1::RunState& st, const std::string& field,
                              google::protobuf::RepeatedPtrField<rein::v1::SubTask>* tasks);

// A call chosen for the top subtask; error when the tool is not allowed or args are bad.
absl::StatusOr<rein::v1::ToolCall> MakeCall(const rein::v1::Run& run, rein::v1::RunState& st,
                                            const std::string& tool, const std::string& args_json,
                                            const std::string& field);

// `text` cut to at most `max_bytes` (not inside a UTF-8 sequence), saying how much was cut.
std::string Cap(const std::string& text, size_t max_bytes);

// Whether `text` is a JSON object.
bool IsJsonObject(const std::string& text);

// The run's tool named `name`, nullptr when it has none.
const rein::v1::ToolSpec* FindTool(const rein::v1::RunState& st, const std::string& name);

}  // namespace rein

#endif  // REIN_ROUTER_SERVICE_SUBTASKS_H_
