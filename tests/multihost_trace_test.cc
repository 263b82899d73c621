// One trace per run across hosts: PostgreSQL, two routers, the planner, an executor and an
// OTLP collector each on a test host of its own (network namespaces); the services export to
// the collector's host with OTEL_EXPORTER_OTLP_ENDPOINT. A run pauses, is reviewed on the other
// router, resumes, loses its router to a SIGKILL and is taken over; the spans the collector
// received, decoded with the official protos, are one trace with one tree.
//
// Needs root (network namespaces); run by ./dev test as the `fault` tier.
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "rein/v1/router.grpc.pb.h"
#include "tests/cluster.h"
#include "tests/host_fleet.h"
#include "trace/span_context.h"
#include "trace/testing/otlp_collector.h"

namespace rein::testing {
namespace {

using rein::trace::testing::CollectedSpan;
using rein::trace::testing::ReadDumpedSpans;
using rein::trace::testing::WithOperation;
using RunProto = ::rein::v1::Run;

// Three subtasks, each one command that takes `sleep_seconds`.
std::string Script(double sleep_seconds) {
  return absl::StrCat(R"({
    "plan": [{"reply": {"subtasks": [
      {"id": "s1", "description": "first", "allowedTools": ["run_command"]},
      {"id": "s2", "description": "second", "allowedTools": ["run_command"]},
      {"id": "s3", "description": "third", "allowedTools": ["run_command"]}]}}],
    "decide": [{"reply": {"toolCall": {"tool": "run_command",
                "args": {"shell": "echo ${subtask} >> calls.log; sleep )",
                      sleep_seconds, R"(", "timeout_seconds": 60}}}}],
    "evaluate": [
      {"when": {"subtask": "s3", "action_ok": true},
       "reply": {"status": "COMPLETED", "summary": "${subtask} done", "goalAchieved": true}},
      {"reply": {"status": "COMPLETED", "summary": "${subtask} done"}}]
  })");
}

class MultiHostTraceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root for network namespaces";
  }
  void TearDown() override {
    HostFleet::StopProcess(collector_);  // before its host goes
    unsetenv("OTEL_EXPORTER_OTLP_ENDPOINT");
  }

  // The network, then the collector on its host, then the services exporting to it.
  void Boot(const std::string& script) {
    ASSERT_NO_FATAL_FAILURE(fleet_.StartNetwork());
    const std::string address = fleet_.AddHost("collector", 40);
    ASSERT_FALSE(address.empty());
    dump_dir_ = fleet_.dir() + "/otlp";
    mkdir(dump_dir_.c_str(), 0755);
    collector_ = fleet_.Spawn(
        "collector", "collector",
        {RunfilePath("trace/testing/rein-test-collector"),
         absl::StrCat("--listen=", address, ":4318"), absl::StrCat("--dump_dir=", dump_dir_)});
    const absl::Time until = absl::Now() + absl::Seconds(10);
    while (!absl::StrContains(ReadFile(fleet_.dir() + "/collector.log"), "serving") &&
           absl::Now() < until) {
      absl::SleepFor(absl::Milliseconds(20));
    }
    ASSERT_TRUE(absl::StrContains(ReadFile(fleet_.dir() + "/collector.log"), "serving"))
        << fleet_.Logs();
    // The services inherit the test's environment (ip netns exec keeps it).
    setenv("OTEL_EXPORTER_OTLP_ENDPOINT", absl::StrCat("http://", address, ":4318").c_str(), 1);
    setenv("OTEL_BSP_SCHEDULE_DELAY", "50", 1);
    setenv("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip", 1);
    ASSERT_NO_FATAL_FAILURE(fleet_.StartServices(script));
  }

  // The spans of `trace_id` the collector has received once `done` holds of them (or after
  // `timeout`).
  std::vector<CollectedSpan> WaitForTrace(
      const std::string& trace_id,
      const std::function<bool(const std::vector<CollectedSpan>&)>& done, absl::Duration timeout) {
    const absl::Time until = absl::Now() + timeout;
    while (true) {
      std::vector<CollectedSpan> of_trace;
      for (CollectedSpan& s : ReadDumpedSpans(dump_dir_)) {
        if (s.trace_id_hex() == trace_id) of_trace.push_back(std::move(s));
      }
      if (done(of_trace) || absl::Now() >= until) return of_trace;
      absl::SleepFor(absl::Milliseconds(100));
    }
  }

  RunProto WaitForStage(int router, const std::string& run_id, rein::v1::Stage stage) {
    const absl::Time until = absl::Now() + absl::Seconds(60);
    absl::StatusOr<RunProto> run;
    do {
      run = fleet_.GetRun(router, run_id);
      if (run.ok() && run->state().stage() == stage) return *run;
      absl::SleepFor(absl::Milliseconds(50));
    } while (absl::Now() < until);
    ADD_FAILURE() << "run not " << rein::v1::Stage_Name(stage) << ": "
                  << (run.ok() ? run->state().ShortDebugString() : run.status().ToString());
    return run.ok() ? *run : RunProto();
  }

  HostFleet fleet_{[] {
    HostFleet::Options options;
    options.routers = 2;
    options.executors = 1;
    options.subnet_prefix = "10.232";  // beside multihost_test's hosts
    return options;
  }()};
  std::unique_ptr<Process> collector_;
  std::string dump_dir_;
};

