// reinctl's command line: parsing argv into a Command of the subcommand and its flags (pure).
#ifndef REIN_CLI_ARGS_H_
#define REIN_CLI_ARGS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "cli/subcommands.h"
#include "rein/v1/router.pb.h"
#include "rein/v1/types.pb.h"

namespace rein::cli {

inline constexpr char kDefaultRouter[] = "127.0.0.1:50051";
// rein-executor's default --listen, where `reinctl tools` asks by default.
inline constexpr char kDefaultExecutor[] = "127.0.0.1:50053";

// The `fork` flags as given.
struct ForkOptions {
  std::optional<int32_t> at_iteration;  // --at
  std::optional<int64_t> at_seq;        // --at_seq
  std::string plan_file;                // --plan_file (as edit-plan)
  std::string tool;                     // --tool and --args (as edit-call)
  std::string args_json;
  std::optional<std::string> answer;  // --answer
  std::optional<int32_t> max_iterations;
  std::optional<absl::Duration> deadline;
  std::optional<int32_t> retry_budget;
  std::optional<int64_t> token_budget;    // >= 1
  std::optional<double> cost_budget_usd;  // > 0
  bool workspace_at_fork = false;
  std::string request_id;
};

// The `start` flags as given; unset fields leave the --spec file (or the router's default) alone.
struct StartOptions {
  std::optional<std::string> goal;
  std::optional<std::string> goal_file;
  std::optional<std::string> spec_file;
  std::optional<std::string> workspace;
  std::optional<std::vector<std::string>> tools;
  std::optional<std::vector<v1::PausePoint>> pause_points;
  std::optional<int32_t> max_iterations;
  std::optional<absl::Duration> deadline;
  std::optional<absl::Duration> stage_timeout;
  std::optional<int32_t> retry_budget;
  std::optional<int64_t> token_budget;
  std::optional<double> cost_budget_usd;  // US dollars
  std::optional<v1::OnStagnation> on_stagnation;
  bool no_pause_on_notes = false;
  bool no_combine_evaluate_decide = false;  // RunSpec.combine_evaluate_decide = false
  bool no_combine_plan_decide = false;      // RunSpec.combine_plan_decide = false
  std::vector<std::pair<std::string, std::string>> labels;  // in the order given
  std::optional<std::string> model;
  std::string request_id;
};

// One parsed invocation of reinctl. Only the fields of `subcommand` are meaningful.
struct Command {
  Subcommand subcommand = Subcommand::kHelp;
  std::string router = kDefaultRouter;
  // For kHelp: the subcommand asked about ("" = all).
  std::string help_topic;

  std::string run_id;
  bool watch = false;  // start and the reviews: watch afterwards
  bool json = false;   // start, watch, list, show

  StartOptions start;

  // watch
  int64_t after_seq = 0;

  // Reviews. Without `expected_version` the current state.version is fetched first.
  std::optional<int64_t> expected_version;
  std::string feedback;   // reject
  bool abort = false;     // reject
  std::string text;       // answer
  std::string plan_file;  // edit-plan
  std::string tool;       // edit-call
  std::string args_json;  // edit-call, validated to be a JSON object

  // cancel
  std::string reason;

  // list
  v1::Stage stage_filter = v1::STAGE_UNSPECIFIED;
  v1::TerminationReason outcome_filter = v1::TERMINATION_REASON_UNSPECIFIED;
  int32_t page_size = 0;
  std::string page_token;
  std::string parent_run_id;  // list --parent: only that run's children
  bool all_pages = false;
  bool show_usage = false;  // list --usage: token and cost columns

  // export: the directory; replay: the --save file ("" = none)
  std::string out_dir;
  // replay: the router's --price_table ("" = none)
  std::string price_table;

  // quota, notifications: the namespace asked ("" = the caller's own); tools: the namespace
  // whose offer is listed ("" = default)
  std::string namespace_name;
  // notifications: --failed or --pending (NOTICE_STATUS_UNSPECIFIED = every notice); page_size
  // above is the most shown
  v1::NoticeStatus notice_status = v1::NOTICE_STATUS_UNSPECIFIED;

  // tools: the executor asked (its registry is the source of truth)
  std::string executor = kDefaultExecutor;
  // fork
  ForkOptions fork;
  // diff: the second run (run_id is the first)
  std::string other_run_id;
};

// Parses reinctl's arguments (without argv[0]). `--router` is accepted before or after the
// subcommand; flags are `--name=value` or `--name value`. Errors are INVALID_ARGUMENT with a
// message naming the offending flag, argument or subcommand.
absl::StatusOr<Command> ParseArgs(const std::vector<std::string>& args);

// Usage of every subcommand, or of one (`topic`, e.g. "start"); "" = all.
std::string Usage(absl::string_view topic = "");

}  // namespace rein::cli

#endif  // REIN_CLI_ARGS_H_
