// Test helper: scripted-planner scripts for child runs.
#include "tests/child_scripts.h"

#include "absl/strings/str_cat.h"

namespace rein::testing {

std::string FanOutScript(int delay_ms, const std::string& writer) {
  std::string out = R"({
  "plan": [
    {"when": {"goal_contains": "audit service", "completed_contains": "read"},
     "reply": {"goalAchieved": true, "reasoning": "child done"}},
    {"when": {"goal_contains": "audit service"},
     "reply": {"subtasks": [{"id": "read", "description": "read the readme",
                             "allowedTools": []}]}},
    {"when": {"completed_contains": "report"}, "reply": {"goalAchieved": true}},
    {"reply": {"subtasks": [
      {"id": "svc-a", "description": "audit service a", "allowedTools": ["read_file"], "delegate": true},
      {"id": "svc-b", "description": "audit service b", "allowedTools": ["read_file"EXTRA], "delegate": true},
      {"id": "svc-c", "description": "audit service c", "allowedTools": ["read_file"], "delegate": true},
      {"id": "report", "description": "write the report", "allowedTools": ["list_files"]}]}}
  ],
  "decide": [
    {"when": {"subtask": "read", "goal_contains": "audit service b"}, "delay_ms": DELAY,
     "reply": {"toolCall": {"tool": "WRITER", "args": {"path": "b.txt", "content": "b"}}}},
    {"when": {"subtask": "read"}, "delay_ms": DELAY,
     "reply": {"toolCall": {"tool": "read_file", "args": {"path": "README.md"}}}},
    {"when": {"subtask": "report"},
     "reply": {"toolCall": {"tool": "list_files", "args": {"path": "."}}}}
  ],
  "evaluate": [
    {"when": {"action_ok": true}, "reply": {"status": "COMPLETED", "summary": "${subtask}: ok"}},
    {"reply": {"status": "FAILED", "summary": "failed"}}
  ]
})";
  for (size_t at; (at = out.find("DELAY")) != std::string::npos;) {
    out.replace(at, 5, std::to_string(delay_ms));
  }
  for (size_t at; (at = out.find("WRITER")) != std::string::npos;) out.replace(at, 6, writer);
  // A child's tools are its subtask's: child b may also write when it writes.
  const std::string extra = writer == "read_file" ? "" : absl::StrCat(", \"", writer, "\"");
  out.replace(out.find("EXTRA"), 5, extra);
  if (writer == "read_file") {
    // No write: child b reads like its siblings.
    const std::string b = R"("args": {"path": "b.txt", "content": "b"})";
    out.replace(out.find(b), b.size(), R"("args": {"path": "README.md"})");
  }
  return out;
}

std::string TreeScript(int width, int delay_ms) {
  const std::string delay = absl::StrCat(R"("delay_ms": )", delay_ms);
  auto subtasks = [&](bool delegate) {
    std::string out;
    for (int i = 1; i <= width; ++i) {
      absl::StrAppend(&out, R"({"id": "svc-)", i, R"(", "description": "audit service )", i,
                      R"(", "allowedTools": ["read_file"], "delegate": )",
                      delegate ? "true" : "false", "}, ");
    }
    return absl::StrCat(
        out,
        R"({"id": "report", "description": "write the report", "allowedTools": ["list_files"]})");
  };
  return absl::StrCat(
      R"({
  "plan": [
    {"when": {"goal_contains": "audit service", "completed_contains": "audit"}, )",
      delay, R"(, "reply": {"goalAchieved": true}},
    {"when": {"goal_contains": "audit service"}, )",
      delay, R"(, "reply": {"subtasks": [
      {"id": "audit", "description": "read the readme", "allowedTools": ["read_file"]}]}},
    {"when": {"completed_contains": "report"}, )",
      delay, R"(, "reply": {"goalAchieved": true}},
    {"when": {"goal_contains": "serially"}, )",
      delay, R"(, "reply": {"subtasks": [)", subtasks(false), R"(]}},
    {)",
      delay, R"(, "reply": {"subtasks": [)", subtasks(true), R"(]}}
  ],
  "decide": [
    {"when": {"subtask": "report"}, )",
      delay, R"(, "reply": {"toolCall": {"tool": "list_files", "args": {"path": "."}}}},
    {)",
      delay,
      R"(, "reply": {"toolCall": {"tool": "read_file", "args": {"path": "README.md"}}}}
  ],
  "evaluate": [
    {"when": {"action_ok": true}, )",
      delay, R"(, "reply": {"status": "COMPLETED", "summary": "${subtask}: ok"}},
    {)",
      delay, R"(, "reply": {"status": "FAILED", "summary": "${subtask}: ${observation}"}}
  ]
})");
}

}  // namespace rein::testing
