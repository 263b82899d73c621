// Tests of per-command pids cgroups: fresh cgroups from the pool, removal in the background,
// and every process dead when KillAll returns. Needs a writable cgroup v1 pids hierarchy (the
// executor's own requirement for a pids cgroup); skipped without one.
#include "executor_service/process/pids_cgroup.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <memory>
#include <set>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "executor_service/process/child_process.h"
#include "gtest/gtest.h"

namespace rein {
namespace {

bool Exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Waits up to 10 s for `path` to disappear.
bool GoneSoon(const std::string& path) {
  const absl::Time until = absl::Now() + absl::Seconds(10);
  while (Exists(path)) {
    if (absl::Now() > until) return false;
    absl::SleepFor(absl::Milliseconds(5));
  }
  return true;
}

class PidsCgroupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<PidsCgroupParent>> parent = PidsCgroupParent::Detect();
    if (!parent.ok()) GTEST_SKIP() << "no writable pids hierarchy: " << parent.status();
    parent_ = *std::move(parent);
  }
  std::unique_ptr<PidsCgroupParent> parent_;
};

TEST_F(PidsCgroupTest, TakeGivesAFreshCgroupEveryTimeAndRetireRemovesIt) {
  std::set<std::string> seen;
  for (int i = 0; i < 20; ++i) {
    absl::StatusOr<std::unique_ptr<PidsCgroup>> cgroup = parent_->Take(/*max_pids=*/33);
    ASSERT_TRUE(cgroup.ok()) << cgroup.status();
    const std::string path = (*cgroup)->path();
    EXPECT_TRUE(seen.insert(path).second) << path << " handed out twice";
    EXPECT_EQ(ReadAll(path + "/pids.max"), "33\n");
    EXPECT_EQ(ReadAll(path + "/cgroup.procs"), "");
    parent_->Retire(*std::move(cgroup));
    EXPECT_TRUE(GoneSoon(path)) << path;
  }
  const absl::Time until = absl::Now() + absl::Seconds(10);
  while (parent_->retiring() > 0 && absl::Now() < until) absl::SleepFor(absl::Milliseconds(5));
  EXPECT_EQ(parent_->retiring(), 0u);
}

TEST_F(PidsCgroupTest, KillAllReturnsWithEveryProcessDead) {
  absl::StatusOr<std::unique_ptr<PidsCgroup>> cgroup = parent_->Take(/*max_pids=*/16);
  ASSERT_TRUE(cgroup.ok()) << cgroup.status();
  const int procs = (*cgroup)->procs_fd();
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (write(procs, "0", 1) != 1) _exit(1);
    setsid();
    if (fork() == 0) {  // a grandchild, as a command's background process would be
      pause();
      _exit(0);
    }
    pause();
    _exit(0);
  }
  auto members = [&] {
    const std::string procs_text = ReadAll((*cgroup)->path() + "/cgroup.procs");
    return std::count(procs_text.begin(), procs_text.end(), '\n');
  };
  const absl::Time until = absl::Now() + absl::Seconds(10);
  while (members() < 2 && absl::Now() < until) absl::SleepFor(absl::Milliseconds(5));
  ASSERT_EQ(members(), 2);
  (*cgroup)->KillAll();
  EXPECT_EQ(ReadAll((*cgroup)->path() + "/cgroup.procs"), "");
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;
  const std::string path = (*cgroup)->path();
  parent_->Retire(*std::move(cgroup));
  EXPECT_TRUE(GoneSoon(path));
}

TEST_F(PidsCgroupTest, ParentsSharingADirectoryNeverShareACgroup) {
  // Two sandboxes in one process share Detect's directory; removing one's cgroups must not
  // touch the other's.
  absl::StatusOr<std::unique_ptr<PidsCgroupParent>> other = PidsCgroupParent::Detect();
  ASSERT_TRUE(other.ok()) << other.status();
  ASSERT_EQ((*other)->path(), parent_->path());
  absl::StatusOr<std::unique_ptr<PidsCgroup>> mine = parent_->Take(/*max_pids=*/8);
  absl::StatusOr<std::unique_ptr<PidsCgroup>> theirs = (*other)->Take(/*max_pids=*/8);
  ASSERT_TRUE(mine.ok() && theirs.ok());
  EXPECT_NE((*mine)->path(), (*theirs)->path());
  other->reset();  // removes its pool and its retired cgroups
  absl::SleepFor(absl::Milliseconds(50));
  EXPECT_TRUE(Exists((*mine)->path() + "/cgroup.procs"));
  absl::StatusOr<std::unique_ptr<PidsCgroup>> next = parent_->Take(/*max_pids=*/8);
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_TRUE(Exists((*next)->path() + "/cgroup.procs"));
}