TEST_F(MultiHostTraceTest, PausedReviewedElsewhereKilledAndTakenOverRunIsOneTrace) {
  ASSERT_NO_FATAL_FAILURE(Boot(Script(0.8)));
  fleet_.MakeWorkspace("w");
  rein::v1::RunSpec spec;
  spec.set_goal("append s1, s2 and s3 to calls.log");
  spec.set_workspace("w");
  spec.add_tools("run_command");
  spec.add_pause_points(rein::v1::AFTER_PLAN);
  spec.mutable_limits()->set_max_iterations(30);
  spec.mutable_limits()->mutable_stage_timeout()->set_seconds(10);
  absl::StatusOr<RunProto> started = fleet_.StartRun(0, spec, "trace-req");
  ASSERT_TRUE(started.ok()) << started.status();
  const std::string run_id = started->run_id();
  const rein::v1::RunTrace trace = started->state().trace();
  ASSERT_EQ(trace.trace_id().size(), 32u);

  // Stretch 1 ends at the pause; the review is made on router 1.
  const RunProto paused = WaitForStage(1, run_id, rein::v1::PAUSED);
  ASSERT_EQ(paused.state().stage(), rein::v1::PAUSED) << fleet_.Logs();
  rein::v1::ResumeRunRequest resume;
  resume.set_run_id(run_id);
  resume.set_expected_version(paused.state().version());
  resume.mutable_review()->mutable_approve();
  RunProto resumed;
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
  grpc::Status status = fleet_.router(1)->ResumeRun(&context, resume, &resumed);
  ASSERT_TRUE(status.ok()) << status.error_message();

  // Once a call of the resumed stretch has reached the collector, its driver is SIGKILLed; the
  // other router takes the run over when the lease lapses.
  WaitForTrace(
      trace.trace_id(),
      [&](const std::vector<CollectedSpan>& spans) {
        for (const CollectedSpan* tool : WithOperation(spans, "execute_tool")) {
          if (tool->parent_span_id_hex() != trace.root_span_id()) return true;
        }
        return false;
      },
      absl::Seconds(30));
  absl::StatusOr<RunProto> driving = fleet_.GetRun(1, run_id);
  ASSERT_TRUE(driving.ok()) << driving.status();
  ASSERT_NE(driving->state().stage(), rein::v1::FINISHED) << "the kill should land mid-run";
  const int victim = driving->owner() == "router-0" ? 0 : 1;
  fleet_.KillRouter(victim);
  const int survivor = 1 - victim;
  const RunProto done = WaitForStage(survivor, run_id, rein::v1::FINISHED);
  ASSERT_EQ(done.state().stage(), rein::v1::FINISHED) << fleet_.Logs();
  EXPECT_EQ(done.owner(), absl::StrCat("router-", survivor));
  EXPECT_EQ(done.state().trace().trace_id(), trace.trace_id());
  EXPECT_EQ(done.state().trace().stretches(), 3);

  // Each process exports on its own schedule: the planner's last chat may arrive after the
  // router's last stretch, so the wait covers the run's tokens too.
  const int64_t run_input = done.state().usage().input_tokens();
  const std::vector<CollectedSpan> spans = WaitForTrace(
      trace.trace_id(),
      [run_input](const std::vector<CollectedSpan>& spans) {
        int ended = 0, stretches = 0;
        for (const CollectedSpan* s : WithOperation(spans, "invoke_agent")) {
          ++stretches;
          ended += s->Str("rein.run.stretch_end") == "ended";
        }
        int64_t input = 0;
        for (const CollectedSpan* chat : WithOperation(spans, "chat")) {
          input += chat->Int("gen_ai.usage.input_tokens");
        }
        return ended == 1 && stretches >= 3 && WithOperation(spans, "execute_tool").size() >= 3 &&
               input >= run_input;
      },
      absl::Seconds(30));

  // The three processes, every span exactly once.
  std::set<std::string> services;
  std::map<std::string, const CollectedSpan*> by_id;
  for (const CollectedSpan& s : spans) {
    services.insert(s.service);
    EXPECT_TRUE(by_id.emplace(s.span_id_hex(), &s).second) << "span twice: " << s.span.name();
  }
  EXPECT_EQ(services, (std::set<std::string>{"rein-router", "rein-planner", "rein-executor"}));

  // Three stretches: 1 (the root) to the pause; 2 from the resume, ended by the takeover as
  // interrupted; 3 to the end. 2 and 3 are children of the root, each linked to the one before.
  std::map<int64_t, const CollectedSpan*> stretch;
  for (const CollectedSpan* s : WithOperation(spans, "invoke_agent")) {
    EXPECT_EQ(s->service, "rein-router");
    EXPECT_EQ(s->Str("rein.run.id"), run_id);
    stretch[s->Int("rein.run.stretch")] = s;
  }
  ASSERT_EQ(stretch.size(), 3u) << fleet_.Logs();
  ASSERT_TRUE(stretch.count(1) && stretch.count(2) && stretch.count(3));
  EXPECT_EQ(stretch[1]->span_id_hex(), trace.root_span_id());
  EXPECT_TRUE(stretch[1]->span.parent_span_id().empty());
  EXPECT_EQ(stretch[1]->Str("rein.run.stretch_end"), "paused");
  EXPECT_EQ(stretch[2]->Str("rein.run.stretch_end"), "interrupted");
  EXPECT_EQ(stretch[3]->Str("rein.run.stretch_end"), "ended");
  EXPECT_EQ(stretch[3]->Str("rein.run.outcome"), "GOAL_ACHIEVED");
  for (int n : {2, 3}) {
    SCOPED_TRACE(absl::StrCat("stretch ", n));
    EXPECT_EQ(stretch[n]->parent_span_id_hex(), trace.root_span_id());
    ASSERT_EQ(stretch[n]->span.links_size(), 1);
    EXPECT_EQ(rein::trace::ToHex(stretch[n]->span.links(0).span_id()),
              stretch[n - 1]->span_id_hex());
    EXPECT_LE(stretch[n - 1]->span.end_time_unix_nano(), stretch[n]->span.start_time_unix_nano());
  }

  // One tree: every span but the root has its parent in the trace. Planner stages and tools hang
  // from a stretch, chats from a stage; each stretch carried some of them.
  std::map<std::string, int> under;  // stretch span id -> stages and tools under it
  for (const CollectedSpan& s : spans) {
    if (s.span_id_hex() == trace.root_span_id()) continue;
    auto parent = by_id.find(s.parent_span_id_hex());
    ASSERT_NE(parent, by_id.end()) << s.service << " " << s.span.name() << " has no parent";
    const std::string parent_operation = parent->second->Str("gen_ai.operation.name");
    const std::string operation = s.Str("gen_ai.operation.name");
    if (operation == "chat") {
      EXPECT_EQ(s.service, "rein-planner");
      EXPECT_EQ(parent->second->service, "rein-planner");
    } else if (operation != "invoke_agent") {
      EXPECT_EQ(parent_operation, "invoke_agent") << s.service << " " << s.span.name();
      ++under[s.parent_span_id_hex()];
    }
  }
  for (const auto& [n, s] : stretch) EXPECT_GT(under[s->span_id_hex()], 0) << "stretch " << n;

  // The usage the planner reported covers the run's (a reply lost with the killed router may
  // add to it).
  int64_t input = 0, output = 0;
  for (const CollectedSpan* chat : WithOperation(spans, "chat")) {
    input += chat->Int("gen_ai.usage.input_tokens");
    output += chat->Int("gen_ai.usage.output_tokens");
  }
  EXPECT_GT(done.state().usage().input_tokens(), 0);
  EXPECT_GE(input, done.state().usage().input_tokens());
  EXPECT_GE(output, done.state().usage().output_tokens());
  if (HasFailure()) std::cerr << fleet_.Logs();
}

}  // namespace
}  // namespace rein::testing
