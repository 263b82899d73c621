// The bridge between the spin model (verification/stage_router.pml) and the code: drives the
// real StageRouter through 100,000 random runs (random planner replies, valid, invalid and
// failed; tool results ok and failed; executor errors; mutating and read-only calls; reviews,
// stale ones too; cancels; clock jumps past the deadline; router restarts; delegated subtasks
// run as groups of simulated child runs that work, pause, are reviewed and end with every
// terminal reason) and checks on every transition the properties the model proves, and that
// the transition is a row of verification/transitions.txt. The seed is printed;
// REIN_RANDOM_SEED=N reproduces a run (REIN_RANDOM_RUNS=N changes the count).
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/proto_time.h"
#include "common/testing/fake_clock.h"
#include "gtest/gtest.h"
#include "router_service/children/child_group.h"
#include "router_service/spec.h"
#include "router_service/stage_router.h"
#include "router_service/termination.h"

namespace rein {
namespace {

using rein::v1::Run;
using rein::v1::RunState;
using Eval = rein::v1::RunEvent::Evaluation;

constexpr absl::Duration kDeadline = absl::Seconds(20);
constexpr absl::Duration kBackoff = absl::Seconds(1);  // the driver's shortest retry backoff

// verification/transitions.txt: (stage, event) -> the stages allowed after it.
using Table = std::map<std::pair<std::string, std::string>, std::set<std::string>>;

Table LoadTable() {
  std::ifstream in("verification/transitions.txt");
  EXPECT_TRUE(in.good()) << "cannot read verification/transitions.txt";
  Table table;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string from, event, to;
    if (!(words >> from) || from[0] == '#') continue;
    words >> event;
    std::set<std::string>& allowed = table[{from, event}];
    while (words >> to) allowed.insert(to);
  }
  return table;
}

std::vector<rein::v1::ToolSpec> KnownTools() {
  std::vector<rein::v1::ToolSpec> tools(3);
  tools[0].set_name("list_files");
  tools[1].set_name("read_file");
  tools[2].set_name("write_file");
  tools[2].set_mutating(true);
  return tools;
}

absl::Status RandomError(std::mt19937_64& rng, std::vector<absl::StatusCode> codes) {
  return absl::Status(codes[rng() % codes.size()], "injected");
}

// A price table of one model, "m", at $1,000 per million tokens of every kind (so that the
// random usage of a few runs' replies reaches the random cost budgets).
StageRouterOptions RouterOptions() {
  static const auto* const kPrices =
      new std::shared_ptr<const PriceTable>(std::make_shared<const PriceTable>(
          *PriceTable::Parse("m 1000 1000 1000 1000\n", "random_test_prices")));
  StageRouterOptions options;
  options.prices = *kPrices;
  return options;
}

// One random run: the driver (like run_engine's Advance loop) and the checks.
class RandomRun {
 public:
  RandomRun(const Table& table, uint64_t seed, std::map<std::string, int>* coverage)
      : table_(table), rng_(seed), coverage_(coverage) {}

