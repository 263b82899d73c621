// The termination rules of a run (docs/DESIGN.md, "The rules, in order": rules 1-8; rule 6 is
// the token budget, then the cost budget).
#include "router_service/termination.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/proto_time.h"

namespace rein {
namespace {

using rein::v1::Action;
using rein::v1::RunSpec;
using rein::v1::RunState;
using rein::v1::Stage;
using rein::v1::TerminationReason;

std::string CallKey(const Action& a) { return absl::StrCat(a.tool(), "\x1f", a.args_json()); }

std::string DescribeCall(const Action& a) {
  std::string args =
      a.args_json().size() > 200 ? a.args_json().substr(0, 200) + "..." : a.args_json();
  return absl::StrCat(a.tool(), "(", args, ")");
}

}  // namespace

bool PastDeadline(const RunState& st, absl::Time now) {
  return st.has_deadline() && now >= FromProtoTime(st.deadline());
}

bool CancelledOrPastDeadline(const RunState& st, absl::Time now) {
  return st.cancel_requested() || PastDeadline(st, now);
}

std::optional<Verdict> CheckLimits(const RunSpec& spec, const RunState& st, absl::Time now,
                                   bool begins_iteration) {
  const auto& limits = spec.limits();
  if (st.cancel_requested()) {
    return Verdict{rein::v1::CANCELLED_BY_USER, "cancelled by user"};
  }
  if (begins_iteration && st.iteration() >= limits.max_iterations()) {
    return Verdict{rein::v1::MAX_ITERATIONS,
                   absl::StrCat("reached max_iterations (", limits.max_iterations(), ")")};
  }
  if (PastDeadline(st, now)) {
    return Verdict{
        rein::v1::DEADLINE_EXCEEDED,
        absl::StrCat("deadline of ", absl::FormatDuration(FromProtoDuration(limits.deadline())),
                     " passed")};
  }
  if (st.retries_used() > limits.retry_budget()) {
    return Verdict{rein::v1::RETRY_BUDGET_EXHAUSTED,
                   absl::StrCat("retry budget exhausted: ", st.retries_used(),
                                " failed attempts, budget ", limits.retry_budget())};
  }
  if (st.consecutive_tool_failures() >= limits.max_consecutive_tool_failures()) {
    return Verdict{rein::v1::CONSECUTIVE_TOOL_FAILURES,
                   absl::StrCat(st.consecutive_tool_failures(), " consecutive tool failures")};
  }
  if (limits.token_budget() > 0 && st.tokens_used() > limits.token_budget()) {
    return Verdict{
        rein::v1::TOKEN_BUDGET_EXHAUSTED,
        absl::StrCat("used ", st.tokens_used(), " tokens, budget ", limits.token_budget())};
  }
  if (limits.cost_budget_usd() > 0 && st.cost_used_usd() > limits.cost_budget_usd()) {
    return Verdict{
        rein::v1::COST_BUDGET_EXHAUSTED,
        absl::StrFormat("cost $%.6f, budget $%.6f", st.cost_used_usd(), limits.cost_budget_usd())};
  }
  return std::nullopt;
}

Stage TerminalStageFor(TerminationReason reason) {
  return reason == rein::v1::CANCELLED_BY_USER ? rein::v1::CANCELLED : rein::v1::FAILED;
}

std::optional<std::string> DetectStagnation(const RunSpec& spec, const RunState& st) {
  int64_t fresh = st.actions_total() - st.stagnation_mark();
  int n = static_cast<int>(std::min<int64_t>(fresh, st.recent_actions_size()));
  if (n <= 0) return std::nullopt;
  std::vector<const Action*> acts;
  for (int i = st.recent_actions_size() - n; i < st.recent_actions_size(); ++i) {
    acts.push_back(&st.recent_actions(i));
  }
  auto tail = [&](int k) { return std::vector<const Action*>(acts.end() - k, acts.end()); };
  const int window = spec.limits().stagnation_window();
  if (n >= window) {
    auto last = tail(window);
    bool same = std::all_of(last.begin(), last.end(), [&](const Action* a) {
      return CallKey(*a) == CallKey(*last[0]) && a->observation() == last[0]->observation() &&
             a->ok() == last[0]->ok();
    });
    if (same) {
      return absl::StrCat("repeated call: ", DescribeCall(*last[0]), " ", window,
                          " times in a row with the same observation");
    }
  }
  if (n >= 3) {
    auto last = tail(3);
    bool same_failed = std::all_of(last.begin(), last.end(), [&](const Action* a) {
      return CallKey(*a) == CallKey(*last[0]) && !a->ok();
    });
    if (same_failed) {
      return absl::StrCat("repeated failure: ", DescribeCall(*last[0]), " failed 3 times in a row");
    }
  }
  if (n >= 6) {
    auto last = tail(6);
    std::string a = CallKey(*last[0]), b = CallKey(*last[1]);
    bool alternates = a != b;
    for (int i = 0; alternates && i < 6; ++i) {
      alternates = CallKey(*last[i]) == (i % 2 == 0 ? a : b);
    }
    if (alternates) {
      return absl::StrCat("alternation: ", DescribeCall(*last[0]), " and ", DescribeCall(*last[1]),
                          " alternate over the last 6 calls");
    }
  }
  return std::nullopt;
}

bool MayFinish(const RunState& st) { return st.goal_achieved() && st.subtasks_size() == 0; }

}  // namespace rein
