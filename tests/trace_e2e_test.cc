// End to end: one OpenTelemetry trace per run across the router, the planner and the executor,
// received over OTLP/HTTP by a collector on loopback and decoded with the official protos.
#include <signal.h>
#include <stdlib.h>

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/cluster.h"
#include "tests/fleet.h"
#include "tests/repo_cluster.h"
#include "trace/testing/otlp_collector.h"

namespace rein::testing {
namespace {

using rein::trace::testing::CollectedSpan;
using rein::trace::testing::OtlpCollector;
using rein::trace::testing::WithOperation;
using RunMsg = rein::v1::Run;

constexpr char kCallerTraceparent[] = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00";

class TraceEndToEndTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(collector_.Start());
    // The services inherit the test's environment: every span goes to the collector, fast.
    setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector_.endpoint().c_str(), 1);
    setenv("OTEL_BSP_SCHEDULE_DELAY", "50", 1);
    setenv("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip", 1);
    setenv("OTEL_METRIC_EXPORT_INTERVAL", "100", 1);
  }
  void TearDown() override {
    cluster_.reset();
    fleet_.reset();
    unsetenv("OTEL_EXPORTER_OTLP_ENDPOINT");
    collector_.Stop();
  }

  void Boot(const std::string& script) {
    cluster_ = RepoCluster("trace", script, {{"README.md", "# repo\nTODO: write docs\n"}});
    ASSERT_TRUE(cluster_->Start()) << cluster_->Logs();
  }

  rein::v1::RunSpec Spec() { return RepoSpec("inspect the repo", 60); }

  // StartRun with a caller's traceparent in the metadata.
  RunMsg StartWithCaller(const rein::v1::RunSpec& spec) {
    rein::v1::StartRunRequest request;
    *request.mutable_spec() = spec;
    grpc::ClientContext context;
    context.AddMetadata("traceparent", kCallerTraceparent);
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    RunMsg run;
    grpc::Status status = cluster_->router()->StartRun(&context, request, &run);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return run;
  }

  // The spans of `trace_id` once the run's last stretch has arrived ended.
  // `more` says what else must have arrived (each service exports on its own schedule).
  std::vector<CollectedSpan> SpansOfRun(
      const std::string& trace_id, int stretches,
      const std::function<bool(const std::vector<CollectedSpan>&)>& more) {
    auto of_trace = [&](const std::vector<CollectedSpan>& all) {
      std::vector<CollectedSpan> out;
      for (const CollectedSpan& s : all) {
        if (s.trace_id_hex() == trace_id) out.push_back(s);
      }
      return out;
    };
    auto done = [&](const std::vector<CollectedSpan>& all) {
      int ended = 0;
      for (const CollectedSpan& s : of_trace(all)) {
        ended += s.Str("gen_ai.operation.name") == "invoke_agent" &&
                 s.Str("rein.run.stretch_end") == "ended";
      }
      int seen = 0;
      for (const CollectedSpan& s : of_trace(all)) {
        seen += s.Str("gen_ai.operation.name") == "invoke_agent";
      }
      return ended == 1 && seen >= stretches && more(of_trace(all));
    };
    return of_trace(collector_.WaitFor(done, absl::Seconds(30)));
  }

  // The two stretches of a run whose router was killed during its first: the first, exported
  // by the router that drove the run next as interrupted, and the one that finished the run.
  void CheckInterruptedThenResumed(const std::vector<CollectedSpan>& spans,
                                   const rein::v1::RunTrace& trace, bool caller_link,
                                   const CollectedSpan** lost, const CollectedSpan** resumed) {
    std::vector<const CollectedSpan*> stretches;
    for (const CollectedSpan& s : spans) {
      if (s.Str("gen_ai.operation.name") == "invoke_agent") stretches.push_back(&s);
    }
    ASSERT_EQ(stretches.size(), 2u);
    const bool first_lost = stretches[0]->Str("rein.run.stretch_end") == "interrupted";
    *lost = first_lost ? stretches[0] : stretches[1];
    *resumed = first_lost ? stretches[1] : stretches[0];
    const CollectedSpan& l = **lost;
    const CollectedSpan& r = **resumed;
    EXPECT_EQ(l.Str("rein.run.stretch_end"), "interrupted");
    EXPECT_EQ(l.service, "rein-router");
    EXPECT_EQ(l.span_id_hex(), trace.root_span_id());
    EXPECT_TRUE(l.span.parent_span_id().empty());
    EXPECT_EQ(l.span.status().code(), opentelemetry::proto::trace::v1::Status::STATUS_CODE_ERROR);
    EXPECT_EQ(l.Int("rein.run.stretch"), 1);
    ASSERT_EQ(l.span.links_size(), caller_link ? 1 : 0);  // the caller, as the first stretch had
    if (caller_link) {
      EXPECT_EQ(rein::trace::ToHex(l.span.links(0).trace_id()), "0af7651916cd43dd8448eb211c80319c");
    }
    EXPECT_LT(l.span.start_time_unix_nano(), l.span.end_time_unix_nano());
    EXPECT_LE(l.span.end_time_unix_nano(), r.span.start_time_unix_nano());
    EXPECT_EQ(r.Str("rein.run.stretch_end"), "ended");
    EXPECT_EQ(r.parent_span_id_hex(), trace.root_span_id());
    EXPECT_GE(r.Int("rein.run.stretch"), 2);
    ASSERT_EQ(r.span.links_size(), 1);
    EXPECT_EQ(rein::trace::ToHex(r.span.links(0).span_id()), trace.root_span_id());
  }

  // Waits until the executor has sent a span of `trace_id`: the run's first stretch has
  // carried calls.
  void AwaitExecutorSpan(const std::string& trace_id) {
    collector_.WaitFor(
        [&](const std::vector<CollectedSpan>& all) {
          for (const CollectedSpan& s : all) {
            if (s.trace_id_hex() == trace_id && s.service == "rein-executor") return true;
          }
          return false;
        },
        absl::Seconds(30));
  }

  static bool ThreeTools(const std::vector<CollectedSpan>& of_run) {
    int tools = 0;
    for (const CollectedSpan& s : of_run) tools += s.Str("gen_ai.operation.name") == "execute_tool";
    return tools >= 3;
  }

  OtlpCollector collector_;
  std::unique_ptr<Cluster> cluster_;
  std::unique_ptr<Fleet> fleet_;
};