  // Returns the first property that failed, or "" when the run kept them all.
  std::string Drive() {
    rein::v1::RunSpec spec;
    spec.set_goal("random run");
    spec.add_tools("list_files");
    spec.add_tools("read_file");
    spec.add_tools("write_file");
    auto* limits = spec.mutable_limits();
    limits->set_max_iterations(1 + Pick(6));
    limits->set_retry_budget(Pick(4) == 0 ? -1 : Pick(3));
    limits->set_max_consecutive_tool_failures(1 + Pick(3));
    limits->set_stagnation_window(2 + Pick(3));
    limits->set_on_stagnation(static_cast<rein::v1::OnStagnation>(1 + Pick(3)));
    if (Pick(3) == 0) limits->set_token_budget(50 + Pick(200));
    if (Pick(3) == 0) limits->set_cost_budget_usd(0.05 + Pick(200) / 1000.0);
    *limits->mutable_deadline() = ToProto(kDeadline);
    for (auto point : {rein::v1::AFTER_PLAN, rein::v1::BEFORE_TOOL, rein::v1::BEFORE_MUTATING_TOOL,
                       rein::v1::AFTER_EVALUATE}) {
      if (Pick(4) == 0) spec.add_pause_points(point);
    }
    spec.set_pause_on_notes(Pick(2) == 0);
    if (Pick(5) == 0) spec.set_combine_evaluate_decide(false);
    if (Pick(5) == 0) spec.set_combine_plan_decide(false);
    if (Pick(2) == 0) {  // a run that may delegate subtasks to child runs
      limits->set_max_children(1 + Pick(4));
      limits->set_max_parallel_children(1 + Pick(3));
      if (Pick(3) == 0) {
        spec.mutable_child_share()->set_group_percent(Pick(101));
        for (int i = 0; i < 3; ++i) {
          if (Pick(2) == 0) (*spec.mutable_child_share()->mutable_weights())[Id(i)] = 1 + Pick(9);
        }
      }
    }
    auto normalized = NormalizeSpec(spec, KnownTools());
    if (!normalized.ok()) return absl::StrCat("spec: ", normalized.status().ToString());
    spec_ = *normalized;
    const auto& l = spec_.limits();
    max_iterations_ = l.max_iterations();
    budget_ = l.retry_budget();
    // The bound of verification/README.md: 4M + R + D - 2 commits since the start or the last
    // accepted review, D the deadline in backoffs.
    bound_ = 4 * max_iterations_ + budget_ + (kDeadline / kBackoff) - 2;

    Transition first = router_.NewRun("r", "", spec_, clock_.Now(), &run_);
    if (first.state.stage() != rein::v1::INITIALIZING) return "NewRun: not INITIALIZING";

    for (int step = 0; step < 1000 && error_.empty(); ++step) {
      if (StageRouter::IsTerminal(stage())) {
        CheckEnded();
        return error_;
      }
      if (Pick(40) == 0) ReviewNotPaused();
      NextStep next = router_.Next(run_, clock_.Now());
      switch (next.kind) {
        case NextStep::Kind::kEnded: return Fail("Next says ended, the stage is not terminal");
        case NextStep::Kind::kCommit: {
          const RunState& st = run_.state();
          std::string event;
          if (CancelledOrPastDeadline(st, clock_.Now())) {
            event = "tick";
          } else if (OpensGroup(st)) {
            event = "open_group";
          } else if (st.stage() == rein::v1::DECIDING && st.has_pending_call()) {
            event = "proposed_call";
          } else if (st.stage() == rein::v1::EXECUTING && st.pending_call().mutating() &&
                     !st.call_dispatched()) {
            event = "dispatch";
          } else {
            return Fail(absl::StrCat("Next committed in ", rein::v1::Stage_Name(st.stage()),
                                     " for no reason: ", DescribeEnd(*next.transition)));
          }
          Apply(*next.transition, event);
          break;
        }
        case NextStep::Kind::kIdle:
        case NextStep::Kind::kWaitUntil:
          if (stage() != rein::v1::PAUSED) return Fail("waiting outside PAUSED");
          if (!Paused()) return error_;  // nobody comes back: the run rests PAUSED
          break;
        case NextStep::Kind::kCall: Call(next.effect); break;
      }
    }
    if (error_.empty() && !StageRouter::IsTerminal(stage()) && stage() != rein::v1::PAUSED) {
      Fail("the run did not come to rest in 1000 steps");
    }
    return error_;
  }

 private:
  static google::protobuf::Duration ToProto(absl::Duration d) {
    google::protobuf::Duration p;
    p.set_seconds(absl::ToInt64Seconds(d));
    return p;
  }

  int Pick(int n) { return static_cast<int>(rng_() % n); }
  rein::v1::Stage stage() const { return run_.state().stage(); }

  std::string Fail(const std::string& what) {
    if (error_.empty()) {
      error_ = absl::StrCat(what, " (stage ", rein::v1::Stage_Name(stage()), ", version ",
                            run_.state().version(), ", iteration ", run_.state().iteration(),
                            ", retries ", run_.state().retries_used(), ")");
    }
    return error_;
  }

  static std::string DescribeEnd(const Transition& t) {
    return absl::StrCat(rein::v1::Stage_Name(t.state.stage()), " ",
                        rein::v1::TerminationReason_Name(t.state.outcome().reason()), " ",
                        t.state.outcome().message());
  }

