// reinctl's subcommands: each one's name, positional RUN_ID, flags and usage text.
#ifndef REIN_CLI_SUBCOMMANDS_H_
#define REIN_CLI_SUBCOMMANDS_H_

#include <vector>

#include "absl/strings/string_view.h"

namespace rein::cli {

enum class Subcommand {
  kHelp,
  kStart,
  kWatch,
  kApprove,
  kReject,
  kAnswer,
  kEditPlan,
  kEditCall,
  kCancel,
  kList,
  kShow,
  kExport,
  kTools,
  kFork,
  kReplay,
  kDiff,
  kQuota,
  kNotifications,
};

// A flag a subcommand accepts.
struct FlagDef {
  const char* name;
  bool takes_value;  // else a boolean: --name, --name=true|false
  bool repeatable;   // else given at most once
};

struct SubcommandDef {
  const char* name;
  Subcommand subcommand;
  bool takes_run_id;  // RUN_ID is its first positional argument
  std::vector<FlagDef> flags;
  const char* usage;  // its lines in `reinctl help`
};

// Every subcommand but help, in the order `reinctl help` lists them.
const std::vector<SubcommandDef>& Subcommands();

// The subcommand named `name`, or null.
const SubcommandDef* FindSubcommand(absl::string_view name);

}  // namespace rein::cli

#endif  // REIN_CLI_SUBCOMMANDS_H_
