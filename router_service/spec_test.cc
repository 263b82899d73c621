// Tests of NormalizeSpec: defaults, and INVALID_ARGUMENT naming the field for every bad value.
#include "router_service/spec.h"

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace rein {
namespace {

std::vector<rein::v1::ToolSpec> KnownTools() {
  std::vector<rein::v1::ToolSpec> tools(3);
  tools[0].set_name("list_files");
  tools[1].set_name("read_file");
  tools[2].set_name("write_file");
  tools[2].set_mutating(true);
  return tools;
}

TEST(SpecTest, NormalizeSpecFillsDefaults) {
  rein::v1::RunSpec spec;
  spec.set_goal("g");
  auto n = NormalizeSpec(spec, KnownTools());
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(n->workspace(), "default");
  EXPECT_EQ(n->limits().max_iterations(), 50);
  EXPECT_EQ(n->limits().deadline().seconds(), 600);
  EXPECT_EQ(n->limits().stage_timeout().seconds(), 120);
  EXPECT_EQ(n->limits().retry_budget(), 5);
  EXPECT_EQ(n->limits().max_consecutive_tool_failures(), 3);
  EXPECT_EQ(n->limits().stagnation_window(), 4);
  EXPECT_EQ(n->limits().on_stagnation(), rein::v1::REPLAN_THEN_PAUSE);
  EXPECT_EQ(n->limits().token_budget(), 0);
}

struct BadSpec {
  std::string field;
  std::function<void(rein::v1::RunSpec&)> edit;
};

class BadSpecTest : public ::testing::TestWithParam<BadSpec> {};

TEST_P(BadSpecTest, InvalidArgumentNamesField) {
  rein::v1::RunSpec spec;
  spec.set_goal("g");
  GetParam().edit(spec);
  auto n = NormalizeSpec(spec, KnownTools());
  ASSERT_EQ(n.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(n.status().message().find(GetParam().field), std::string::npos) << n.status();
}

INSTANTIATE_TEST_SUITE_P(
    EveryField, BadSpecTest,
    ::testing::Values(
        BadSpec{"spec.goal", [](auto& s) { s.set_goal(""); }},
        BadSpec{"spec.goal", [](auto& s) { s.set_goal("  \n"); }},
        BadSpec{"spec.goal", [](auto& s) { s.set_goal(std::string(16 * 1024 + 1, 'g')); }},
        BadSpec{"spec.workspace", [](auto& s) { s.set_workspace("../etc"); }},
        BadSpec{"spec.workspace", [](auto& s) { s.set_workspace(".rein-history"); }},
        BadSpec{"spec.workspace", [](auto& s) { s.set_workspace(".rein-journal"); }},
        BadSpec{"spec.tools[1]",
                [](auto& s) {
                  s.add_tools("read_file");
                  s.add_tools("rm");
                }},
        BadSpec{"spec.tools[1]",
                [](auto& s) {
                  s.add_tools("read_file");
                  s.add_tools("read_file");
                }},
        BadSpec{"spec.limits.max_iterations",
                [](auto& s) { s.mutable_limits()->set_max_iterations(-1); }},
        BadSpec{"spec.limits.deadline",
                [](auto& s) { s.mutable_limits()->mutable_deadline()->set_seconds(-5); }},
        BadSpec{"spec.limits.deadline",
                [](auto& s) { s.mutable_limits()->mutable_deadline()->set_seconds(30 * 86400); }},
        BadSpec{"spec.limits.stage_timeout",
                [](auto& s) { s.mutable_limits()->mutable_stage_timeout()->set_nanos(-1); }},
        BadSpec{"spec.limits.retry_budget",
                [](auto& s) { s.mutable_limits()->set_retry_budget(-7); }},
        BadSpec{"spec.limits.max_consecutive_tool_failures",
                [](auto& s) { s.mutable_limits()->set_max_consecutive_tool_failures(-1); }},
        BadSpec{"spec.limits.stagnation_window",
                [](auto& s) { s.mutable_limits()->set_stagnation_window(1); }},
        BadSpec{"spec.limits.on_stagnation",
                [](auto& s) {
                  s.mutable_limits()->set_on_stagnation(static_cast<rein::v1::OnStagnation>(42));
                }},
        BadSpec{"spec.limits.token_budget",
                [](auto& s) { s.mutable_limits()->set_token_budget(-1); }},
        BadSpec{"spec.limits.cost_budget_usd",
                [](auto& s) { s.mutable_limits()->set_cost_budget_usd(-0.01); }},
        BadSpec{"spec.limits.cost_budget_usd",
                [](auto& s) { s.mutable_limits()->set_cost_budget_usd(std::nan("")); }},
        BadSpec{"spec.limits.cost_budget_usd",
                [](auto& s) { s.mutable_limits()->set_cost_budget_usd(INFINITY); }},
        BadSpec{"spec.pause_points[0]",
                [](auto& s) { s.add_pause_points(static_cast<rein::v1::PausePoint>(99)); }},
        BadSpec{"spec.pause_points[0]",
                [](auto& s) { s.add_pause_points(rein::v1::PAUSE_POINT_UNSPECIFIED); }},
        BadSpec{"spec.model.temperature", [](auto& s) { s.mutable_model()->set_temperature(3); }},
        BadSpec{"spec.labels", [](auto& s) { (*s.mutable_labels())[""] = "x"; }}));

TEST(SpecTest, HugeDurationsAreRefusedNotWrapped) {
  for (int64_t seconds : {int64_t{18446744074}, int64_t{9223372037}, int64_t{700000000000}}) {
    rein::v1::RunSpec spec;
    spec.set_goal("g");
    spec.mutable_limits()->mutable_deadline()->set_seconds(seconds);
    EXPECT_EQ(NormalizeSpec(spec, KnownTools()).status().code(), absl::StatusCode::kInvalidArgument)
        << seconds;
    spec.mutable_limits()->clear_deadline();
    spec.mutable_limits()->mutable_stage_timeout()->set_seconds(seconds);
    EXPECT_EQ(NormalizeSpec(spec, KnownTools()).status().code(), absl::StatusCode::kInvalidArgument)
        << seconds;
  }
}

TEST(SpecTest, NonFiniteTemperatureIsInvalidArgumentNamingTheField) {
  for (double bad : {std::nan(""), std::numeric_limits<double>::infinity(),
                     -std::numeric_limits<double>::infinity()}) {
    rein::v1::RunSpec spec;
    spec.set_goal("g");
    spec.mutable_model()->set_temperature(bad);
    absl::StatusOr<rein::v1::RunSpec> n = NormalizeSpec(spec, KnownTools());
    ASSERT_EQ(n.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(n.status().message().find("spec.model.temperature"), std::string::npos) << n.status();
  }
}

TEST(SpecTest, TemperatureInRangeIsAccepted) {
  for (double ok : {0.0, 0.5, 1.0}) {
    rein::v1::RunSpec spec;
    spec.set_goal("g");
    spec.mutable_model()->set_temperature(ok);
    EXPECT_TRUE(NormalizeSpec(spec, KnownTools()).ok()) << ok;
  }
}

TEST(SpecTest, CheckFiniteNumbersFindsNonFiniteFieldsAtAnyDepth) {
  rein::v1::RunSpec spec;
  spec.set_goal("g");
  EXPECT_TRUE(CheckFiniteNumbers(spec, "spec").ok());
  spec.mutable_model()->set_temperature(std::nan(""));
  absl::Status status = CheckFiniteNumbers(spec, "spec");
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "spec.model.temperature: must be a finite number, got nan");
}

TEST(SpecTest, NormalizeLimitsNamesTheFieldUnderTheGivenPath) {
  rein::v1::Limits limits;
  limits.set_max_iterations(-1);
  absl::Status status = NormalizeLimits(&limits, "edits.limits");
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StartsWith(status.message(), "edits.limits.max_iterations: ")) << status;
  limits.set_max_iterations(0);
  limits.set_cost_budget_usd(std::nan(""));
  status = NormalizeLimits(&limits, "edits.limits");
  EXPECT_EQ(status.message(), "edits.limits.cost_budget_usd: must be a finite number, got nan");
  limits.set_cost_budget_usd(0);
  ASSERT_TRUE(NormalizeLimits(&limits, "edits.limits").ok());
  EXPECT_EQ(limits.max_iterations(), 50);  // defaults filled in as for a spec
}

}  // namespace
}  // namespace rein
