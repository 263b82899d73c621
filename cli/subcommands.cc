// reinctl's subcommands: each one's name, positional RUN_ID, flags and usage text.
#include "cli/subcommands.h"

namespace rein::cli {

const std::vector<SubcommandDef>& Subcommands() {
  static const auto* const kDefs = new std::vector<SubcommandDef>{
      {"start",
       Subcommand::kStart,
       false,
       {{"goal", true, false},
        {"goal_file", true, false},
        {"spec", true, false},
        {"workspace", true, false},
        {"tools", true, true},
        {"pause", true, true},
        {"max_iterations", true, false},
        {"deadline", true, false},
        {"stage_timeout", true, false},
        {"retry_budget", true, false},
        {"token_budget", true, false},
        {"cost_budget_usd", true, false},
        {"on_stagnation", true, false},
        {"no_pause_on_notes", false, false},
        {"no_combine_evaluate_decide", false, false},
        {"no_combine_plan_decide", false, false},
        {"label", true, true},
        {"request_id", true, false},
        {"model", true, false},
        {"watch", false, false},
        {"json", false, false}},
       "start --goal=TEXT | --goal_file=F [--spec=FILE.json] [--workspace=NAME]\n"
       "      [--tools=a,b] [--pause=AFTER_PLAN,BEFORE_TOOL,BEFORE_MUTATING_TOOL,AFTER_EVALUATE]\n"
       "      [--max_iterations=N] [--deadline=10m] [--stage_timeout=120s] [--retry_budget=N]\n"
       "      [--token_budget=N] [--cost_budget_usd=DOLLARS]\n"
       "      [--on_stagnation=REPLAN_THEN_PAUSE|PAUSE|FAIL]\n"
       "      [--no_pause_on_notes] [--no_combine_evaluate_decide] [--no_combine_plan_decide]\n"
       "      [--label=k=v ...] [--request_id=ID] [--model=M]\n"
       "      [--watch] [--json]\n"
       "    Starts a run and prints its id (--json: the Run in proto3 JSON). --spec is a RunSpec\n"
       "    in proto3 JSON; flags override it. --watch then watches the run (see watch)."},
      {"watch",
       Subcommand::kWatch,
       true,
       {{"after_seq", true, false}, {"json", false, false}},
       "watch RUN_ID [--after_seq=N] [--json]\n"
       "    Prints the run's events (replayed, then live) until it ends or waits for a review.\n"
       "    --json prints one proto3-JSON RunEvent per line."},
      {"approve",
       Subcommand::kApprove,
       true,
       {{"version", true, false}, {"watch", false, false}, {"json", false, false}},
       "approve RUN_ID [--version=V] [--watch]\n"
       "    Approves a paused run. Without --version the run's current version is used."},
      {"reject",
       Subcommand::kReject,
       true,
       {{"feedback", true, false},
        {"abort", false, false},
        {"version", true, false},
        {"watch", false, false},
        {"json", false, false}},
       "reject RUN_ID --feedback=TEXT [--abort] [--version=V] [--watch]\n"
       "    Sends a paused run back to PLANNING with the feedback, or fails it with --abort."},
      {"answer",
       Subcommand::kAnswer,
       true,
       {{"text", true, false},
        {"version", true, false},
        {"watch", false, false},
        {"json", false, false}},
       "answer RUN_ID --text=TEXT [--version=V] [--watch]\n"
       "    Answers the question of a run paused with NEED_HUMAN."},
      {"edit-plan",
       Subcommand::kEditPlan,
       true,
       {{"plan_file", true, false},
        {"version", true, false},
        {"watch", false, false},
        {"json", false, false}},
       "edit-plan RUN_ID --plan_file=F.json [--version=V] [--watch]\n"
       "    Replaces the pending subtasks (top first) with F.json, a JSON array of SubTask."},
      {"edit-call",
       Subcommand::kEditCall,
       true,
       {{"tool", true, false},
        {"args", true, false},
        {"version", true, false},
        {"watch", false, false},
        {"json", false, false}},
       "edit-call RUN_ID --tool=NAME --args='{\"path\":\"x\"}' [--version=V] [--watch]\n"
       "    Replaces the pending tool call of a paused run, then lets it run."},
      {"cancel",
       Subcommand::kCancel,
       true,
       {{"reason", true, false}},
       "cancel RUN_ID [--reason=TEXT]\n"
       "    Cancels a run."},
      {"list",
       Subcommand::kList,
       false,
       {{"stage", true, false},
        {"outcome", true, false},
        {"page_size", true, false},
        {"page_token", true, false},
        {"all", false, false},
        {"usage", false, false},
        {"parent", true, false},
        {"json", false, false}},
       "list [--stage=PAUSED] [--outcome=GOAL_ACHIEVED] [--page_size=N] [--page_token=T] [--all]\n"
       "     [--usage] [--parent=RUN_ID] [--json]\n"
       "    Lists runs, newest first. --all follows every page. --usage adds each run's model\n"
       "    tokens (input, output, cache read, cache write) and cost in US dollars. --parent\n"
       "    lists only that run's child runs (docs/CHILD_RUNS.md), oldest first."},
      {"quota",
       Subcommand::kQuota,
       false,
       {{"namespace", true, false}, {"json", false, false}},
       "quota [--namespace=NS] [--json]\n"
       "    Shows a namespace's quotas (the router's --quotas_file) against what it uses now,\n"
       "    and when a spent one frees. Default: the token's own namespace."},
      {"notifications",
       Subcommand::kNotifications,
       false,
       {{"failed", false, false},
        {"pending", false, false},
        {"namespace", true, false},
        {"page_size", true, false},
        {"json", false, false}},
       "notifications [--failed | --pending] [--namespace=NS] [--page_size=N] [--json]\n"
       "    Lists the webhook outbox's notices of the namespace's runs, newest first\n"
       "    (docs/WEBHOOKS.md): id (the webhook-id), type, status, attempts, when committed,\n"
       "    next attempt, last error. --failed: only those given up; --pending: only those not\n"
       "    yet delivered. At most --page_size (default 50, at most 1000). Operators and admins."},
      {"show",
       Subcommand::kShow,
       true,
       {{"json", false, false}},
       "show RUN_ID [--json]\n"
       "    Shows a run's spec, stage, pause, subtasks, recent actions, counters and outcome."},
      {"export",
       Subcommand::kExport,
       true,
       {{"out", true, false}},
       "export RUN_ID --out=DIR\n"
       "    Writes each state snapshot to DIR/<run_id>-<iteration>-v<version>.json."},
      {"tools",
       Subcommand::kTools,
       false,
       {{"executor", true, false}, {"namespace", true, false}, {"json", false, false}},
       "tools [--executor=HOST:PORT] [--namespace=NS] [--json]\n"
       "    Lists the tools an executor offers (default 127.0.0.1:50053): name, origin (builtin,\n"
       "    declared:<file>, mcp:<server>), mutating or read-only, timeout and input schema.\n"
       "    --namespace lists what the runs of NS are offered (an MCP server with credentials\n"
       "    per namespace only to those it has credentials for; default: `default`).\n"
       "    --json prints the ListToolsResponse in proto3 JSON."},
      {"fork",
       Subcommand::kFork,
       true,
       {{"at", true, false},
        {"at_seq", true, false},
        {"plan_file", true, false},
        {"tool", true, false},
        {"args", true, false},
        {"answer", true, false},
        {"max_iterations", true, false},
        {"deadline", true, false},
        {"retry_budget", true, false},
        {"token_budget", true, false},
        {"cost_budget_usd", true, false},
        {"workspace_at_fork", false, false},
        {"request_id", true, false},
        {"watch", false, false},
        {"json", false, false}},
       "fork RUN_ID --at=ITERATION | --at_seq=SEQ [--plan_file=F.json]\n"
       "     [--tool=NAME --args='{...}'] [--answer=TEXT] [--max_iterations=N] [--deadline=D]\n"
       "     [--retry_budget=N] [--token_budget=N] [--cost_budget_usd=DOLLARS]\n"
       "     [--workspace_at_fork] [--request_id=ID] [--watch] [--json]\n"
       "    Starts a new run from RUN_ID's state as iteration N began (or right after event\n"
       "    SEQ), with an edited plan (as edit-plan), an edited pending call (as edit-call),\n"
       "    an answer, or changed limits. Its workspace is a copy of RUN_ID's as it is now,\n"
       "    or with --workspace_at_fork as it was at that point. RUN_ID is untouched."},
      {"replay",
       Subcommand::kReplay,
       true,
       {{"save", true, false}, {"price_table", true, false}},
       "replay RUN_ID [--save=FILE.jsonl] [--price_table=FILE]\n"
       "    Re-drives RUN_ID's recorded log through this reinctl's router logic and prints\n"
       "    \"identical\" or the first divergence (exit 0 identical, 1 diverged). --save\n"
       "    also writes the run and its log as JSON lines (the replay corpus's format).\n"
       "    A run that cost money replays only with the router's --price_table FILE."},
      {"diff",
       Subcommand::kDiff,
       true,
       {},
       "diff RUN_A RUN_B\n"
       "    Shows two runs side by side: plans, calls, observations, outcomes."},
  };
  return *kDefs;
}

const SubcommandDef* FindSubcommand(absl::string_view name) {
  for (const SubcommandDef& def : Subcommands()) {
    if (name == def.name) return &def;
  }
  return nullptr;
}

}  // namespace rein::cli
