// Tests of the planner's and the executor's spans: names, parents and GenAI attributes.
#include "trace/service_spans.h"

#include "gtest/gtest.h"
#include "trace/testing/recording_exporter.h"

namespace rein::trace {
namespace {

using testing::RecordingExporter;

const AttributeValue* Find(const SpanData& span, const std::string& key) {
  for (const auto& [k, v] : span.attributes) {
    if (k == key) return &v;
  }
  return nullptr;
}

std::string Str(const SpanData& span, const std::string& key) {
  const AttributeValue* v = Find(span, key);
  return v == nullptr ? "<absent>" : std::get<std::string>(*v);
}

int64_t Int(const SpanData& span, const std::string& key) {
  const AttributeValue* v = Find(span, key);
  return v == nullptr ? -1 : std::get<int64_t>(*v);
}

rein::v1::Usage SomeUsage() {
  rein::v1::Usage usage;
  usage.set_input_tokens(10);
  usage.set_output_tokens(20);
  usage.set_cache_read_input_tokens(30);
  usage.set_cache_creation_input_tokens(40);
  return usage;
}

TEST(ServiceSpansTest, PlannerCallIsAStageWithAChatChild) {
  RecordingExporter exporter;
  Tracer tracer(&exporter, Tracer::Options());
  SpanContext parent = *ContextFromHex("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7");
  {
    PlannerCallSpans spans(tracer, "plan", "r1", "anthropic:claude-x", "", parent);
    ASSERT_NE(CurrentSpan(), nullptr);
    CurrentSpan()->AddEvent("rein.model.retry");  // what a model client does
    spans.Finish(SomeUsage(), "anthropic:claude-x", absl::OkStatus());
  }
  EXPECT_EQ(CurrentSpan(), nullptr);
  ASSERT_EQ(exporter.spans.size(), 2u);
  const SpanData& chat = exporter.spans[0];
  const SpanData& stage = exporter.spans[1];
  EXPECT_EQ(stage.name, "plan");
  EXPECT_EQ(stage.kind, SpanKind::kServer);
  EXPECT_EQ(stage.parent_span_id, parent.span_id);
  EXPECT_EQ(chat.name, "chat claude-x");
  EXPECT_EQ(chat.parent_span_id, stage.context.span_id);
  EXPECT_EQ(Str(chat, "gen_ai.operation.name"), "chat");
  EXPECT_EQ(Str(chat, "gen_ai.system"), "anthropic");  // v1.36 by default
  EXPECT_EQ(Str(chat, "gen_ai.provider.name"), "<absent>");
  EXPECT_EQ(Str(chat, "gen_ai.request.model"), "claude-x");
  EXPECT_EQ(Str(chat, "gen_ai.response.model"), "claude-x");
  EXPECT_EQ(Int(chat, "gen_ai.usage.input_tokens"), 10);
  EXPECT_EQ(Int(chat, "gen_ai.usage.output_tokens"), 20);
  EXPECT_EQ(Int(chat, "gen_ai.usage.cache_read.input_tokens"), 30);
  EXPECT_EQ(Int(chat, "gen_ai.usage.cache_creation.input_tokens"), 40);
  ASSERT_EQ(chat.events.size(), 1u);
  EXPECT_EQ(chat.status, StatusCode::kOk);
}

TEST(ServiceSpansTest, OptInSwitchesToTheNewestProviderName) {
  RecordingExporter exporter;
  Tracer::Options options;
  options.genai_latest = true;
  Tracer tracer(&exporter, options);
  PlannerCallSpans spans(tracer, "decide", "r1", "anthropic:claude-x", "claude-y", SpanContext());
  spans.Finish(rein::v1::Usage(), "", absl::UnavailableError("overloaded"));
  ASSERT_EQ(exporter.spans.size(), 2u);
  EXPECT_EQ(Str(exporter.spans[0], "gen_ai.provider.name"), "anthropic");
  EXPECT_EQ(Str(exporter.spans[0], "gen_ai.system"), "<absent>");
  EXPECT_EQ(Str(exporter.spans[0], "gen_ai.request.model"), "claude-y");
  EXPECT_EQ(Str(exporter.spans[0], "error.type"), "UNAVAILABLE");
  EXPECT_EQ(exporter.spans[1].status, StatusCode::kError);
}

TEST(ServiceSpansTest, ExecuteToolSpanKeepsContentOutUnlessCaptured) {
  RecordingExporter exporter;
  Tracer tracer(&exporter, Tracer::Options());
  rein::v1::ExecuteRequest request;
  request.set_tool("write_file");
  request.set_call_id("c1");
  request.set_run_id("r1");
  request.set_args_json(R"({"path":"a"})");
  rein::v1::ExecuteResponse response;
  response.set_ok(true);
  response.set_replayed(true);
  response.set_output("done");
  response.mutable_duration()->set_nanos(5000000);
  for (bool capture : {false, true}) {
    Span span = StartExecuteToolSpan(tracer, SpanContext(), request, /*mutating=*/true);
    FinishExecuteToolSpan(span, request, response, absl::OkStatus(), capture);
  }
  ASSERT_EQ(exporter.spans.size(), 2u);
  const SpanData& plain = exporter.spans[0];
  EXPECT_EQ(plain.name, "execute_tool write_file");
  EXPECT_EQ(Str(plain, "gen_ai.tool.name"), "write_file");
  EXPECT_EQ(Str(plain, "gen_ai.tool.call.id"), "c1");
  EXPECT_TRUE(std::get<bool>(*Find(plain, "rein.tool.mutating")));
  EXPECT_TRUE(std::get<bool>(*Find(plain, "rein.tool.replayed")));
  EXPECT_DOUBLE_EQ(std::get<double>(*Find(plain, "rein.tool.duration_ms")), 5.0);
  EXPECT_EQ(Find(plain, "gen_ai.tool.call.arguments"), nullptr);
  EXPECT_EQ(Str(exporter.spans[1], "gen_ai.tool.call.arguments"), R"({"path":"a"})");
  EXPECT_EQ(Str(exporter.spans[1], "gen_ai.tool.call.result"), "done");
}

TEST(ServiceSpansTest, OffTracerRecordsNothing) {
  Tracer off;
  PlannerCallSpans spans(off, "plan", "r1", "scripted", "", SpanContext());
  EXPECT_EQ(CurrentSpan(), nullptr);
  spans.Finish(SomeUsage(), "scripted", absl::OkStatus());
  rein::v1::ExecuteRequest request;
  Span span = StartExecuteToolSpan(off, SpanContext(), request, false);
  EXPECT_FALSE(span.recording());
}

// A tool's or the planner's error message may quote model-written arguments: without content
// capture a span's status carries the error code only.
TEST(ServiceSpansTest, ErrorMessagesAreRecordedOnlyWithContentCapture) {
  constexpr char kMarker[] = "SECRET-ARG-7f3a";
  for (bool capture : {false, true}) {
    RecordingExporter exporter;
    Tracer::Options options;
    options.capture_content = capture;
    Tracer tracer(&exporter, options);
    rein::v1::ExecuteRequest request;
    request.set_tool("write_file");
    rein::v1::ExecuteResponse failed;
    failed.set_ok(false);
    failed.mutable_error()->set_code("NOT_FOUND");
    failed.mutable_error()->set_message(std::string("no such file: ") + kMarker);
    Span tool = StartExecuteToolSpan(tracer, SpanContext(), request, /*mutating=*/true);
    FinishExecuteToolSpan(tool, request, failed, absl::OkStatus(), capture);
    Span broken = StartExecuteToolSpan(tracer, SpanContext(), request, /*mutating=*/true);
    FinishExecuteToolSpan(broken, request, rein::v1::ExecuteResponse(),
                          absl::InvalidArgumentError(std::string("args_json: ") + kMarker),
                          capture);
    {
      PlannerCallSpans planner(tracer, "decide", "r1", "anthropic:claude", "", SpanContext());
      planner.Finish(rein::v1::Usage(), "",
                     absl::InvalidArgumentError(std::string("reply: ") + kMarker));
    }
    ASSERT_EQ(exporter.spans.size(), 4u);
    for (const SpanData& span : exporter.spans) {
      EXPECT_EQ(span.status, StatusCode::kError) << span.name;
      EXPECT_EQ(span.status_message.find(kMarker) != std::string::npos, capture)
          << span.name << ": " << span.status_message;
    }
    if (!capture) {
      EXPECT_EQ(exporter.spans[0].status_message, "NOT_FOUND");
      EXPECT_EQ(exporter.spans[1].status_message, "INVALID_ARGUMENT");
    }
  }
}

}  // namespace
}  // namespace rein::trace