TEST_F(TraceEndToEndTest, PausedRunIsOneTraceAcrossTheThreeServices) {
  Boot(ThreeStepScript(0));
  rein::v1::RunSpec spec = Spec();
  spec.add_pause_points(rein::v1::AFTER_PLAN);
  RunMsg run = StartWithCaller(spec);
  const rein::v1::RunTrace trace = run.state().trace();
  ASSERT_EQ(trace.trace_id().size(), 32u);
  EXPECT_EQ(trace.link_trace_id(), "0af7651916cd43dd8448eb211c80319c");  // the caller: a link
  absl::StatusOr<RunMsg> paused =
      cluster_->WaitForStage(run.run_id(), rein::v1::PAUSED, absl::Seconds(30));
  ASSERT_TRUE(paused.ok() && paused->state().stage() == rein::v1::PAUSED) << cluster_->Logs();
  ASSERT_TRUE(cluster_->Approve(*paused).ok());
  absl::StatusOr<RunMsg> done =
      cluster_->WaitForStage(run.run_id(), rein::v1::FINISHED, absl::Seconds(30));
  ASSERT_TRUE(done.ok() && done->state().stage() == rein::v1::FINISHED) << cluster_->Logs();
  EXPECT_EQ(done->state().trace().trace_id(), trace.trace_id());  // GetRun names it

  const int64_t run_input = done->state().usage().input_tokens();
  std::vector<CollectedSpan> spans =
      SpansOfRun(trace.trace_id(), 2, [run_input](const std::vector<CollectedSpan>& of_run) {
        int64_t input = 0;
        std::set<std::string> tools;  // by name: the workspace check's file_info comes too
        for (const CollectedSpan& s : of_run) {
          if (s.Str("gen_ai.operation.name") == "chat") input += s.Int("gen_ai.usage.input_tokens");
          if (s.Str("gen_ai.operation.name") == "execute_tool") {
            tools.insert(s.Str("gen_ai.tool.name"));
          }
        }
        return input >= run_input && tools.count("list_files") && tools.count("read_file") &&
               tools.count("search_text");
      });
  std::set<std::string> services;
  std::map<std::string, const CollectedSpan*> by_id;
  for (const CollectedSpan& s : spans) {
    services.insert(s.service);
    by_id[s.span_id_hex()] = &s;
  }
  EXPECT_EQ(services, (std::set<std::string>{"rein-router", "rein-planner", "rein-executor"}));

  // Two stretches: the first is the root (its id chosen at StartRun) with the caller as a link;
  // the one after the pause resumes under it, linked to the first.
  std::vector<const CollectedSpan*> stretches = WithOperation(spans, "invoke_agent");
  ASSERT_EQ(stretches.size(), 2u);
  const CollectedSpan* first =
      stretches[0]->Int("rein.run.stretch") == 1 ? stretches[0] : stretches[1];
  const CollectedSpan* second = first == stretches[0] ? stretches[1] : stretches[0];
  EXPECT_EQ(first->span_id_hex(), trace.root_span_id());
  EXPECT_TRUE(first->span.parent_span_id().empty());
  EXPECT_EQ(first->span.name(), "invoke_agent rein");
  EXPECT_EQ(first->Str("gen_ai.agent.name"), "rein");
  EXPECT_EQ(first->Str("rein.run.id"), run.run_id());
  EXPECT_EQ(first->Str("rein.run.pause_reason"), "PAUSE_POINT");
  ASSERT_EQ(first->span.links_size(), 1);
  EXPECT_EQ(rein::trace::ToHex(first->span.links(0).trace_id()),
            "0af7651916cd43dd8448eb211c80319c");
  EXPECT_EQ(second->parent_span_id_hex(), trace.root_span_id());
  ASSERT_EQ(second->span.links_size(), 1);
  EXPECT_EQ(rein::trace::ToHex(second->span.links(0).span_id()), first->span_id_hex());
  EXPECT_EQ(second->Str("rein.run.outcome"), "GOAL_ACHIEVED");
  EXPECT_GT(second->Int("rein.router.commits"), 0);

  // Planner: a stage span under a stretch, its chat span under it, with the usage the run
  // counted. Executor: execute_tool under a stretch.
  rein::v1::Usage sum;
  std::vector<const CollectedSpan*> chats = WithOperation(spans, "chat");
  ASSERT_FALSE(chats.empty());
  for (const CollectedSpan* chat : chats) {
    EXPECT_EQ(chat->service, "rein-planner");
    EXPECT_EQ(chat->Str("gen_ai.system"), "rein.scripted");
    EXPECT_TRUE(chat->Has("gen_ai.request.model"));
    const CollectedSpan* stage = by_id[chat->parent_span_id_hex()];
    ASSERT_NE(stage, nullptr);
    EXPECT_TRUE(stage->span.name() == "plan" || stage->span.name() == "decide" ||
                stage->span.name() == "evaluate")
        << stage->span.name();
    const CollectedSpan* stretch = by_id[stage->parent_span_id_hex()];
    ASSERT_NE(stretch, nullptr);
    EXPECT_EQ(stretch->Str("gen_ai.operation.name"), "invoke_agent");
    sum.set_input_tokens(sum.input_tokens() + chat->Int("gen_ai.usage.input_tokens"));
    sum.set_output_tokens(sum.output_tokens() + chat->Int("gen_ai.usage.output_tokens"));
    sum.set_cache_read_input_tokens(sum.cache_read_input_tokens() +
                                    chat->Int("gen_ai.usage.cache_read.input_tokens"));
    sum.set_cache_creation_input_tokens(sum.cache_creation_input_tokens() +
                                        chat->Int("gen_ai.usage.cache_creation.input_tokens"));
  }
  EXPECT_EQ(sum.SerializeAsString(), done->state().usage().SerializeAsString())
      << sum.DebugString() << " vs " << done->state().usage().DebugString() << " in "
      << chats.size() << " chat spans of " << spans.size()
      << "; all: " << collector_.Spans().size();
  std::vector<const CollectedSpan*> tools = WithOperation(spans, "execute_tool");
  std::set<std::string> tool_names;
  for (const CollectedSpan* tool : tools) {
    tool_names.insert(tool->Str("gen_ai.tool.name"));
    EXPECT_EQ(tool->service, "rein-executor");
    EXPECT_FALSE(tool->Str("gen_ai.tool.call.id").empty());
    EXPECT_TRUE(tool->Has("rein.tool.mutating"));
    EXPECT_TRUE(tool->Has("rein.tool.replayed"));
    EXPECT_FALSE(tool->Has("gen_ai.tool.call.arguments"));  // content is opt-in
    const CollectedSpan* stretch = by_id[tool->parent_span_id_hex()];
    ASSERT_NE(stretch, nullptr);
    EXPECT_EQ(stretch->Str("gen_ai.operation.name"), "invoke_agent");
  }
  EXPECT_TRUE(tool_names.count("list_files") && tool_names.count("read_file") &&
              tool_names.count("search_text"));
}

