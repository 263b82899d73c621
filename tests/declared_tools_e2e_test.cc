// The declared-tools example end to end: the real binaries, the executor under bubblewrap with
// --tools_dir=examples/declared_tools/tools, a scripted run that calls the read-only declared
// tool, then pauses BEFORE_MUTATING_TOOL before the mutating one, is approved and finishes with
// the line appended in the workspace; and `reinctl tools` listing every tool with its origin.
#include <stdlib.h>

#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cluster.h"

namespace rein::testing {
namespace {

using ::testing::HasSubstr;

class DeclaredToolsEndToEndTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = getenv("TEST_TMPDIR");
    Cluster::Options options;
    options.dir = dir_;
    options.script_json = ReadFile(RunfilePath("examples/declared_tools/planner_script.json"));
    ASSERT_FALSE(options.script_json.empty());
    // Runfiles are symlinks, which the executor never follows in a workspace: serve a copy.
    options.workspace_root = dir_ + "/workspaces";
    ASSERT_EQ(system(absl::StrCat("rm -rf '", options.workspace_root, "' && cp -rL '",
                                  RunfilePath("examples/declared_tools/workspaces"), "' '",
                                  options.workspace_root, "'")
                         .c_str()),
              0);
    ws_ = options.workspace_root + "/notes-repo";
    options.executor_flags = {
        "--sandbox=bwrap",
        absl::StrCat("--tools_dir=", RunfilePath("examples/declared_tools/tools"))};
    cluster_ = std::make_unique<Cluster>(options);
    ASSERT_TRUE(cluster_->Start()) << cluster_->Logs();
  }

  std::string dir_, ws_;
  std::unique_ptr<Cluster> cluster_;
};

TEST_F(DeclaredToolsEndToEndTest, MutatingDeclaredToolPausesThenApprovedLineLands) {
  const std::string before = ReadFile(ws_ + "/NOTES.md");
  ASSERT_EQ(before, "# Notes\n\n- first note\n- second note\n");
  rein::v1::RunSpec spec;
  spec.set_goal("Review the notes and record it.");
  spec.set_workspace("notes-repo");
  spec.add_tools("word_count");
  spec.add_tools("append_note");
  spec.add_pause_points(rein::v1::BEFORE_MUTATING_TOOL);
  spec.mutable_limits()->mutable_deadline()->set_seconds(120);
  absl::StatusOr<rein::v1::Run> run = cluster_->StartRun(spec);
  ASSERT_TRUE(run.ok()) << run.status();
  absl::StatusOr<rein::v1::Run> paused =
      cluster_->WaitForStage(run->run_id(), rein::v1::PAUSED, absl::Seconds(30));
  ASSERT_TRUE(paused.ok()) << paused.status();
  ASSERT_EQ(paused->state().stage(), rein::v1::PAUSED) << cluster_->Logs();
  EXPECT_EQ(paused->state().pause().point(), rein::v1::BEFORE_MUTATING_TOOL);
  EXPECT_EQ(paused->state().pause().pending_call().tool(), "append_note");
  EXPECT_TRUE(paused->state().pause().pending_call().mutating());
  EXPECT_EQ(ReadFile(ws_ + "/NOTES.md"), before);  // nothing written before the review

  absl::StatusOr<rein::v1::Run> resumed = cluster_->Approve(*paused);
  ASSERT_TRUE(resumed.ok()) << resumed.status();

  std::vector<rein::v1::RunEvent> events;
  ASSERT_TRUE(cluster_->Watch(run->run_id(), 0, absl::Seconds(60), &events).ok());
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().finished().outcome().reason(), rein::v1::GOAL_ACHIEVED)
      << events.back().DebugString() << cluster_->Logs();
  EXPECT_EQ(ReadFile(ws_ + "/NOTES.md"), before + "- reviewed by rein\n");
  // The read-only declared tool ran for real: wc's count of the notes is an observation.
  bool counted = false;
  for (const rein::v1::RunEvent& event : events) {
    counted = counted || event.DebugString().find("4  8 NOTES.md") != std::string::npos;
  }
  EXPECT_TRUE(counted) << cluster_->Logs();
}

TEST_F(DeclaredToolsEndToEndTest, ReinctlToolsListsEveryToolWithItsOrigin) {
  const std::string out = dir_ + "/tools.out";
  Process reinctl("reinctl",
                  {RunfilePath("cli/reinctl"), "tools",
                   absl::StrCat("--executor=", cluster_->executor_target())},
                  out);
  ASSERT_TRUE(reinctl.Start());
  EXPECT_EQ(reinctl.Wait(absl::Seconds(30)), 0) << ReadFile(out);
  const std::string listing = ReadFile(out);
  EXPECT_THAT(listing,
              HasSubstr("append_note  declared:append_note.json  mutating  timeout 10s\n"));
  EXPECT_THAT(listing, HasSubstr("word_count  declared:word_count.json  read-only  timeout 20s\n"));
  EXPECT_THAT(listing, HasSubstr("run_command  builtin  mutating"));
  EXPECT_THAT(listing, HasSubstr("read_file  builtin  read-only"));
  EXPECT_THAT(listing, HasSubstr("\"required\":[\"text\"]"));
  EXPECT_THAT(listing, HasSubstr("8 tools from executor"));

  Process json("reinctl-json",
               {RunfilePath("cli/reinctl"), "tools", "--json",
                absl::StrCat("--executor=", cluster_->executor_target())},
               dir_ + "/tools.json");
  ASSERT_TRUE(json.Start());
  EXPECT_EQ(json.Wait(absl::Seconds(30)), 0);
  EXPECT_THAT(ReadFile(dir_ + "/tools.json"),
              HasSubstr("\"origin\": \"declared:word_count.json\""));
}

// The executor never starts half-configured: one bad tool file stops it, naming the file.
TEST(DeclaredToolsStartTest, ABadToolFileRefusesExecutorStart) {
  const std::string dir = getenv("TEST_TMPDIR");
  const std::string tools = dir + "/bad-tools";
  ASSERT_EQ(
      system(absl::StrCat(
                 "rm -rf '", tools, "' && mkdir -p '", tools, "' '", dir, "/ws' && cp -L '",
                 RunfilePath("examples/declared_tools/tools/word_count.json"), "' '", tools, "/'")
                 .c_str()),
      0);
  {
    std::ofstream bad(tools + "/broken.json");
    bad << R"({"name": "broken", "description": "d", "mutating": false,
               "input_schema": {"type": "object"}, "argv": ["wc", "{path}"]})";
  }
  Process executor("executor",
                   {RunfilePath("executor_service/rein-executor"), "--sandbox=bwrap",
                    absl::StrCat("--workspace_root=", dir, "/ws"), "--listen=127.0.0.1:0",
                    absl::StrCat("--tools_dir=", tools)},
                   dir + "/executor.log");
  ASSERT_TRUE(executor.Start());
  EXPECT_EQ(executor.Wait(absl::Seconds(30)), 2);
  EXPECT_THAT(ReadFile(dir + "/executor.log"),
              HasSubstr(absl::StrCat(tools,
                                     "/broken.json: argv[1]: placeholder {path} is not a "
                                     "property of input_schema.properties")));
}

}  // namespace
}  // namespace rein::testing