  // Commits `t`, the result of `event`, after checking every property on it.
  void Apply(const Transition& t, const std::string& event) {
    const RunState& old = run_.state();
    const std::string from = rein::v1::Stage_Name(old.stage());
    const std::string to = rein::v1::Stage_Name(t.state.stage());
    (*coverage_)[absl::StrCat(from, " ", event)]++;
    auto row = table_.find({from, event});
    if (row == table_.end() || row->second.count(to) == 0) {
      Fail(absl::StrCat("transition ", from, " --", event, "--> ", to,
                        " is not in verification/transitions.txt (", DescribeEnd(t), ")"));
      return;
    }
    if (t.state.version() != old.version() + 1) Fail("version is not old + 1");
    if (event.rfind("review_", 0) == 0) steps_ = 0;
    if (++steps_ > bound_) {
      Fail(absl::StrCat("no rest after ", steps_, " commits, bound ", bound_));
    }
    int finished = 0;
    for (const auto& e : t.events) finished += e.has_finished();
    finished_events_ += finished;
    const bool terminal = StageRouter::IsTerminal(t.state.stage());
    if (finished_events_ != (terminal ? 1 : 0)) {
      Fail(absl::StrCat(finished_events_, " terminal events in stage ", to));
    }
    // A WAITING parent's recorded cancel ends it at the join, once its children have ended.
    if ((old.cancel_requested() && event != "cancel_request" && event != "children_started") ||
        event == "cancel") {
      if (t.state.stage() != rein::v1::CANCELLED) {
        Fail(absl::StrCat("a cancel did not end the run at the next transition: ", to));
      }
    }
    if (t.state.retries_used() < old.retries_used()) Fail("retries_used went down");
    // A join may take the parent past budget + 1 by its children's last attempts (each child
    // may spend one past its carved part), at most one per child, and ends it.
    if (t.state.retries_used() > budget_ + 1 &&
        !(event == "children_joined" && terminal &&
          t.state.retries_used() <= budget_ + spec_.limits().max_parallel_children())) {
      Fail("retries_used beyond budget + 1");
    }
    if (t.state.retries_used() > budget_ && !terminal) Fail("over the retry budget, still going");
    if (t.state.iteration() > max_iterations_) Fail("iteration beyond max_iterations");
    // No child outlives its parent: a parent leaves WAITING only once every child has ended.
    if (old.stage() == rein::v1::WAITING && t.state.stage() != rein::v1::WAITING) {
      for (const auto& [id, child] : children_) {
        if (!child.run_id.empty() && !StageRouter::IsTerminal(child.stage)) {
          Fail(absl::StrCat("left WAITING for ", to, " with child ", id, " in ",
                            rein::v1::Stage_Name(child.stage)));
        }
      }
    }
    for (const auto& task : t.state.subtasks()) planned_.insert(task.id());
    if (t.state.stage() == rein::v1::FINISHED) {
      if (!t.state.goal_achieved() || t.state.subtasks_size() > 0) {
        Fail("FINISHED without the goal claimed or with subtasks pending");
      }
      std::set<std::string> ended;
      for (const auto& task : t.state.completed_subtasks()) {
        if (task.status() == rein::v1::SubTask::COMPLETED ||
            task.status() == rein::v1::SubTask::FAILED) {
          ended.insert(task.id());
        }
      }
      for (const std::string& id : planned_) {
        if (ended.count(id) == 0) Fail(absl::StrCat("FINISHED with subtask ", id, " not ended"));
      }
    }
    *run_.mutable_state() = t.state;
    if (event == "open_group") children_.clear();  // a new group
  }

  // A run that ended stays ended: nothing moves it.
  void CheckEnded() {
    if (router_.Next(run_, clock_.Now()).kind != NextStep::Kind::kEnded) Fail("ended: Next");
    if (router_.OnCancel(run_, Pick(2) == 0, "", clock_.Now())) Fail("ended: OnCancel moved it");
    if (router_.OnTick(run_, clock_.Now() + absl::Hours(1))) Fail("ended: OnTick moved it");
    rein::v1::Review review;
    review.mutable_approve();
    if (router_.OnReview(run_, review, run_.state().version(), clock_.Now()).ok()) {
      Fail("ended: a review moved it");
    }
    if (finished_events_ != 1) Fail("ended without exactly one terminal event");
  }

  // A review of a run that is not paused is refused.
  void ReviewNotPaused() {
    if (stage() == rein::v1::PAUSED) return;
    rein::v1::Review review;
    review.mutable_approve();
    auto t = router_.OnReview(run_, review, run_.state().version(), clock_.Now());
    if (t.ok() || t.status().code() != absl::StatusCode::kFailedPrecondition) {
      Fail("a review of a run that is not paused was not refused");
    }
  }