// Finite limits (0 would ask for unlimited, above what the test may raise to).
ResourceLimits Limits() {
  ResourceLimits limits;
  limits.cpu_seconds = 60;
  limits.address_space_bytes = 1ull << 30;
  limits.file_size_bytes = 1 << 20;
  limits.open_files = 64;
  limits.processes = 64;
  return limits;
}

// rein-spawner, built next to the executor.
std::string SpawnerBinary() {
  return absl::StrCat(std::getenv("TEST_SRCDIR"), "/rein/executor_service/rein-spawner");
}

// A pooled cgroup with its spawner (rein-spawner at `binary`, or a fork when it is empty): the
// pool is filled in the background once nothing is in flight, so this retires what it takes
// until one comes with a spawner (or 10 s pass).
std::unique_ptr<PidsCgroup> TakeWithSpawner(PidsCgroupParent* parent, const std::string& binary) {
  const absl::Time until = absl::Now() + absl::Seconds(10);
  while (absl::Now() < until) {
    absl::StatusOr<std::unique_ptr<PidsCgroup>> cgroup =
        parent->Take(/*max_pids=*/16, /*pool_size=*/2, /*spawners=*/true, binary);
    if (!cgroup.ok()) return nullptr;
    if ((*cgroup)->spawner() != nullptr) return *std::move(cgroup);
    parent->Retire(*std::move(cgroup));
    absl::SleepFor(absl::Milliseconds(20));
  }
  return nullptr;
}

// `script` run by sh in `cgroup`, by its spawner (if it has one).
absl::StatusOr<ChildOutcome> RunShInCgroup(PidsCgroup* cgroup, const std::string& script) {
  ChildSpec spec;
  spec.path = "/bin/sh";
  spec.argv = {"sh", "-c", script};
  spec.env = {"PATH=/usr/bin:/bin"};
  spec.limits = Limits();
  spec.cgroup_procs_fd = cgroup->procs_fd();
  spec.spawner = cgroup->spawner();
  return RunChild(spec, absl::Now() + absl::Seconds(20), 1 << 20,
                  [cgroup](int) { cgroup->KillAll(); });
}

// The line of /proc/self/cgroup of a process in `cgroup`.
std::string CgroupLine(const PidsCgroup& cgroup) {
  return absl::StrCat("pids:", cgroup.path().substr(std::string("/sys/fs/cgroup/pids").size()),
                      "\n");
}

// Each spawner test twice: with rein-spawner, and with a fork of this process.
class SpawnerTest : public PidsCgroupTest, public ::testing::WithParamInterface<bool> {
 protected:
  std::string Binary() const { return GetParam() ? SpawnerBinary() : ""; }
};

TEST_P(SpawnerTest, ASpawnerRunsItsCommandInsideItsCgroupAsOurChild) {
  std::unique_ptr<PidsCgroup> cgroup = TakeWithSpawner(parent_.get(), Binary());
  ASSERT_NE(cgroup, nullptr);
  Spawner* spawner = cgroup->spawner();
  // Already inside its cgroup before any command came.
  EXPECT_EQ(ReadAll(cgroup->path() + "/cgroup.procs"), absl::StrCat(spawner->pid(), "\n"));
  absl::StatusOr<ChildOutcome> outcome =
      RunShInCgroup(cgroup.get(), "cat /proc/self/cgroup; echo ppid=$PPID; echo out; echo err >&2");
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_TRUE(spawner->used());
  EXPECT_EQ(outcome->exit_code, 0) << outcome->output;
  EXPECT_TRUE(absl::StrContains(outcome->output, CgroupLine(*cgroup))) << outcome->output;
  EXPECT_TRUE(absl::StrContains(outcome->output, absl::StrCat("ppid=", getpid(), "\n")))
      << outcome->output;
  EXPECT_TRUE(absl::StrContains(outcome->output, "out\nerr\n")) << outcome->output;
  const std::string path = cgroup->path();
  parent_->Retire(std::move(cgroup));
  EXPECT_TRUE(GoneSoon(path));
}