TEST_F(TraceEndToEndTest, RouterKilledAndRestartedContinuesTheSameTrace) {
  Boot(ThreeStepScript(400));  // slow decisions: the kill lands mid-run
  RunMsg run = StartWithCaller(Spec());
  const std::string trace_id = run.state().trace().trace_id();
  AwaitExecutorSpan(trace_id);
  cluster_->KillRouter(SIGKILL);
  ASSERT_TRUE(cluster_->StartRouter()) << cluster_->Logs();
  absl::StatusOr<RunMsg> done =
      cluster_->WaitForStage(run.run_id(), rein::v1::FINISHED, absl::Seconds(60));
  ASSERT_TRUE(done.ok() && done->state().stage() == rein::v1::FINISHED) << cluster_->Logs();
  EXPECT_EQ(done->state().trace().trace_id(), trace_id);
  EXPECT_GE(done->state().trace().stretches(), 2);

  std::vector<CollectedSpan> spans = SpansOfRun(trace_id, 2, ThreeTools);
  // The killed router's open stretch (the root) is exported by the restarted router, ended at
  // the restart as interrupted; the restarted router's stretch is in the same trace, under the
  // root, linked to it.
  const CollectedSpan* lost = nullptr;
  const CollectedSpan* resumed = nullptr;
  CheckInterruptedThenResumed(spans, run.state().trace(), /*caller_link=*/true, &lost, &resumed);
  ASSERT_TRUE(lost != nullptr && resumed != nullptr);
  std::vector<const CollectedSpan*> stretches;
  stretches = {resumed};
  // The planner's and the executor's spans from before the kill (under the interrupted
  // stretch) and after (under the new one) share the trace id.
  int before = 0, after = 0;
  for (const CollectedSpan& s : spans) {
    const bool under_stretch = s.span.name() == "plan" || s.span.name() == "decide" ||
                               s.span.name() == "evaluate" ||
                               s.Str("gen_ai.operation.name") == "execute_tool";
    if (!under_stretch) continue;
    if (s.parent_span_id_hex() == resumed->span_id_hex()) {
      ++after;
    } else if (s.parent_span_id_hex() == lost->span_id_hex()) {
      ++before;
    }
  }
  EXPECT_GT(before, 0);
  EXPECT_GT(after, 0);
}

