// Tests of the planner's backend selection.
#include "planner_service/backend_factory.h"

#include <stdlib.h>

#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/testing/fake_clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rein {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

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

// Runs `body` with ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL set as given ("" = unset).
template <typename Body>
void WithAnthropicEnv(const char* key, const char* base_url, Body body) {
  unsetenv("ANTHROPIC_API_KEY");
  unsetenv("ANTHROPIC_BASE_URL");
  if (*key) setenv("ANTHROPIC_API_KEY", key, 1);
  if (*base_url) setenv("ANTHROPIC_BASE_URL", base_url, 1);
  body();
  unsetenv("ANTHROPIC_API_KEY");
  unsetenv("ANTHROPIC_BASE_URL");
}

std::string ShippedPrompts() {
  return absl::StrCat(getenv("TEST_SRCDIR"), "/rein/planner_service/prompts");
}

TEST(BackendFactoryTest, AnthropicWithoutAKeyRefusesToStart) {
  WithAnthropicEnv("", "", [] {
    FakeClock clock;
    PlannerOptions options;
    options.prompts_dir = ShippedPrompts();
    absl::StatusOr<std::unique_ptr<PlannerBackend>> backend = MakePlannerBackend(options, &clock);
    EXPECT_EQ(backend.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_EQ(backend.status().message(),
              "the anthropic backend needs an API key: set ANTHROPIC_API_KEY or pass "
              "--api_key_file=FILE (or run the scripted planner with --script=FILE)");
  });
}

TEST(BackendFactoryTest, AnthropicWithKeyFromEnvironmentIsBuilt) {
  WithAnthropicEnv("sk-env-key", "http://127.0.0.1:1", [] {
    FakeClock clock;
    PlannerOptions options;
    options.model = "claude-test-model";
    options.prompts_dir = ShippedPrompts();
    absl::StatusOr<std::unique_ptr<PlannerBackend>> backend = MakePlannerBackend(options, &clock);
    ASSERT_TRUE(backend.ok()) << backend.status();
    EXPECT_EQ((*backend)->name(), "anthropic:claude-test-model");
  });
}

TEST(BackendFactoryTest, AnthropicKeyFileIsTrimmedAndNeverShown) {
  WithAnthropicEnv("", "", [] {
    FakeClock clock;
    PlannerOptions options;
    options.prompts_dir = ShippedPrompts();
    options.api_key_file = WriteScript("key.txt", "sk-file-key\n");
    EXPECT_TRUE(MakePlannerBackend(options, &clock).ok());
    options.api_key_file = WriteScript("empty-key.txt", "  \n");
    absl::Status status = MakePlannerBackend(options, &clock).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_EQ(status.message(),
              absl::StrCat("--api_key_file=", options.api_key_file, ": is empty"));
    options.api_key_file = WriteScript("bad-key.txt", "sk-has space-SECRET");
    status = MakePlannerBackend(options, &clock).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(status.message()), Not(HasSubstr("SECRET")));
    options.api_key_file = "/nonexistent/key";
    EXPECT_EQ(MakePlannerBackend(options, &clock).status().code(), absl::StatusCode::kNotFound);
  });
}

TEST(BackendFactoryTest, AnthropicBadBaseUrlOrPromptsAreRefused) {
  WithAnthropicEnv("sk-env-key", "", [] {
    FakeClock clock;
    PlannerOptions options;
    options.prompts_dir = ShippedPrompts();
    options.anthropic_base_url = "api.anthropic.com";
    EXPECT_EQ(MakePlannerBackend(options, &clock).status().code(),
              absl::StatusCode::kInvalidArgument);
    options.anthropic_base_url = "";
    options.prompts_dir = "/nonexistent/prompts";
    EXPECT_EQ(MakePlannerBackend(options, &clock).status().code(), absl::StatusCode::kNotFound);
  });
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
