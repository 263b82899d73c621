// Tests of the JSON log lines: a line about a run names the trace of the call being served.
#include "common/log.h"

#include <stdio.h>
#include <unistd.h>

#include <string>

#include "gtest/gtest.h"
#include "trace/span_context.h"
#include "trace/tracer.h"

namespace rein {
namespace {

// What Log writes to stderr while `write` runs.
template <typename Write>
std::string Captured(Write write) {
  fflush(stderr);
  FILE* file = tmpfile();
  const int saved = dup(STDERR_FILENO);
  dup2(fileno(file), STDERR_FILENO);
  write();
  dup2(saved, STDERR_FILENO);
  close(saved);
  std::string out;
  rewind(file);
  for (int c; (c = fgetc(file)) != EOF;) out.push_back(static_cast<char>(c));
  fclose(file);
  return out;
}

TEST(LogTest, LineAboutARunCarriesTheTraceOfTheCallServed) {
  const std::string trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
  trace::SpanContext context = *trace::ContextFromHex(trace_id, "00f067aa0ba902b7");
  const std::string none = Captured([] { LogInfo("call", {{"run_id", "r1"}}); });
  EXPECT_EQ(none.find("trace_id"), std::string::npos) << none;
  std::string traced, unrelated, own;
  {
    trace::ScopedContext scope(context);
    traced = Captured([] { LogInfo("call", {{"run_id", "r1"}}); });
    unrelated = Captured([] { LogInfo("listening"); });
    own = Captured([] { LogInfo("call", {{"run_id", "r1"}, {"trace_id", "mine"}}); });
  }
  EXPECT_NE(traced.find("\"run_id\":\"r1\",\"trace_id\":\"" + trace_id + "\""), std::string::npos)
      << traced;
  EXPECT_EQ(unrelated.find("trace_id"), std::string::npos) << unrelated;
  EXPECT_EQ(own.find(trace_id), std::string::npos) << own;
  EXPECT_NE(own.find("\"trace_id\":\"mine\""), std::string::npos) << own;
}

}  // namespace
}  // namespace rein