TEST_F(TraceEndToEndTest, TakeoverByAnotherRouterContinuesTheSameTrace) {
  // Two routers on one PostgreSQL database; the one driving the run is SIGKILLed, the other
  // takes the run over when its lease lapses.
  const std::string base = getenv("TEST_TMPDIR") ? getenv("TEST_TMPDIR") : "/tmp";
  Fleet::Options options;
  options.dir = absl::StrCat(base, "/trace-takeover");
  mkdir(options.dir.c_str(), 0755);
  options.routers = 2;
  options.script_json = ThreeStepScript(400);
  fleet_ = std::make_unique<Fleet>(options);
  ASSERT_TRUE(fleet_->Start()) << fleet_->Logs();
  absl::StatusOr<RunMsg> run = fleet_->StartRun(0, Spec());
  ASSERT_TRUE(run.ok()) << run.status();
  ASSERT_EQ(run->owner(), fleet_->router_id(0));
  const rein::v1::RunTrace trace = run->state().trace();
  AwaitExecutorSpan(trace.trace_id());
  fleet_->router(0)->Kill(SIGKILL);
  absl::StatusOr<RunMsg> done =
      fleet_->WaitForStage(1, run->run_id(), rein::v1::FINISHED, absl::Seconds(90));
  ASSERT_TRUE(done.ok() && done->state().stage() == rein::v1::FINISHED) << fleet_->Logs();
  EXPECT_EQ(done->owner(), fleet_->router_id(1));
  EXPECT_GT(done->lease_epoch(), 1);
  EXPECT_EQ(done->state().trace().trace_id(), trace.trace_id());

  std::vector<CollectedSpan> spans = SpansOfRun(trace.trace_id(), 2, ThreeTools);
  const CollectedSpan* lost = nullptr;
  const CollectedSpan* resumed = nullptr;
  CheckInterruptedThenResumed(spans, trace, /*caller_link=*/false, &lost, &resumed);
  ASSERT_TRUE(lost != nullptr && resumed != nullptr) << fleet_->Logs();
  // The planner's and the executor's spans after the takeover are under the new stretch.
  int after = 0;
  for (const CollectedSpan& s : spans) after += s.parent_span_id_hex() == resumed->span_id_hex();
  EXPECT_GT(after, 0);
}