TEST_P(SpawnerTest, ASpawnerKillsATimedOutCommandAndReportsOneItCannotStart) {
  std::unique_ptr<PidsCgroup> cgroup = TakeWithSpawner(parent_.get(), Binary());
  ASSERT_NE(cgroup, nullptr);
  ChildSpec spec;
  spec.path = "/bin/sleep";
  spec.argv = {"sleep", "60"};
  spec.limits = Limits();
  spec.cgroup_procs_fd = cgroup->procs_fd();
  spec.spawner = cgroup->spawner();
  const absl::Time start = absl::Now();
  absl::StatusOr<ChildOutcome> outcome = RunChild(spec, absl::Now() + absl::Milliseconds(300),
                                                  1 << 20, [&](int) { cgroup->KillAll(); });
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_TRUE(outcome->timed_out);
  EXPECT_EQ(outcome->signal, SIGKILL);
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
  EXPECT_EQ(ReadAll(cgroup->path() + "/cgroup.procs"), "");
  parent_->Retire(std::move(cgroup));

  cgroup = TakeWithSpawner(parent_.get(), Binary());
  ASSERT_NE(cgroup, nullptr);
  spec.path = "/nonexistent/program";
  spec.argv = {"program"};
  spec.cgroup_procs_fd = cgroup->procs_fd();
  spec.spawner = cgroup->spawner();
  outcome =
      RunChild(spec, absl::Now() + absl::Seconds(20), 1 << 20, [&](int) { cgroup->KillAll(); });
  EXPECT_EQ(outcome.status().code(), absl::StatusCode::kFailedPrecondition) << outcome.status();
  EXPECT_EQ(ReadAll(cgroup->path() + "/cgroup.procs"), "");
  parent_->Retire(std::move(cgroup));
}

TEST_P(SpawnerTest, AnUnusedSpawnerIsKilledAndReapedWithItsCgroup) {
  std::unique_ptr<PidsCgroup> cgroup = TakeWithSpawner(parent_.get(), Binary());
  ASSERT_NE(cgroup, nullptr);
  const pid_t pid = cgroup->spawner()->pid();
  const std::string path = cgroup->path();
  cgroup.reset();
  EXPECT_FALSE(Exists(path));
  EXPECT_EQ(kill(pid, 0), -1);  // reaped: not even a zombie
  EXPECT_EQ(errno, ESRCH);
}

TEST_P(SpawnerTest, ASpawnerIsTheSmallProgramWhenGivenOne) {
  std::unique_ptr<PidsCgroup> cgroup = TakeWithSpawner(parent_.get(), Binary());
  ASSERT_NE(cgroup, nullptr);
  const std::string proc = absl::StrCat("/proc/", cgroup->spawner()->pid());
  char exe[4096] = {0};
  ASSERT_GT(readlink((proc + "/exe").c_str(), exe, sizeof(exe) - 1), 0);
  const std::string maps = ReadAll(proc + "/maps");
  const size_t mappings = static_cast<size_t>(std::count(maps.begin(), maps.end(), '\n'));
  if (GetParam()) {
    EXPECT_TRUE(absl::EndsWith(exe, "/rein-spawner")) << exe;
    // What bubblewrap's execve tears down on the command's path: a handful, not the executor's.
    EXPECT_LT(mappings, 20u) << maps;
  } else {
    char self[4096] = {0};
    ASSERT_GT(readlink("/proc/self/exe", self, sizeof(self) - 1), 0);
    EXPECT_EQ(std::string(exe), std::string(self));  // a fork of this test
    EXPECT_GT(mappings, 20u);
  }
}

TEST_P(SpawnerTest, ACommandWhoseSpawnerDiedStartsWithoutIt) {
  std::unique_ptr<PidsCgroup> cgroup = TakeWithSpawner(parent_.get(), Binary());
  ASSERT_NE(cgroup, nullptr);
  Spawner* spawner = cgroup->spawner();
  ASSERT_EQ(kill(spawner->pid(), SIGKILL), 0);
  const std::string status = absl::StrCat("/proc/", spawner->pid(), "/stat");
  const absl::Time until = absl::Now() + absl::Seconds(10);
  while (!absl::StrContains(ReadAll(status), ") Z ") && absl::Now() < until) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  absl::StatusOr<ChildOutcome> outcome = RunShInCgroup(cgroup.get(), "cat /proc/self/cgroup");
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_FALSE(spawner->used());
  EXPECT_EQ(outcome->exit_code, 0) << outcome->output;
  EXPECT_TRUE(absl::StrContains(outcome->output, CgroupLine(*cgroup))) << outcome->output;
  const std::string path = cgroup->path();
  parent_->Retire(std::move(cgroup));
  EXPECT_TRUE(GoneSoon(path));
}

