// Replays every recorded run of tests/replay/corpus through today's StageRouter: a change of
// the router's behaviour shows up here as a named divergence, to be accepted by re-recording
// (tests/replay/README.md).
#include "router_service/replay.h"

#include <dirent.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/replay/corpus_file.h"

namespace rein::testing {
namespace {

std::string CorpusDir() {
  const char* srcdir = getenv("TEST_SRCDIR");
  const char* workspace = getenv("TEST_WORKSPACE");
  return absl::StrCat(srcdir ? srcdir : ".", "/", workspace ? workspace : "rein",
                      "/tests/replay/corpus");
}

std::vector<std::string> CorpusFiles() {
  std::vector<std::string> files;
  if (DIR* dir = opendir(CorpusDir().c_str())) {
    while (struct dirent* e = readdir(dir)) {
      if (absl::EndsWith(e->d_name, ".jsonl")) files.push_back(e->d_name);
    }
    closedir(dir);
  }
  std::sort(files.begin(), files.end());
  return files;
}

RecordedRun Load(const std::string& name) {
  std::ifstream in(CorpusDir() + "/" + name);
  std::stringstream text;
  text << in.rdbuf();
  absl::StatusOr<RecordedRun> recorded = ParseRecordedRun(text.str());
  EXPECT_TRUE(recorded.ok()) << name << ": " << recorded.status();
  return recorded.ok() ? *recorded : RecordedRun();
}

TEST(ReplayCorpusTest, EveryRecordedRunReplaysIdentically) {
  const std::vector<std::string> files = CorpusFiles();
  // The demo run, the e2e-style scenarios, a stagnation and a recovery at least.
  ASSERT_GE(files.size(), 5u) << "corpus at " << CorpusDir();
  for (const char* needed : {"demo.jsonl", "stagnation.jsonl", "recovery.jsonl"}) {
    EXPECT_NE(std::find(files.begin(), files.end(), needed), files.end()) << needed;
  }
  for (const std::string& name : files) {
    RecordedRun recorded = Load(name);
    absl::StatusOr<ReplayResult> result = ReplayRun(StageRouter(), recorded.run, recorded.events);
    ASSERT_TRUE(result.ok()) << name << ": " << result.status();
    EXPECT_FALSE(result->divergence)
        << name << ": " << DescribeReplay(*result)
        << "\nIf the router's behaviour changed on purpose, re-record the corpus "
           "(tests/replay/README.md).";
    EXPECT_EQ(result->events_replayed, static_cast<int64_t>(recorded.events.size())) << name;
    EXPECT_EQ(result->run.state().stage(), recorded.run.state().stage()) << name;
  }
}

TEST(ReplayCorpusTest, MutatedPlannerReplyIsANamedDivergence) {
  RecordedRun recorded = Load("stagnation.jsonl");
  ASSERT_FALSE(recorded.events.empty());
  // The planner's first plan now names a tool outside the run: the router of today judges it
  // invalid where the recorded run went on.
  int64_t plan_seq = 0;
  for (auto& e : recorded.events) {
    if (e.has_plan()) {
      e.mutable_plan()->mutable_subtasks(0)->set_allowed_tools(0, "run_command");
      plan_seq = e.seq();
      break;
    }
  }
  ASSERT_GT(plan_seq, 0);
  absl::StatusOr<ReplayResult> result = ReplayRun(StageRouter(), recorded.run, recorded.events);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_TRUE(result->divergence);
  EXPECT_EQ(result->divergence->seq, plan_seq);
  EXPECT_EQ(result->divergence->stage, rein::v1::PLANNING);
  EXPECT_TRUE(absl::StartsWith(result->divergence->recorded, "plan:")) << DescribeReplay(*result);
  EXPECT_TRUE(absl::StartsWith(result->divergence->now, "error: PLANNING INVALID_OUTPUT"))
      << DescribeReplay(*result);
}

TEST(ReplayCorpusTest, ChangedRouterIsANamedDivergence) {
  RecordedRun recorded = Load("demo.jsonl");
  ASSERT_FALSE(recorded.events.empty());
  // A router that keeps shorter observations cuts the first tool result differently.
  StageRouterOptions options;
  options.max_observation_bytes = 4;
  absl::StatusOr<ReplayResult> result =
      ReplayRun(StageRouter(options), recorded.run, recorded.events);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_TRUE(result->divergence);
  int64_t first_result = 0;
  for (const auto& e : recorded.events) {
    if (e.has_tool_result() && e.tool_result().action().observation().size() > 4) {
      first_result = e.seq();
      break;
    }
  }
  EXPECT_EQ(result->divergence->seq, first_result) << DescribeReplay(*result);
  EXPECT_EQ(result->divergence->stage, rein::v1::EXECUTING);
  EXPECT_NE(result->divergence->detail.find("observation"), std::string::npos)
      << DescribeReplay(*result);
}

TEST(ReplayCorpusTest, OlderLogSaysWhichFormatItNeeds) {
  RecordedRun recorded = Load("recovery.jsonl");
  ASSERT_FALSE(recorded.events.empty());
  recorded.events[0].mutable_stage_changed()->clear_log_format();
  absl::StatusOr<ReplayResult> result = ReplayRun(StageRouter(), recorded.run, recorded.events);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(result.status().message().find(absl::StrCat("needs event log format ", kLogFormat)),
            std::string::npos)
      << result.status();
  EXPECT_NE(result.status().message().find("format 0"), std::string::npos) << result.status();
}

TEST(ReplayCorpusTest, StopAfterSeqGivesTheStateThere) {
  RecordedRun recorded = Load("recovery.jsonl");
  ASSERT_GE(recorded.events.size(), 4u);
  absl::StatusOr<ReplayResult> result =
      ReplayRun(StageRouter(), recorded.run, recorded.events, ReplayOptions{.stop_after_seq = 3});
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_FALSE(result->divergence);
  EXPECT_GE(result->events_replayed, 3);
  EXPECT_EQ(result->run.state().version(), recorded.events[result->events_replayed - 1].version());
}

}  // namespace
}  // namespace rein::testing