TEST_F(TraceEndToEndTest, ForkIsANewTraceLinkedToItsSource) {
  Boot(ThreeStepScript(0));
  RunMsg source = StartWithCaller(Spec());
  absl::StatusOr<RunMsg> ended =
      cluster_->WaitForStage(source.run_id(), rein::v1::FINISHED, absl::Seconds(30));
  ASSERT_TRUE(ended.ok() && ended->state().stage() == rein::v1::FINISHED) << cluster_->Logs();
  const rein::v1::RunTrace from = ended->state().trace();

  rein::v1::ForkRunRequest request;
  request.set_run_id(source.run_id());
  request.set_iteration(2);
  RunMsg fork;
  grpc::ClientContext context;
  grpc::Status status = cluster_->router()->ForkRun(&context, request, &fork);
  ASSERT_TRUE(status.ok()) << status.error_message() << cluster_->Logs();
  const rein::v1::RunTrace trace = fork.state().trace();
  EXPECT_NE(trace.trace_id(), from.trace_id());
  EXPECT_EQ(trace.stretches(), 0);
  EXPECT_EQ(trace.link_trace_id(), from.trace_id());
  EXPECT_EQ(trace.link_span_id(), from.last_stretch_span_id());
  absl::StatusOr<RunMsg> fork_ended =
      cluster_->WaitForStage(fork.run_id(), rein::v1::FINISHED, absl::Seconds(30));
  ASSERT_TRUE(fork_ended.ok()) << fork_ended.status();

  std::vector<CollectedSpan> spans =
      SpansOfRun(trace.trace_id(), 1, [](const std::vector<CollectedSpan>&) { return true; });
  std::vector<const CollectedSpan*> stretches = WithOperation(spans, "invoke_agent");
  ASSERT_EQ(stretches.size(), 1u);
  EXPECT_EQ(stretches[0]->span_id_hex(), trace.root_span_id());
  EXPECT_TRUE(stretches[0]->span.parent_span_id().empty());
  EXPECT_EQ(stretches[0]->Str("rein.run.id"), fork.run_id());
  ASSERT_EQ(stretches[0]->span.links_size(), 1);
  EXPECT_EQ(rein::trace::ToHex(stretches[0]->span.links(0).trace_id()), from.trace_id());
  EXPECT_EQ(rein::trace::ToHex(stretches[0]->span.links(0).span_id()), from.last_stretch_span_id());
  // The source's trace holds none of the fork's spans.
  for (const CollectedSpan& s : collector_.Spans()) {
    if (s.trace_id_hex() == from.trace_id()) {
      EXPECT_NE(s.Str("rein.run.id"), fork.run_id());
    }
  }
}

