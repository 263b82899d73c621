// TuneMallocOrReexec: the service starts again with a larger malloc thread cache, keeps its pid
// and argv, and leaves GLIBC_TUNABLES as the operator had it for everything it starts.
#include "common/malloc_tuning.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"

namespace rein {
namespace {

struct Probe {
  int reversed = -1;
  int pid = 0;
  int spawned_pid = 0;
  std::map<std::string, std::string> env;
};

// Starts malloc_tuning_probe with exactly `env` (and `arg`, if any) and reads what it prints.
Probe RunProbe(const std::vector<std::string>& env, const std::string& arg = "") {
  const char* srcdir = getenv("TEST_SRCDIR");
  const std::string path = absl::StrCat(srcdir ? srcdir : ".", "/rein/common/malloc_tuning_probe");
  int out[2];
  EXPECT_EQ(pipe(out), 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_addclose(&actions, out[0]);
  std::vector<char*> argv = {const_cast<char*>(path.c_str())};
  if (!arg.empty()) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (const std::string& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  Probe probe;
  pid_t pid = 0;
  EXPECT_EQ(posix_spawn(&pid, path.c_str(), &actions, nullptr, argv.data(), envp.data()), 0)
      << path;
  posix_spawn_file_actions_destroy(&actions);
  close(out[1]);
  std::string text;
  char buf[4096];
  for (ssize_t n; (n = read(out[0], buf, sizeof buf)) > 0;) text.append(buf, n);
  close(out[0]);
  int status = 0;
  EXPECT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << text;
  probe.spawned_pid = pid;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    std::pair<std::string, std::string> kv = absl::StrSplit(line, absl::MaxSplits('=', 1));
    if (kv.first == "reversed") {
      probe.reversed = std::stoi(kv.second);
    } else if (kv.first == "pid") {
      probe.pid = std::stoi(kv.second);
    } else {
      probe.env[kv.first] = kv.second;
    }
  }
  return probe;
}

TEST(MallocTuningTest, WithoutItGlibcCachesOnlyAFewBlocksPerSize) {
  // The control: the probe's measure tells the two cache sizes apart.
  Probe p = RunProbe({"PATH=/usr/bin:/bin"}, "untuned");
  EXPECT_LT(p.reversed, 20);
  EXPECT_EQ(p.env["PROBE_STARTS"], "1");
}

TEST(MallocTuningTest, StartsAgainWithTheLargerCacheAndLeavesNoTrace) {
  Probe p = RunProbe({"PATH=/usr/bin:/bin"});
  EXPECT_EQ(p.reversed, 100);
  EXPECT_EQ(p.env["PROBE_STARTS"], "2");  // started twice
  EXPECT_EQ(p.pid, p.spawned_pid);        // by exec, in place: the same process
  // Named after its binary (15 bytes), not after /proc/self/exe.
  EXPECT_EQ(p.env["comm"], "malloc_tuning_p");
  // What the service starts sees the environment it was given.
  EXPECT_EQ(p.env["GLIBC_TUNABLES"], "(unset)");
  EXPECT_EQ(p.env["REIN_MALLOC_TUNED"], "(unset)");
  EXPECT_EQ(p.env["REIN_GLIBC_TUNABLES_BEFORE"], "(unset)");
}

TEST(MallocTuningTest, KeepsTheOperatorsOtherTunables) {
  Probe p = RunProbe({"GLIBC_TUNABLES=glibc.malloc.mmap_threshold=262144"});
  EXPECT_EQ(p.reversed, 100);
  EXPECT_EQ(p.env["PROBE_STARTS"], "2");
  EXPECT_EQ(p.env["GLIBC_TUNABLES"], "glibc.malloc.mmap_threshold=262144");
  EXPECT_EQ(p.env["REIN_GLIBC_TUNABLES_BEFORE"], "(unset)");
}

TEST(MallocTuningTest, AnEmptyGlibcTunablesIsPutBackEmpty) {
  Probe p = RunProbe({"GLIBC_TUNABLES="});
  EXPECT_EQ(p.reversed, 100);
  EXPECT_EQ(p.env["GLIBC_TUNABLES"], "");
}

TEST(MallocTuningTest, TheOperatorsOwnCacheSizeWins) {
  // glibc's default, asked for explicitly: no second start, no larger cache.
  Probe p = RunProbe({"GLIBC_TUNABLES=glibc.malloc.tcache_count=7"});
  EXPECT_LT(p.reversed, 20);
  EXPECT_EQ(p.env["PROBE_STARTS"], "1");
  EXPECT_EQ(p.env["GLIBC_TUNABLES"], "glibc.malloc.tcache_count=7");
}

}  // namespace
}  // namespace rein
