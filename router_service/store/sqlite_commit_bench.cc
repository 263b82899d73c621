// Benchmark of SqliteRunStore::Commit: a ~4 KB state and two events per transition.
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "benchmark/benchmark.h"
#include "rein/v1/types.pb.h"
#include "router_service/store/sqlite_run_store.h"

namespace rein {
namespace {

// A state of about 4 KB when serialized: a stack of subtasks and a window of actions.
rein::v1::RunState MakeState() {
  rein::v1::RunState state;
  state.set_stage(rein::v1::EVALUATING);
  state.set_version(1);
  for (int i = 0; i < 4; ++i) {
    rein::v1::SubTask* subtask = state.add_subtasks();
    subtask->set_id(absl::StrCat("s", i));
    subtask->set_description(std::string(120, 'd'));
    subtask->add_allowed_tools("read_file");
    subtask->add_allowed_tools("list_dir");
  }
  for (int i = 0; i < 10; ++i) {
    rein::v1::Action* action = state.add_recent_actions();
    action->set_iteration(i);
    action->set_call_id(absl::StrCat("run-bench-", i));
    action->set_tool("read_file");
    action->set_args_json(R"({"path":"src/main.cc"})");
    action->set_ok(true);
    action->set_observation(std::string(250, 'o'));
  }
  state.set_latest_observation(std::string(300, 'l'));
  return state;
}

std::string NewDatabasePath() {
  const char* root = std::getenv("TEST_TMPDIR");
  std::string dir =
      absl::StrCat(root != nullptr ? root : std::filesystem::temp_directory_path().string(),
                   "/sqlite_commit_bench_XXXXXX");
  if (mkdtemp(dir.data()) == nullptr) return "";
  return dir + "/runs.db";
}

// `cycle_stages`: each commit moves the run to the next of three stages, as a run's iteration
// does (deciding, executing, evaluating); otherwise the stage stays the same.
void BM_Commit(benchmark::State& bench, SqliteRunStore::Synchronous synchronous,
               bool cycle_stages) {
  const std::string path = NewDatabasePath();
  if (path.empty()) {
    bench.SkipWithError("mkdtemp failed");
    return;
  }
  SqliteRunStore::Options options;
  options.synchronous = synchronous;
  absl::StatusOr<std::unique_ptr<SqliteRunStore>> store = SqliteRunStore::Open(path, options);
  if (!store.ok()) {
    bench.SkipWithError(store.status().ToString().c_str());
    return;
  }
  rein::v1::Run run;
  run.set_run_id("run-bench");
  run.mutable_spec()->set_goal("benchmark");
  *run.mutable_state() = MakeState();
  if (!(*store)->CreateRun(run, {}).ok()) {
    bench.SkipWithError("CreateRun failed");
    return;
  }
  rein::v1::RunState state = run.state();
  rein::v1::RunEvent event;
  event.mutable_tool_result()->mutable_action()->set_observation(std::string(200, 'e'));
  const std::vector<rein::v1::RunEvent> events = {event, event};
  bench.counters["state_bytes"] = static_cast<double>(state.ByteSizeLong());

  constexpr rein::v1::Stage kCycle[] = {rein::v1::DECIDING, rein::v1::EXECUTING,
                                        rein::v1::EVALUATING};
  for (auto _ : bench) {
    state.set_version(state.version() + 1);
    if (cycle_stages) state.set_stage(kCycle[state.version() % 3]);
    absl::StatusOr<std::vector<rein::v1::RunEvent>> stored =
        (*store)->Commit("run-bench", state.version() - 1, state, events, std::nullopt,
                         absl::FromUnixSeconds(1700000000 + state.version()));
    if (!stored.ok()) {
      bench.SkipWithError(stored.status().ToString().c_str());
      break;
    }
  }
  bench.SetItemsProcessed(bench.iterations());
  store->reset();
  std::error_code ignored;
  std::filesystem::remove_all(std::filesystem::path(path).parent_path(), ignored);
}

BENCHMARK_CAPTURE(BM_Commit, synchronous_normal, SqliteRunStore::Synchronous::kNormal, false)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Commit, synchronous_normal_stage_changes, SqliteRunStore::Synchronous::kNormal,
                  true)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_Commit, synchronous_full, SqliteRunStore::Synchronous::kFull, false)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

}  // namespace
}  // namespace rein

BENCHMARK_MAIN();