using opentelemetry::proto::collector::metrics::v1::ExportMetricsServiceRequest;
using opentelemetry::proto::metrics::v1::HistogramDataPoint;

// The newest point of each series of `metric` that `service` sent, by attributes ("k=v;...").
// The points are cumulative and each service sends from one thread, so the last one received
// holds the series' totals.
std::map<std::string, HistogramDataPoint> Latest(
    const std::vector<ExportMetricsServiceRequest>& requests, const std::string& service,
    const std::string& metric, std::string* unit = nullptr) {
  std::map<std::string, HistogramDataPoint> out;
  for (const ExportMetricsServiceRequest& request : requests) {
    for (const auto& rm : request.resource_metrics()) {
      bool ours = false;
      for (const auto& kv : rm.resource().attributes()) {
        ours |= kv.key() == "service.name" && kv.value().string_value() == service;
      }
      if (!ours) continue;
      for (const auto& sm : rm.scope_metrics()) {
        for (const auto& m : sm.metrics()) {
          if (m.name() != metric) continue;
          if (unit != nullptr) *unit = m.unit();
          EXPECT_EQ(m.histogram().aggregation_temporality(),
                    opentelemetry::proto::metrics::v1::AGGREGATION_TEMPORALITY_CUMULATIVE);
          for (const HistogramDataPoint& point : m.histogram().data_points()) {
            std::string key;
            for (const auto& kv : point.attributes()) {
              absl::StrAppend(&key, kv.key(), "=", kv.value().string_value(), ";");
            }
            out[key] = point;
          }
        }
      }
    }
  }
  return out;
}

// Sum and count of the series whose attributes contain `part`.
std::pair<double, uint64_t> Total(const std::map<std::string, HistogramDataPoint>& points,
                                  const std::string& part) {
  std::pair<double, uint64_t> total{0, 0};
  for (const auto& [key, point] : points) {
    if (key.find(part) == std::string::npos) continue;
    total.first += point.sum();
    total.second += point.count();
  }
  return total;
}