  // What happens to a PAUSED run; false when nobody comes back.
  bool Paused() {
    const auto& pause = run_.state().pause();
    switch (Pick(12)) {
      case 0: return false;
      case 1: Apply(*router_.OnCancel(run_, false, "", clock_.Now()), "cancel"); return true;
      case 2: Jump(); return true;
      case 3: {  // a stale review: another reviewer won
        rein::v1::Review review;
        review.mutable_approve();
        auto t = router_.OnReview(run_, review, run_.state().version() - 1, clock_.Now());
        if (t.ok() || t.status().code() != absl::StatusCode::kFailedPrecondition) {
          Fail("a stale review was not refused");
        }
        return true;
      }
      default: break;
    }
    rein::v1::Review review;
    std::string event;
    switch (Pick(6)) {
      case 0:
        review.mutable_approve();
        event = "review_approve";
        break;
      case 1:
        review.mutable_answer()->set_text("an answer");
        event = "review_answer";
        break;
      case 2:
        review.mutable_reject()->set_feedback("no");
        event = "review_reject";
        break;
      case 3:
        review.mutable_reject()->set_abort(true);
        event = "review_abort";
        break;
      case 4:
        for (int i = 0, n = 1 + Pick(2); i < n; ++i)
          NewTask(review.mutable_edit_plan()->add_subtasks());
        event = "review_edit_plan";
        break;
      default:
        review.mutable_edit_tool_call()->set_tool(Pick(2) ? "write_file" : "read_file");
        review.mutable_edit_tool_call()->set_args_json("{}");
        event = "review_edit_call";
        break;
    }
    auto t = router_.OnReview(run_, review, run_.state().version(), clock_.Now());
    if (!t.ok()) {
      // Refused only for a review that does not fit the pause.
      bool call_fits = pause.has_pending_call() && run_.state().subtasks_size() > 0;
      if (call_fits) {
        const auto& allowed = run_.state().subtasks(0).allowed_tools();
        call_fits = std::find(allowed.begin(), allowed.end(), review.edit_tool_call().tool()) !=
                    allowed.end();
      }
      const bool fits = !(event == "review_approve" && pause.reason() == rein::v1::NEED_HUMAN) &&
                        !(event == "review_edit_call" && !call_fits);
      if (fits) Fail(absl::StrCat(event, " refused: ", t.status().ToString()));
      return true;
    }
    may_have_run_.clear();  // a person looked at the run
    Apply(*t, event);
    return true;
  }

  void Jump() {
    if (Pick(3) == 0) {
      clock_.Advance(kDeadline);  // past the deadline
    } else {
      clock_.Advance(absl::Milliseconds(1 + Pick(3000)));
    }
  }

  void NewTask(rein::v1::SubTask* task) {
    task->set_id(absl::StrCat("t", ++task_counter_));
    task->set_description("a subtask");
    if (Pick(3) == 0) task->add_allowed_tools(Pick(2) ? "write_file" : "read_file");
    // Mostly where children are allowed; now and then where they are not (invalid output).
    if (Pick(spec_.limits().max_children() > 0 ? 2 : 40) == 0) task->set_delegate(true);
  }

  static std::string Id(int i) { return absl::StrCat("t", i + 1); }

  // A child run of the current group as its own router drives it: started or not, its stage,
  // and once ended its outcome, iterations and retries (within the limits carved for it).
  struct Child {
    std::string run_id;
    std::string start_error;
    rein::v1::Stage stage = rein::v1::INITIALIZING;
    bool cancel = false;  // the parent's cascade asked it to cancel
    rein::v1::Limits limits;
    rein::v1::Outcome outcome;
    int iterations = 0;
    int retries = 0;
  };

  void EndChild(Child& c, rein::v1::TerminationReason reason) {
    c.stage = reason == rein::v1::GOAL_ACHIEVED       ? rein::v1::FINISHED
              : reason == rein::v1::CANCELLED_BY_USER ? rein::v1::CANCELLED
                                                      : rein::v1::FAILED;
    c.outcome.set_status(c.stage);
    c.outcome.set_reason(reason);
    c.outcome.set_message(rein::v1::TerminationReason_Name(reason));
    c.outcome.mutable_usage()->set_input_tokens(Pick(40));
    c.outcome.set_cost_usd(Pick(50) / 1000.0);
    // A run never passes its max_iterations; it spends at most one attempt past its budget.
    c.iterations = Pick(c.limits.max_iterations() + 1);
    c.retries = Pick(c.limits.retry_budget() + 2);
  }

