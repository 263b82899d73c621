// PromptTemplate: a prompt file with declared `{{name}}` variables, checked when it loads and
// when it renders, so no prompt is ever sent with a placeholder left in it.
#ifndef REIN_PLANNER_SERVICE_PROMPT_TEMPLATE_H_
#define REIN_PLANNER_SERVICE_PROMPT_TEMPLATE_H_

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace rein {

// A template file is a header, a line `---`, and the body:
//
//   # any comment lines
//   vars: goal_text tool_list
//   ---
//   The goal: {{goal_text}}
//
// The header holds exactly one `vars:` line naming the variables (space or comma separated,
// possibly none). Names match [a-z][a-z0-9_]{0,63} and must not be a field name of the run's
// state or of a planner request (see IsReservedVariableName): a variable is a bounded,
// formatted view of the state made for the prompt, never a raw field, so a template cannot
// pull in an unbounded or stale field by naming it. Every declared variable is used in the
// body and every `{{name}}` in the body is declared. `{{` appears in a body only as the start
// of a placeholder. Immutable after Parse; thread-safe.
class PromptTemplate {
 public:
  // Parses `text`. Errors are INVALID_ARGUMENT reading "<source>: <problem>", e.g.
  // "plan_user.txt: line 9: {{goal}} is not declared in vars:".
  static absl::StatusOr<PromptTemplate> Parse(absl::string_view text, absl::string_view source);

  // The declared variables.
  const std::set<std::string>& variables() const { return variables_; }
  const std::string& source() const { return source_; }

  // The body with each placeholder replaced by its value. `values` must hold exactly the
  // declared variables; otherwise INTERNAL naming the missing or unknown one. Inside values,
  // every "{{" becomes "{ {" so that a goal or an observation can never look like a
  // placeholder; a rendered text that still holds "{{" is INTERNAL (see
  // CheckNoPlaceholderLeft).
  absl::StatusOr<std::string> Render(const std::map<std::string, std::string>& values) const;

 private:
  struct Piece {
    bool is_variable;
    std::string text;  // literal text, or the variable's name
  };

  PromptTemplate() = default;

  std::string source_;
  std::set<std::string> variables_;
  std::vector<Piece> pieces_;
};

// OK, or INTERNAL "<source>: rendered prompt still holds a placeholder near \"...\"" when
// `rendered` contains "{{".
absl::Status CheckNoPlaceholderLeft(absl::string_view rendered, absl::string_view source);

// True when `name` is a field name of rein.v1.RunState, RunSpec, Limits, ModelOptions, SubTask,
// Action, HumanInput, ToolSpec or of a Plan/Decide/Evaluate request (e.g. "goal",
// "recent_actions", "summary"); such names cannot be template variables.
bool IsReservedVariableName(absl::string_view name);

}  // namespace rein

#endif  // REIN_PLANNER_SERVICE_PROMPT_TEMPLATE_H_