TEST_F(TraceEndToEndTest, GenAiMetricsOverOtlpMatchTheRunsUsageAndCalls) {
  Boot(ThreeStepScript(0));
  RunMsg run = StartWithCaller(Spec());
  absl::StatusOr<RunMsg> done =
      cluster_->WaitForStage(run.run_id(), rein::v1::FINISHED, absl::Seconds(30));
  ASSERT_TRUE(done.ok() && done->state().stage() == rein::v1::FINISHED) << cluster_->Logs();
  const rein::v1::Usage& usage = done->state().usage();
  const int64_t input =
      usage.input_tokens() + usage.cache_read_input_tokens() + usage.cache_creation_input_tokens();
  ASSERT_GT(input, 0);
  // The run's model requests and tool calls as its trace has them: the metrics must count as
  // many (the planner serves this run only; the three tools its script calls, by name; the
  // router's workspace checks call file_info outside runs too). Spans and metrics arrive on
  // their own schedules (metrics every 100 ms here): wait until the token sums are the run's
  // usage and the counts agree.
  const std::string trace_id = done->state().trace().trace_id();
  size_t chats = 0;
  std::map<std::string, uint64_t> tools;
  auto count_spans = [&] {
    chats = 0;
    tools.clear();
    std::vector<CollectedSpan> spans = collector_.Spans();
    for (const CollectedSpan& s : spans) {
      if (s.trace_id_hex() != trace_id) continue;
      chats += s.Str("gen_ai.operation.name") == "chat";
      if (s.Str("gen_ai.operation.name") == "execute_tool" &&
          s.Str("gen_ai.tool.name") != "file_info") {
        ++tools[s.Str("gen_ai.tool.name")];
      }
    }
  };
  auto tools_match = [&](const std::map<std::string, HistogramDataPoint>& executor) {
    for (const auto& [name, count] : tools) {
      if (Total(executor, absl::StrCat("gen_ai.tool.name=", name, ";")).second != count) {
        return false;
      }
    }
    return tools.size() == 3;
  };
  auto matches = [&](const std::vector<ExportMetricsServiceRequest>& received) {
    count_spans();
    const auto tokens = Latest(received, "rein-planner", "gen_ai.client.token.usage");
    const auto planner = Latest(received, "rein-planner", "gen_ai.client.operation.duration");
    const auto executor = Latest(received, "rein-executor", "gen_ai.client.operation.duration");
    return Total(tokens, "gen_ai.token.type=input;").first == input &&
           Total(tokens, "gen_ai.token.type=output;").first == usage.output_tokens() &&
           Total(planner, "gen_ai.operation.name=chat;").second == chats && tools_match(executor);
  };
  const absl::Time until = absl::Now() + absl::Seconds(30);
  while (!matches(collector_.Metrics()) && absl::Now() < until) {
    absl::SleepFor(absl::Milliseconds(50));
  }
  const std::vector<ExportMetricsServiceRequest> received = collector_.Metrics();
  count_spans();
  ASSERT_GT(chats, 0u);
  ASSERT_EQ(tools.size(), 3u);
  std::string token_unit, duration_unit;
  const auto tokens = Latest(received, "rein-planner", "gen_ai.client.token.usage", &token_unit);
  const auto planner =
      Latest(received, "rein-planner", "gen_ai.client.operation.duration", &duration_unit);
  const auto executor = Latest(received, "rein-executor", "gen_ai.client.operation.duration");
  EXPECT_EQ(Total(tokens, "gen_ai.token.type=input;").first, input);
  EXPECT_EQ(Total(tokens, "gen_ai.token.type=output;").first, usage.output_tokens());
  EXPECT_EQ(Total(tokens, "gen_ai.token.type=output;").second, chats);  // one per request
  EXPECT_EQ(Total(planner, "gen_ai.operation.name=chat;").second, chats);
  for (const auto& [name, count] : tools) {
    EXPECT_EQ(Total(executor, absl::StrCat("gen_ai.tool.name=", name, ";")).second, count) << name;
  }
  EXPECT_EQ(Total(executor, "gen_ai.tool.name=read_file;").second, 1u);
  for (const auto& [key, point] : executor) {
    EXPECT_TRUE(absl::StrContains(key, "gen_ai.operation.name=execute_tool;")) << key;
  }
  EXPECT_EQ(token_unit, "{token}");
  EXPECT_EQ(duration_unit, "s");
  // The conventions' bucket bounds.
  ASSERT_FALSE(tokens.empty());
  const HistogramDataPoint& point = tokens.begin()->second;
  ASSERT_EQ(point.explicit_bounds_size(), 14);
  EXPECT_EQ(point.explicit_bounds(0), 1);
  EXPECT_EQ(point.explicit_bounds(13), 67108864);
  ASSERT_FALSE(executor.empty());
  EXPECT_EQ(executor.begin()->second.explicit_bounds(0), 0.01);
  EXPECT_EQ(executor.begin()->second.explicit_bounds(13), 81.92);
  EXPECT_EQ(Latest(received, "rein-router", "gen_ai.client.operation.duration").size(), 0u);
}

}  // namespace
}  // namespace rein::testing