  // A child's own step: it works (a WAITING child waits for its own children), pauses, is
  // reviewed, ends with any terminal reason, ends at its deadline (the parent's) or when
  // cancelled.
  void MoveChild(Child& c, absl::Time now) {
    static constexpr rein::v1::TerminationReason kReasons[] = {rein::v1::GOAL_ACHIEVED,
                                                               rein::v1::MAX_ITERATIONS,
                                                               rein::v1::DEADLINE_EXCEEDED,
                                                               rein::v1::RETRY_BUDGET_EXHAUSTED,
                                                               rein::v1::CONSECUTIVE_TOOL_FAILURES,
                                                               rein::v1::TOKEN_BUDGET_EXHAUSTED,
                                                               rein::v1::STAGNATION,
                                                               rein::v1::PLANNER_ERROR,
                                                               rein::v1::CANCELLED_BY_USER,
                                                               rein::v1::REJECTED_BY_REVIEWER,
                                                               rein::v1::INTERNAL,
                                                               rein::v1::COST_BUDGET_EXHAUSTED};
    if (c.run_id.empty() || StageRouter::IsTerminal(c.stage)) return;
    if (now >= FromProtoTime(run_.state().deadline()) && Pick(2) == 0) {
      return EndChild(c, c.cancel ? rein::v1::CANCELLED_BY_USER : rein::v1::DEADLINE_EXCEEDED);
    }
    if (c.cancel) {
      if (Pick(2) == 0)
        EndChild(c, Pick(8) == 0 ? kReasons[Pick(12)] : rein::v1::CANCELLED_BY_USER);
      return;
    }
    if (c.stage == rein::v1::PAUSED) {
      if (Pick(3) == 0) c.stage = rein::v1::DECIDING;  // a person reviewed it
      return;
    }
    switch (Pick(8)) {
      case 0:
      case 1: return EndChild(c, kReasons[Pick(12)]);
      case 2: c.stage = rein::v1::PAUSED; return;
      case 3: c.stage = rein::v1::WAITING; return;  // for its own children
      default: c.stage = rein::v1::EXECUTING; return;
    }
  }

  // The driver's kChildren call (ChildRunner::Observe): start the members not started, read
  // each (after it moved on its own), cancel the live ones when asked (a paused one ends at
  // once), and answer; the parent commits what changed.
  void Children(const ChildrenEffect& effect) {
    const absl::Time now = clock_.Now();
    for (const ChildrenEffect::Start& start : effect.start) {
      Child& c = children_[start.member.request_id()];
      if (!c.run_id.empty() || !c.start_error.empty()) continue;  // idempotent on request_id
      c.limits = start.member.limits();
      if (Pick(15) == 0) {
        c.start_error = "the store is down";
      } else {
        c.run_id = "c-" + start.member.request_id();
      }
    }
    for (auto& [id, c] : children_) MoveChild(c, now);
    ChildrenObserved observed;
    if (Pick(20) == 0) observed.status = absl::UnavailableError("store down");
    for (const rein::v1::ChildRun& member : effect.group) {
      auto it = children_.find(member.request_id());
      if (it == children_.end()) return (void)Fail("a member was never started");
      const Child& c = it->second;
      rein::v1::ChildRun v = member;
      v.set_run_id(c.run_id);
      v.set_start_error(c.start_error);
      v.set_stage(c.stage);
      if (StageRouter::IsTerminal(c.stage)) {
        *v.mutable_outcome() = c.outcome;
        v.set_summary("child summary");
        v.set_iterations(c.iterations);
        v.set_retries_used(c.retries);
      }
      observed.children.push_back(v);
    }
    if (effect.cancel) {
      for (auto& [id, c] : children_) {
        if (c.run_id.empty() || StageRouter::IsTerminal(c.stage)) continue;
        if (c.stage == rein::v1::PAUSED) {
          EndChild(c, rein::v1::CANCELLED_BY_USER);
        } else {
          c.cancel = true;
        }
      }
    }
    Applied applied = router_.Apply(run_, observed, now);
    if (applied.call) return (void)Fail("children observed asked for a call");
    if (!applied.transition) return;
    bool joined = false;
    for (const auto& e : applied.transition->events) joined = joined || e.has_children_joined();
    Apply(*applied.transition, joined ? "children_joined" : "children_started");
  }

  // Mostly the priced model (RouterOptions), sometimes the free scripted backend, rarely a
  // model the table cannot price (which ends a run with a cost budget).
  std::string RandomBackend() {
    const int kind = Pick(20);
    return kind == 0 ? "anthropic:unpriced" : kind < 5 ? "scripted" : "anthropic:m";
  }

