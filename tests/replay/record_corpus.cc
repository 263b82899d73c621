// Re-records the synthetic part of the replay corpus: scripted runs driven through today's
// StageRouter, one file per scenario (a stagnation, a recovery, retries, reviews, a cancel,
// evaluations that carry the next call).
//   bazel run //tests/replay:record_corpus -- $PWD/tests/replay/corpus
// The demo run is recorded from the real services instead (see tests/replay/README.md).
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/proto_time.h"
#include "router_service/stage_router.h"
#include "tests/replay/corpus_file.h"

namespace rein::testing {
namespace {

using rein::v1::DecideResponse;
using rein::v1::EvaluateResponse;
using rein::v1::ExecuteResponse;
using rein::v1::PlanResponse;
using rein::v1::Run;

// What the outside world answers in a scenario. `n` counts the calls of that kind, from 1.
struct World {
  std::function<absl::StatusOr<PlanResponse>(const Run&, int n)> plan;
  std::function<absl::StatusOr<DecideResponse>(const Run&, int n)> decide;
  std::function<absl::StatusOr<ExecuteResponse>(const Run&, int n)> execute;
  std::function<absl::StatusOr<EvaluateResponse>(const Run&, int n)> evaluate;
  // A review for a paused run (nullopt: leave it paused, which ends the recording).
  std::function<std::optional<rein::v1::Review>(const Run&)> review;
  int cancel_after_steps = 0;  // > 0: cancel once this many steps have run
  // With cancel_after_steps: the cancel comes while that step's call is in flight, and the
  // call's reply then ends the run (as the engine does when it cuts the call).
  bool cancel_in_flight = false;
};

rein::v1::ToolSpec Tool(const std::string& name, bool mutating) {
  rein::v1::ToolSpec tool;
  tool.set_name(name);
  tool.set_description(name);
  tool.set_input_schema_json(R"({"type":"object"})");
  tool.set_mutating(mutating);
  tool.set_origin("builtin");
  return tool;
}

rein::v1::SubTask Task(const std::string& id, const std::string& tool) {
  rein::v1::SubTask task;
  task.set_id(id);
  task.set_description(absl::StrCat("do ", id));
  task.add_allowed_tools(tool);
  return task;
}

PlanResponse PlanOf(std::initializer_list<rein::v1::SubTask> tasks, bool done = false) {
  PlanResponse reply;
  reply.set_reasoning(done ? "the goal is achieved" : "split the goal");
  for (const auto& t : tasks) *reply.add_subtasks() = t;
  reply.set_goal_achieved(done);
  reply.set_backend("scripted");
  reply.mutable_usage()->set_input_tokens(100);
  reply.mutable_usage()->set_output_tokens(20);
  return reply;
}

DecideResponse Call(const std::string& tool, const std::string& args) {
  DecideResponse reply;
  reply.set_reasoning("the next step");
  reply.mutable_tool_call()->set_tool(tool);
  reply.mutable_tool_call()->set_args_json(args);
  reply.set_backend("scripted");
  reply.mutable_usage()->set_input_tokens(80);
  reply.mutable_usage()->set_output_tokens(10);
  return reply;
}

ExecuteResponse Output(const std::string& output, bool ok = true) {
  ExecuteResponse reply;
  reply.set_ok(ok);
  reply.set_output(output);
  if (!ok) {
    reply.mutable_error()->set_code("NOT_FOUND");
    reply.mutable_error()->set_message("no such file");
  }
  reply.mutable_duration()->set_nanos(5000000);
  reply.set_executor_id("executor-1");
  return reply;
}

EvaluateResponse Verdict(rein::v1::RunEvent::Evaluation::Status status, bool done = false) {
  EvaluateResponse reply;
  reply.set_reasoning("checked the observation");
  reply.set_status(status);
  reply.set_summary(absl::StrCat("verdict ", status));
  reply.set_goal_achieved(done);
  reply.set_backend("scripted");
  reply.mutable_usage()->set_input_tokens(60);
  reply.mutable_usage()->set_output_tokens(15);
  return reply;
}

// Drives one run through the router with `world`, one simulated second per step.
RecordedRun Record(const std::string& run_id, const rein::v1::RunSpec& spec, World world,
                   std::vector<rein::v1::ToolSpec> tools) {
  StageRouter router;
  RecordedRun out;
  absl::Time now = absl::FromUnixSeconds(1800000000);
  Run& run = out.run;
  auto apply = [&](Transition t) {
    for (auto& e : t.events) {
      e.set_seq(static_cast<int64_t>(out.events.size()) + 1);
      out.events.push_back(e);
    }
    *run.mutable_state() = std::move(t.state);
  };
  apply(router.NewRun(run_id, "", spec, now, &run));
  int plans = 0, decides = 0, executes = 0, evaluates = 0;
  for (int steps = 1; steps < 400; ++steps) {
    now += absl::Seconds(1);
    if (world.cancel_after_steps > 0 && steps == world.cancel_after_steps &&
        !world.cancel_in_flight) {
      if (auto t = router.OnCancel(run, false, "enough", now)) apply(std::move(*t));
      break;
    }
    if (run.state().stage() == rein::v1::PAUSED) {
      std::optional<rein::v1::Review> review = world.review(run);
      if (!review) break;
      absl::StatusOr<Transition> t = router.OnReview(run, *review, run.state().version(), now);
      if (!t.ok()) break;
      apply(std::move(*t));
      continue;
    }
    NextStep step = router.Next(run, now);
    if (step.kind == NextStep::Kind::kCommit) {
      apply(std::move(*step.transition));
      continue;
    }
    if (step.kind != NextStep::Kind::kCall) break;
    if (world.cancel_in_flight && steps == world.cancel_after_steps) {
      if (auto t = router.OnCancel(run, /*call_in_flight=*/true, "enough", now)) apply(*t);
    }
    switch (step.effect.kind) {
      case Effect::Kind::kListTools: {
        rein::v1::ListToolsResponse reply;
        for (const auto& tool : tools) *reply.add_tools() = tool;
        apply(router.OnTools(run, reply, std::nullopt, now));
        break;
      }
      case Effect::Kind::kPlan: apply(router.OnPlan(run, world.plan(run, ++plans), now)); break;
      case Effect::Kind::kDecide:
        apply(router.OnDecide(run, world.decide(run, ++decides), now));
        break;
      case Effect::Kind::kExecute:
        apply(router.OnExecute(run, world.execute(run, ++executes), now));
        break;
      case Effect::Kind::kEvaluate:
        apply(router.OnEvaluate(run, world.evaluate(run, ++evaluates), now));
        break;
      case Effect::Kind::kNone: break;
      case Effect::Kind::kCheckWorkspace:
      case Effect::Kind::kChildren:
        // No world here asks for these; a log that silently stopped short would replay.
        std::fprintf(stderr, "record_corpus: effect %d is not modelled by these worlds\n",
                     static_cast<int>(step.effect.kind));
        std::exit(1);
    }
  }
  *run.mutable_updated_at() = ToProtoTime(now);
  return out;
}

rein::v1::RunSpec Spec(const std::string& goal, std::initializer_list<const char*> tools) {
  rein::v1::RunSpec spec;
  spec.set_goal(goal);
  spec.set_workspace("repo");
  for (const char* t : tools) spec.add_tools(t);
  auto& limits = *spec.mutable_limits();
  limits.set_max_iterations(30);
  limits.mutable_deadline()->set_seconds(600);
  limits.mutable_stage_timeout()->set_seconds(120);
  limits.set_retry_budget(5);
  limits.set_max_consecutive_tool_failures(3);
  limits.set_stagnation_window(4);
  limits.set_on_stagnation(rein::v1::REPLAN_THEN_PAUSE);
  limits.set_action_window(20);
  spec.set_pause_on_notes(true);
  return spec;
}

using Eval = rein::v1::RunEvent::Evaluation;

}  // namespace
}  // namespace rein::testing

