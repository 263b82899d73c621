// Test helper: scripted-planner scripts for child runs (planner_service/SCRIPT.md).
#ifndef REIN_TESTS_CHILD_SCRIPTS_H_
#define REIN_TESTS_CHILD_SCRIPTS_H_

#include <string>

namespace rein::testing {

// The parent plans three delegated audits ("audit service a|b|c") and a report; each child
// (matched by its goal) plans one subtask "read", reads README.md with a decision that takes
// `delay_ms`, then says its goal is achieved; the parent's report lists the files. With `writer`
// "write_file", child b writes b.txt instead (a mutating call, allowed to child b only).
std::string FanOutScript(int delay_ms, const std::string& writer = "read_file");

// A parent whose goal holds neither "serially" nor "audit service" plans `width` delegated
// subtasks svc-1..svc-<width> ("audit service <i>") and a report (list_files); with "serially"
// in its goal it plans the same subtasks undelegated and does them itself (one read_file each).
// A child, or a plain run whose goal holds "audit service", plans one subtask "audit" (read
// README.md) and then achieves its goal. Every reply takes `delay_ms`.
std::string TreeScript(int width, int delay_ms);

}  // namespace rein::testing

#endif  // REIN_TESTS_CHILD_SCRIPTS_H_
