// Tests of per-command pids cgroups: fresh cgroups from the pool, removal in the background,
// and every process dead when KillAll returns. Needs a writable cgroup v1 pids hierarchy (the
// executor's own requirement for a pids cgroup); skipped without one.
#include "executor_service/pids_cgroup.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <memory>
#include <set>
#include <string>

#include "absl/time/clock.h"
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

}  // namespace
}  // namespace rein