int main(int argc, char** argv) {
  using namespace rein::testing;
  if (argc != 2) {
    std::fprintf(stderr, "usage: record_corpus DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  const std::vector<rein::v1::ToolSpec> tools = {
      Tool("list_files", false), Tool("read_file", false), Tool("write_file", true)};
  std::vector<std::pair<std::string, RecordedRun>> corpus;

  {  // Stagnation: the same call and observation again and again; replan once, then pause.
    World w;
    w.plan = [](const Run&, int n) {
      return PlanOf({Task(absl::StrCat("look-", n), "list_files")});
    };
    w.decide = [](const Run&, int) { return Call("list_files", R"({"path":"."})"); };
    w.execute = [](const Run&, int) { return Output("README.md\nmain.py\n"); };
    w.evaluate = [](const Run&, int) { return Verdict(Eval::NEEDS_MORE_WORK); };
    w.review = [](const Run& run) -> std::optional<rein::v1::Review> {
      if (run.state().pause().reason() != rein::v1::STAGNATED) return std::nullopt;
      rein::v1::Review review;
      review.mutable_reject()->set_feedback("stop looping");
      review.mutable_reject()->set_abort(true);
      return review;
    };
    corpus.emplace_back("stagnation",
                        Record("run-stagnation", Spec("find the docs", {"list_files"}), w, tools));
  }
  {  // Recovery: a mutating call gets no reply; approve runs it again; then the goal is met.
    World w;
    w.plan = [](const Run&, int n) {
      return n == 1 ? PlanOf({Task("write", "write_file")}) : PlanOf({}, /*done=*/true);
    };
    w.decide = [](const Run&, int) {
      return Call("write_file", R"({"path":"a.txt","content":"hello"})");
    };
    w.execute = [](const Run&, int n) -> absl::StatusOr<ExecuteResponse> {
      if (n == 1) return absl::UnavailableError("connection reset");
      return Output("wrote 5 bytes");
    };
    w.evaluate = [](const Run&, int) { return Verdict(Eval::COMPLETED, /*done=*/true); };
    w.review = [](const Run& run) -> std::optional<rein::v1::Review> {
      if (run.state().pause().reason() != rein::v1::RECOVERY) return std::nullopt;
      rein::v1::Review review;
      review.mutable_approve();
      return review;
    };
    corpus.emplace_back("recovery",
                        Record("run-recovery", Spec("write a.txt", {"write_file"}), w, tools));
  }
  {  // Retries: an invalid plan (a tool outside the run), a planner error, a failed tool,
     // then a reviewer's edited plan at AFTER_PLAN and an answer to a question.
    World w;
    w.plan = [](const Run&, int n) -> absl::StatusOr<PlanResponse> {
      if (n == 1) return PlanOf({Task("bad", "run_command")});
      if (n == 2) return absl::UnavailableError("model overloaded");
      if (n == 3) return PlanOf({Task("read", "read_file")});
      return PlanOf({}, /*done=*/true);
    };
    w.decide = [](const Run& run, int n) -> absl::StatusOr<DecideResponse> {
      if (n == 1) {
        DecideResponse ask;
        ask.set_human_query("which file?");
        ask.set_backend("scripted");
        return ask;
      }
      if (run.state().human_inputs_size() > 0 && n == 2) {
        return Call("read_file", R"({"path":"missing.md"})");
      }
      return Call("read_file", R"({"path":"README.md"})");
    };
    w.execute = [](const Run&, int n) {
      return n == 1 ? Output("", /*ok=*/false) : Output("# repo\nTODO: docs\n");
    };
    w.evaluate = [](const Run&, int n) {
      return n == 1 ? Verdict(Eval::NEEDS_MORE_WORK) : Verdict(Eval::COMPLETED, /*done=*/true);
    };
    w.review = [](const Run& run) -> std::optional<rein::v1::Review> {
      rein::v1::Review review;
      if (run.state().pause().reason() == rein::v1::NEED_HUMAN) {
        review.mutable_answer()->set_text("README.md");
      } else if (run.state().pause().point() == rein::v1::AFTER_PLAN &&
                 run.state().completed_subtasks_size() == 0 && run.state().subtasks_size() == 1 &&
                 run.state().subtasks(0).id() == "read") {
        *review.mutable_edit_plan()->add_subtasks() = Task("read-readme", "read_file");
      } else {
        review.mutable_approve();
      }
      return review;
    };
    rein::v1::RunSpec spec = Spec("read the readme", {"read_file"});
    spec.add_pause_points(rein::v1::AFTER_PLAN);
    corpus.emplace_back("retries_and_reviews", Record("run-retries", spec, w, tools));
  }
  {  // Max iterations: never done.
    World w;
    w.plan = [](const Run&, int n) {
      return PlanOf({Task(absl::StrCat("step-", n), "read_file")});
    };
    w.decide = [](const Run&, int n) {
      return Call("read_file", absl::StrCat(R"({"path":"f)", n, R"(.txt"})"));
    };
    w.execute = [](const Run&, int n) { return Output(absl::StrCat("content ", n)); };
    w.evaluate = [](const Run&, int) { return Verdict(Eval::COMPLETED); };
    rein::v1::RunSpec spec = Spec("read forever", {"read_file"});
    spec.mutable_limits()->set_max_iterations(6);
    corpus.emplace_back("max_iterations", Record("run-max-iterations", spec, w, tools));
  }
  {  // Cancel while running.
    World w;
    w.plan = [](const Run&, int) { return PlanOf({Task("list", "list_files")}); };
    w.decide = [](const Run&, int) { return Call("list_files", R"({"path":"."})"); };
    w.execute = [](const Run&, int) { return Output("a\nb\n"); };
    w.evaluate = [](const Run&, int) { return Verdict(Eval::NEEDS_MORE_WORK); };
    w.cancel_after_steps = 7;
    corpus.emplace_back("cancel", Record("run-cancel", Spec("list", {"list_files"}), w, tools));
    // The same cancel, asked while the step's call is in flight: recorded as cancel_requested
    // (who and why), then the call's reply ends the run.
    w.cancel_in_flight = true;
    corpus.emplace_back("cancel_in_flight",
                        Record("run-cancel-in-flight", Spec("list", {"list_files"}), w, tools));
  }

  {  // Combined replies: evaluations that also carry the next call (one applied, one a tool
     // the subtask may not use and so dropped, one paused before a mutating tool).
    World w;
    w.plan = [](const Run&, int) {
      rein::v1::SubTask task = Task("fix", "read_file");
      task.add_allowed_tools("write_file");
      return PlanOf({task});
    };
    w.decide = [](const Run&, int) { return Call("read_file", R"({"path":"a.txt"})"); };
    w.execute = [](const Run&, int n) { return Output(absl::StrCat("content ", n)); };
    w.evaluate = [](const Run&, int n) {
      EvaluateResponse reply = Verdict(n == 4 ? Eval::COMPLETED : Eval::NEEDS_MORE_WORK, n == 4);
      if (n == 1) {
        reply.mutable_next_call()->set_tool("read_file");
        reply.mutable_next_call()->set_args_json(R"({"path":"b.txt"})");
      } else if (n == 2) {
        reply.mutable_next_call()->set_tool("list_files");
        reply.mutable_next_call()->set_args_json("{}");
      } else if (n == 3) {
        reply.mutable_next_call()->set_tool("write_file");
        reply.mutable_next_call()->set_args_json(R"({"path":"a.txt","content":"fixed"})");
      }
      return reply;
    };
    w.review = [](const Run& run) -> std::optional<rein::v1::Review> {
      if (run.state().pause().point() != rein::v1::BEFORE_MUTATING_TOOL) return std::nullopt;
      rein::v1::Review review;
      review.mutable_approve();
      return review;
    };
    rein::v1::RunSpec spec = Spec("fix a.txt", {"read_file", "write_file"});
    spec.add_pause_points(rein::v1::BEFORE_MUTATING_TOOL);
    corpus.emplace_back("combined", Record("run-combined", spec, w, tools));
  }

  {  // Plans that also carry the first call of their top subtask: the first applied (no decide
     // request), the second a tool its subtask may not use and so dropped (decide asked), the
     // third with arguments that are not an object (dropped).
    World w;
    w.plan = [](const Run&, int n) {
      rein::v1::PlanResponse reply =
          PlanOf({Task(absl::StrCat("p", n, "-read"), "read_file")}, /*goal=*/n == 3);
      reply.mutable_first_call()->set_tool(n == 2 ? "write_file" : "read_file");
      reply.mutable_first_call()->set_args_json(
          n == 3 ? "[\"c.txt\"]" : absl::StrCat(R"({"path":"f)", n, R"(.txt"})"));
      return reply;
    };
    w.decide = [](const Run&, int n) {
      return Call("read_file", absl::StrCat(R"({"path":"d)", n, R"(.txt"})"));
    };
    w.execute = [](const Run&, int n) { return Output(absl::StrCat("content ", n)); };
    w.evaluate = [](const Run&, int n) { return Verdict(Eval::COMPLETED, n == 3); };
    corpus.emplace_back(
        "plan_first_call",
        Record("run-plan-first-call", Spec("read three files", {"read_file"}), w, tools));
  }

  for (const auto& [name, recorded] : corpus) {
    const std::string path = absl::StrCat(dir, "/", name, ".jsonl");
    std::ofstream(path) << FormatRecordedRun(recorded);
    std::printf("%s: %zu events, ends %s\n", path.c_str(), recorded.events.size(),
                rein::v1::Stage_Name(recorded.run.state().stage()).c_str());
  }
  return 0;
}