INSTANTIATE_TEST_SUITE_P(ProgramOrFork, SpawnerTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "ReinSpawner" : "Fork";
                         });

TEST_F(PidsCgroupTest, StaleCgroupsOfDeadExecutorsAreRemovedAndNoOthers) {
  struct stat ns;
  ASSERT_EQ(stat("/proc/self/ns/pid", &ns), 0);
  const uint64_t pid_namespace = ns.st_ino;
  const std::string dir = parent_->path().substr(0, parent_->path().rfind('/'));
  const pid_t dead = fork();
  ASSERT_GE(dead, 0);
  if (dead == 0) _exit(0);
  ASSERT_EQ(waitpid(dead, nullptr, 0), dead);
  const std::string stale = absl::StrCat(dir, "/rein-executor-", pid_namespace, "-", dead);
  const std::string live = absl::StrCat(dir, "/rein-executor-", pid_namespace, "-1");
  const std::string other_ns = absl::StrCat(dir, "/rein-executor-", pid_namespace + 1, "-", dead);
  for (const std::string& path : {stale, live, other_ns}) {
    ASSERT_EQ(mkdir(path.c_str(), 0755), 0) << path;
    ASSERT_EQ(mkdir((path + "/cmd-0-0").c_str(), 0755), 0) << path;
    ASSERT_EQ(mkdir((path + "/cmd-0-1").c_str(), 0755), 0) << path;
  }
  EXPECT_EQ(PidsCgroupParent::RemoveStaleCgroups(dir, pid_namespace), 1);
  EXPECT_FALSE(Exists(stale));
  EXPECT_TRUE(Exists(live + "/cmd-0-1"));
  EXPECT_TRUE(Exists(other_ns + "/cmd-0-1"));
  EXPECT_TRUE(Exists(parent_->path()));  // this process's own
  for (const std::string& path : {live, other_ns}) {
    rmdir((path + "/cmd-0-0").c_str());
    rmdir((path + "/cmd-0-1").c_str());
    rmdir(path.c_str());
  }
}

TEST_F(PidsCgroupTest, AStaleCgroupStillHoldingAProcessIsKept) {
  struct stat ns;
  ASSERT_EQ(stat("/proc/self/ns/pid", &ns), 0);
  const std::string dir = parent_->path().substr(0, parent_->path().rfind('/'));
  const pid_t dead = fork();
  ASSERT_GE(dead, 0);
  if (dead == 0) _exit(0);
  ASSERT_EQ(waitpid(dead, nullptr, 0), dead);
  const std::string stale = absl::StrCat(dir, "/rein-executor-", ns.st_ino, "-", dead);
  ASSERT_EQ(mkdir(stale.c_str(), 0755), 0);
  ASSERT_EQ(mkdir((stale + "/cmd-0-0").c_str(), 0755), 0);
  ASSERT_EQ(mkdir((stale + "/cmd-0-1").c_str(), 0755), 0);
  // A command that outlived its executor.
  const pid_t survivor = fork();
  ASSERT_GE(survivor, 0);
  if (survivor == 0) {
    const std::string procs = stale + "/cmd-0-1/cgroup.procs";
    const int fd = open(procs.c_str(), O_WRONLY);
    if (fd < 0 || write(fd, "0", 1) != 1) _exit(1);
    pause();
    _exit(0);
  }
  const absl::Time until = absl::Now() + absl::Seconds(10);
  while (ReadAll(stale + "/cmd-0-1/cgroup.procs").empty() && absl::Now() < until) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  EXPECT_EQ(PidsCgroupParent::RemoveStaleCgroups(dir, ns.st_ino), 0);
  EXPECT_FALSE(Exists(stale + "/cmd-0-0"));
  EXPECT_TRUE(Exists(stale + "/cmd-0-1"));
  kill(survivor, SIGKILL);
  waitpid(survivor, nullptr, 0);
  while (!ReadAll(stale + "/cmd-0-1/cgroup.procs").empty() && absl::Now() < until) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  EXPECT_EQ(PidsCgroupParent::RemoveStaleCgroups(dir, ns.st_ino), 1);
  EXPECT_FALSE(Exists(stale));
}

}  // namespace
}  // namespace rein