  rein::v1::Usage RandomUsage() {
    rein::v1::Usage usage;
    usage.set_input_tokens(Pick(30));
    usage.set_output_tokens(Pick(10));
    return usage;
  }

  // A file_info reply for the run's workspace: there, or gone (the executor's NOT_FOUND).
  rein::v1::ExecuteResponse WorkspaceReply(bool there) {
    rein::v1::ExecuteResponse reply;
    reply.set_ok(there);
    if (!there) {
      reply.mutable_error()->set_code("NOT_FOUND");
      reply.mutable_error()->set_message(absl::StrCat("workspace \"", spec_.workspace(),
                                                      "\" does not exist or is not a directory"));
    }
    return reply;
  }

  std::string Notes() { return Pick(4) == 0 ? "a note" : ""; }

  // A call is made: before its reply, a cancel, a clock jump or a restart may come.
  void Call(const Effect& effect) {
    const RunState& st = run_.state();
    if (Pick(30) == 0) {  // cancelled before the call is sent (a WAITING parent's is recorded)
      if (auto t = router_.OnCancel(run_, false, "", clock_.Now())) {
        Apply(*t, stage() == rein::v1::WAITING ? "cancel_request" : "cancel");
      }
      return;
    }
    if (Pick(30) == 0) {  // time passes before the call is sent: Next looks again
      Jump();
      return;
    }
    const bool mutating_call =
        effect.kind == Effect::Kind::kExecute && st.pending_call().mutating();
    const std::string call_id = st.pending_call().call_id();
    if (mutating_call) {
      // Asking again with the same call_id is how the router learns a lost call's fate: the
      // executors' call journal answers it and never runs it twice. What must never happen is
      // another call_id sent while one may have run with no answer or review since (the same
      // action under a new id would run twice).
      for (const std::string& unanswered : may_have_run_) {
        if (unanswered != call_id) {
          Fail(absl::StrCat("mutating call ", call_id, " sent while ", unanswered,
                            " may have run, with no review or answer since"));
          return;
        }
      }
      may_have_run_.insert(call_id);
    }
    if (Pick(20) == 0) {
      if (auto t = router_.OnCancel(run_, true, "", clock_.Now())) Apply(*t, "cancel_request");
    }
    if (Pick(10) == 0) Jump();
    if (mutating_call && Pick(25) == 0) {  // the router restarts; the reply is lost
      return;  // nothing is committed: the call is asked again with the same call_id
    }
    const absl::Time now = clock_.Now();
    const std::vector<absl::StatusCode> retryable = {absl::StatusCode::kUnavailable,
                                                     absl::StatusCode::kDeadlineExceeded,
                                                     absl::StatusCode::kInternal};
    const std::vector<absl::StatusCode> fatal = {absl::StatusCode::kPermissionDenied,
                                                 absl::StatusCode::kInvalidArgument};
    switch (effect.kind) {
      case Effect::Kind::kListTools: {
        if (Pick(5) == 0) {
          Apply(router_.OnTools(run_, RandomError(rng_, retryable), std::nullopt, now),
                "tools_error");
          return;
        }
        rein::v1::ListToolsResponse tools;
        for (const auto& tool : KnownTools()) *tools.add_tools() = tool;
        std::optional<absl::StatusOr<rein::v1::ExecuteResponse>> workspace;
        if (Pick(4) == 0) workspace = WorkspaceReply(Pick(5) != 0);  // the workspace check
        Apply(router_.OnTools(run_, tools, workspace, now), "tools_ok");
        return;
      }
      case Effect::Kind::kPlan: {
        int kind = Pick(10);
        if (kind == 0)
          return Apply(router_.OnPlan(run_, RandomError(rng_, retryable), now), "plan_error");
        if (kind == 1)
          return Apply(router_.OnPlan(run_, RandomError(rng_, fatal), now), "plan_fatal");
        rein::v1::PlanResponse reply;
        *reply.mutable_usage() = RandomUsage();
        reply.set_backend(RandomBackend());
        reply.set_notes(Notes());
        if (kind == 2) {
          reply.set_refusal("no");
          return Apply(router_.OnPlan(run_, reply, now), "plan_refusal");
        }
        if (kind == 3) {  // invalid: a subtask with no description
          reply.add_subtasks()->set_id("bad");
          return Apply(router_.OnPlan(run_, reply, now), "plan_invalid");
        }
        if (kind == 4) return Apply(router_.OnPlan(run_, reply, now), "plan_empty");
        reply.set_goal_achieved(Pick(2) == 0);
        if (kind == 5) {
          reply.set_goal_achieved(true);
          return Apply(router_.OnPlan(run_, reply, now), "plan_done");
        }
        for (int i = 0, n = 1 + Pick(2); i < n; ++i) NewTask(reply.add_subtasks());
        // Delegated subtasks are checked against the child limits: a plan that does not fit
        // them is invalid output.
        const bool fits = CheckDelegation(spec_, st, reply.subtasks(), "subtasks").ok();
        if (Pick(2) == 0) {
          // A proposed first call: valid, a tool the top subtask may not use, an unknown tool,
          // no tool, or bad arguments.
          const int which = Pick(7);
          const char* tools[] = {"list_files", "read_file", "write_file", "no_such_tool", ""};
          reply.mutable_first_call()->set_tool(tools[which >= 5 ? which - 2 : Pick(3)]);
          reply.mutable_first_call()->set_args_json(which == 4 ? "[]" : "{}");
        }
        return Apply(router_.OnPlan(run_, reply, now), fits ? "plan_ok" : "plan_invalid");
      }
      case Effect::Kind::kDecide: {
        int kind = Pick(10);
        if (kind == 0)
          return Apply(router_.OnDecide(run_, RandomError(rng_, retryable), now), "decide_error");
        if (kind == 1)
          return Apply(router_.OnDecide(run_, RandomError(rng_, fatal), now), "decide_fatal");
        rein::v1::DecideResponse reply;
        *reply.mutable_usage() = RandomUsage();
        reply.set_backend(RandomBackend());
        reply.set_notes(Notes());
        if (kind == 2) {
          reply.set_refusal("no");
          return Apply(router_.OnDecide(run_, reply, now), "decide_refusal");
        }
        if (kind == 3) {
          reply.set_human_query("which file?");
          return Apply(router_.OnDecide(run_, reply, now), "decide_query");
        }
        if (kind == 4) return Apply(router_.OnDecide(run_, reply, now), "decide_invalid");
        // A call; invalid when the tool is not allowed for the top subtask or args are bad.
        const char* tools[] = {"list_files", "read_file", "write_file", "write_file"};
        const std::string tool = tools[Pick(4)];
        const std::string args = Pick(12) == 0 ? "[1]" : (Pick(2) ? "{}" : "{\"path\":\"a\"}");
        reply.mutable_tool_call()->set_tool(tool);
        reply.mutable_tool_call()->set_args_json(args);
        const auto& allowed = st.subtasks(0).allowed_tools();
        const bool valid =
            args != "[1]" && std::find(allowed.begin(), allowed.end(), tool) != allowed.end();
        return Apply(router_.OnDecide(run_, reply, now), valid ? "decide_call" : "decide_invalid");
      }
      case Effect::Kind::kExecute: {
        int kind = Pick(10);
        if (kind == 0 || kind == 1) {
          auto code =
              kind == 0 ? absl::StatusCode::kUnavailable : absl::StatusCode::kDeadlineExceeded;
          return Apply(router_.OnExecute(run_, absl::Status(code, "lost"), now), "exec_error");
        }
        if (mutating_call && Pick(8) == 0) {
          // The executors' journal: the executor that started this call died mid-call, so
          // whether it ran is unknown; the run pauses RECOVERY for a person.
          rein::v1::ExecuteResponse unknown;
          unknown.set_ok(false);
          unknown.set_outcome_unknown(true);
          unknown.set_executor_id("executor-dead");
          unknown.mutable_error()->set_code("OUTCOME_UNKNOWN");
          unknown.mutable_error()->set_message("whether the call ran is unknown");
          return Apply(router_.OnExecute(run_, unknown, now), "recovery");
        }
        may_have_run_.erase(call_id);  // every other reply answers the call
        if (kind == 2) {
          return Apply(router_.OnExecute(run_,
                                         RandomError(rng_, {absl::StatusCode::kInvalidArgument,
                                                            absl::StatusCode::kFailedPrecondition,
                                                            absl::StatusCode::kUnimplemented}),
                                         now),
                       "exec_rejected");
        }
        if (kind == 3) {
          Apply(router_.OnExecute(run_, absl::ResourceExhaustedError("full"), now), "exec_full");
          clock_.Advance(kBackoff);  // the driver backs off after any error
          return;
        }
        const bool ok = kind >= 6;
        // A failed call: a missing file, now and then the workspace gone under the run.
        rein::v1::ExecuteResponse reply = WorkspaceReply(ok || Pick(30) != 0);
        reply.set_ok(ok);
        if (!ok && reply.error().code().empty()) {
          reply.mutable_error()->set_code("NOT_FOUND");
          reply.mutable_error()->set_message("no such file");
        }
        reply.set_output(Pick(2) ? "x" : "y");
        return Apply(router_.OnExecute(run_, reply, now), ok ? "exec_ok" : "exec_failed");
      }
      case Effect::Kind::kEvaluate: {
        int kind = Pick(10);
        if (kind == 0)
          return Apply(router_.OnEvaluate(run_, RandomError(rng_, retryable), now), "eval_error");
        if (kind == 1)
          return Apply(router_.OnEvaluate(run_, RandomError(rng_, fatal), now), "eval_fatal");
        rein::v1::EvaluateResponse reply;
        *reply.mutable_usage() = RandomUsage();
        reply.set_backend(RandomBackend());
        reply.set_notes(Notes());
        if (kind == 2) {
          reply.set_refusal("no");
          return Apply(router_.OnEvaluate(run_, reply, now), "eval_refusal");
        }
        if (kind == 3) return Apply(router_.OnEvaluate(run_, reply, now), "eval_invalid");
        reply.set_goal_achieved(Pick(2) == 0);
        reply.set_summary("done");
        if (Pick(2) == 0) {
          // A proposed next call: valid, a tool the subtask may not use, or bad arguments; on
          // COMPLETED, FAILED or a goal claim it is dropped.
          const int which = Pick(6);
          const char* tools[] = {"list_files", "read_file", "write_file", "no_such_tool"};
          reply.mutable_next_call()->set_tool(tools[which == 5 ? 3 : Pick(3)]);
          reply.mutable_next_call()->set_args_json(which == 4 ? "[]" : "{}");
        }
        if (kind <= 5) {
          reply.set_status(Eval::NEEDS_MORE_WORK);
          return Apply(router_.OnEvaluate(run_, reply, now), "eval_more");
        }
        reply.set_status(Pick(3) == 0 ? Eval::FAILED : Eval::COMPLETED);
        return Apply(router_.OnEvaluate(run_, reply, now), "eval_done");
      }
      case Effect::Kind::kChildren: Children(effect.children); return;
      case Effect::Kind::kCheckWorkspace:  // only Apply asks for it
      case Effect::Kind::kNone: Fail("kCall with no effect"); return;
    }
  }

