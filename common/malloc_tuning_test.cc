// The services' malloc tunables: set in the environment they take effect, and the service logs
// the value it started with.
#include "common/malloc_tuning.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rein {
namespace {

using ::testing::HasSubstr;

struct Probe {
  int reversed = -1;
  std::string log;  // what it wrote on stderr
};

// Starts malloc_tuning_probe with exactly `env` and reads what it prints.
Probe RunProbe(const std::vector<std::string>& env) {
  const char* srcdir = getenv("TEST_SRCDIR");
  const std::string path = absl::StrCat(srcdir ? srcdir : ".", "/rein/common/malloc_tuning_probe");
  int out[2];
  int err[2];
  EXPECT_EQ(pipe(out), 0);
  EXPECT_EQ(pipe(err), 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err[1], 2);
  posix_spawn_file_actions_addclose(&actions, out[0]);
  posix_spawn_file_actions_addclose(&actions, err[0]);
  std::vector<char*> argv = {const_cast<char*>(path.c_str()), nullptr};
  std::vector<char*> envp;
  for (const std::string& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  pid_t pid = 0;
  EXPECT_EQ(posix_spawn(&pid, path.c_str(), &actions, nullptr, argv.data(), envp.data()), 0)
      << path;
  posix_spawn_file_actions_destroy(&actions);
  close(out[1]);
  close(err[1]);
  // The probe writes one short line on each: neither pipe fills while the other is read.
  auto read_all = [](int fd) {
    std::string text;
    char buf[4096];
    for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) text.append(buf, n);
    close(fd);
    return text;
  };
  const std::string text = read_all(out[0]);
  Probe probe;
  probe.log = read_all(err[0]);
  int status = 0;
  EXPECT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << text << probe.log;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    if (absl::ConsumePrefix(&line, "reversed=")) {
      probe.reversed = std::stoi(std::string(line.substr(0, line.find(' '))));
    }
  }
  return probe;
}

TEST(MallocTuningTest, WithoutTunablesGlibcCachesOnlyAFewBlocksPerSize) {
  // The control: the probe's measure tells the two cache sizes apart.
  Probe p = RunProbe({"PATH=/usr/bin:/bin"});
  EXPECT_LT(p.reversed, 20);
  EXPECT_THAT(p.log, HasSubstr(R"("msg":"malloc tunables")"));
  EXPECT_THAT(p.log, HasSubstr(R"x("GLIBC_TUNABLES":"(unset: glibc's defaults)")x"));
}

TEST(MallocTuningTest, TheServicesTunablesInTheEnvironmentGiveTheLargerCache) {
  Probe p = RunProbe({absl::StrCat("GLIBC_TUNABLES=", kServiceMallocTunables)});
  EXPECT_EQ(p.reversed, 100);
  EXPECT_THAT(p.log,
              HasSubstr(absl::StrCat(R"("GLIBC_TUNABLES":")", kServiceMallocTunables, R"(")")));
}

TEST(MallocTuningTest, TheOperatorsOwnValueIsTheOneInEffectAndLogged) {
  // glibc's default, asked for explicitly: no larger cache, and the log says what is in effect.
  Probe p = RunProbe({"GLIBC_TUNABLES=glibc.malloc.tcache_count=7"});
  EXPECT_LT(p.reversed, 20);
  EXPECT_THAT(p.log, HasSubstr(R"("GLIBC_TUNABLES":"glibc.malloc.tcache_count=7")"));
}

TEST(MallocTuningTest, AnEmptyValueIsGlibcsDefaults) {
  EXPECT_EQ(MallocTunablesInEffect(""), "(unset: glibc's defaults)");
  EXPECT_EQ(MallocTunablesInEffect(nullptr), "(unset: glibc's defaults)");
  EXPECT_EQ(MallocTunablesInEffect("glibc.malloc.tcache_count=128"),
            "glibc.malloc.tcache_count=128");
}

}  // namespace
}  // namespace rein
