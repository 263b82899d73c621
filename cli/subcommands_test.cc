// Tests of reinctl's subcommand table: each subcommand is found by its name, its usage starts
// with it, and no flag is declared twice.
#include "cli/subcommands.h"

#include <set>
#include <string>

#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace rein::cli {
namespace {

TEST(SubcommandsTest, EachIsFoundByItsNameAndItsUsageStartsWithIt) {
  std::set<Subcommand> seen;
  for (const SubcommandDef& def : Subcommands()) {
    EXPECT_EQ(FindSubcommand(def.name), &def) << def.name;
    EXPECT_TRUE(absl::StartsWith(def.usage, std::string(def.name) + " ")) << def.usage;
    EXPECT_TRUE(seen.insert(def.subcommand).second) << def.name << " is listed twice";
  }
  EXPECT_EQ(seen.count(Subcommand::kHelp), 0u);  // help is reinctl's own, not in the table
}

TEST(SubcommandsTest, NoFlagIsDeclaredTwice) {
  for (const SubcommandDef& def : Subcommands()) {
    std::set<std::string> names;
    for (const FlagDef& flag : def.flags) {
      EXPECT_TRUE(names.insert(flag.name).second) << def.name << " --" << flag.name;
    }
  }
}

TEST(SubcommandsTest, AnUnknownNameIsNotFound) {
  EXPECT_EQ(FindSubcommand("help"), nullptr);
  EXPECT_EQ(FindSubcommand("star"), nullptr);
  EXPECT_EQ(FindSubcommand(""), nullptr);
}

}  // namespace
}  // namespace rein::cli