  const Table& table_;
  std::mt19937_64 rng_;
  std::map<std::string, int>* coverage_;
  StageRouter router_{RouterOptions()};
  FakeClock clock_;
  rein::v1::RunSpec spec_;
  Run run_;
  int max_iterations_ = 0;
  int budget_ = 0;
  int bound_ = 0;
  int steps_ = 0;
  int finished_events_ = 0;
  int task_counter_ = 0;
  std::set<std::string> planned_;
  std::set<std::string> may_have_run_;     // mutating calls sent with no answer or review since
  std::map<std::string, Child> children_;  // the current group's children, by request_id
  std::string error_;
};

uint64_t EnvOr(const char* name, uint64_t fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::strtoull(value, nullptr, 10) : fallback;
}

TEST(StageRouterRandomTest, HundredThousandRunsKeepTheModelsProperties) {
  const uint64_t seed = EnvOr("REIN_RANDOM_SEED", std::random_device()());
  const uint64_t runs = EnvOr("REIN_RANDOM_RUNS", 100000);
  std::cout << "seed " << seed << " (REIN_RANDOM_SEED=" << seed << " reproduces), " << runs
            << " runs" << std::endl;
  const Table table = LoadTable();
  ASSERT_FALSE(table.empty());
  std::map<std::string, int> coverage;
  for (uint64_t i = 0; i < runs; ++i) {
    RandomRun run(table, seed + i, &coverage);
    std::string error = run.Drive();
    ASSERT_EQ(error, "") << "run " << i << " (REIN_RANDOM_SEED=" << seed + i
                         << " REIN_RANDOM_RUNS=1 reproduces it)";
  }
  // Every row of the table was exercised: a row no run reaches would be a guess.
  if (runs >= 100000) {
    for (const auto& [key, allowed] : table) {
      EXPECT_GT(coverage[absl::StrCat(key.first, " ", key.second)], 0)
          << "no run exercised " << key.first << " " << key.second;
    }
  }
}

}  // namespace
}  // namespace rein
