// Tests of the planner's backend selection.
#include "planner_service/backend_factory.h"

#include <stdlib.h>

#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "planner_service/testing/fake_clock.h"

namespace rein {
namespace {

using ::testing::HasSubstr;

std::string WriteScript(const std::string& name, const std::string& text) {
  const std::string path = absl::StrCat(getenv("TEST_TMPDIR"), "/", name);
  std::ofstream(path) << text;
  return path;
}

TEST(BackendFactoryTest, DefaultIsScriptedWithScriptElseAnthropic) {
  PlannerOptions options;
  EXPECT_EQ(ResolveBackendName(options), "anthropic");
  options.script = "s.json";
  EXPECT_EQ(ResolveBackendName(options), "scripted");
  options.backend = "anthropic";
  EXPECT_EQ(ResolveBackendName(options), "anthropic");
}

TEST(BackendFactoryTest, ScriptGivenBuildsScriptedBackend) {
  FakeClock clock;
  PlannerOptions options;
  options.script = WriteScript("ok.json", R"({"plan": [{"reply": {"reasoning": "r"}}]})");
  absl::StatusOr<std::unique_ptr<PlannerBackend>> backend = MakePlannerBackend(options, &clock);
  ASSERT_TRUE(backend.ok()) << backend.status();
  EXPECT_EQ((*backend)->name(), "scripted");
  rein::v1::PlanRequest request;
  request.set_goal("g");
  EXPECT_EQ((*backend)->Plan(request, absl::InfiniteFuture())->reasoning(), "r");
}

TEST(BackendFactoryTest, ScriptedWithoutScriptIsInvalidArgument) {
  FakeClock clock;
  PlannerOptions options;
  options.backend = "scripted";
  absl::StatusOr<std::unique_ptr<PlannerBackend>> backend = MakePlannerBackend(options, &clock);
  EXPECT_EQ(backend.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(backend.status().message(), "--backend=scripted needs --script=FILE");
}

TEST(BackendFactoryTest, BadScriptIsRefusedWithItsPath) {
  FakeClock clock;
  PlannerOptions options;
  options.script = WriteScript("bad.json", R"({"decide": [{"reply": {}}, {"when": {"x": 1}}]})");
  absl::StatusOr<std::unique_ptr<PlannerBackend>> backend = MakePlannerBackend(options, &clock);
  EXPECT_EQ(backend.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(backend.status().message()),
              HasSubstr(absl::StrCat(options.script, ": decide[1].when.x: unknown condition")));
}

TEST(BackendFactoryTest, AnthropicIsNotBuiltYet) {
  FakeClock clock;
  PlannerOptions options;
  absl::StatusOr<std::unique_ptr<PlannerBackend>> backend = MakePlannerBackend(options, &clock);
  EXPECT_EQ(backend.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(backend.status().message(), "anthropic backend not built yet");
}

TEST(BackendFactoryTest, ScriptWithAnthropicIsInvalidArgument) {
  FakeClock clock;
  PlannerOptions options;
  options.backend = "anthropic";
  options.script = "s.json";
  absl::StatusOr<std::unique_ptr<PlannerBackend>> backend = MakePlannerBackend(options, &clock);
  EXPECT_EQ(backend.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(backend.status().message(), "--script is only for --backend=scripted");
}

TEST(BackendFactoryTest, UnknownBackendIsInvalidArgument) {
  FakeClock clock;
  PlannerOptions options;
  options.backend = "openai";
  absl::StatusOr<std::unique_ptr<PlannerBackend>> backend = MakePlannerBackend(options, &clock);
  EXPECT_EQ(backend.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(backend.status().message(), "unknown --backend=openai (known: scripted, anthropic)");
}

}  // namespace
}  // namespace rein
