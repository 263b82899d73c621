// Tests of tree copies, measures and removals: deep trees with few descriptors and a small
// stack, FIFOs that never block, holes and hard links kept, bounds refused by name.
#include "executor_service/workspace/tree_copy.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <functional>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/testing/fake_clock.h"
#include "executor_service/testing/hostile_tree.h"
#include "executor_service/testing/small_tmpfs.h"
#include "executor_service/testing/temp_workspace.h"
#include "executor_service/workspace/tree_walk.h"
#include "gtest/gtest.h"

namespace rein {
namespace {

constexpr int64_t kMiB = 1 << 20;

bool Exists(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0;
}

struct stat Lstat(const std::string& path) {
  struct stat st = {};
  EXPECT_EQ(lstat(path.c_str(), &st), 0) << path;
  return st;
}

// Builds `depth` nested directories "d" under `top`.
void MakeDeepTree(const std::string& top, int depth) {
  ASSERT_TRUE(testing::MakeDeepTree(top, depth).ok());
}

// Runs `body` on a thread with a 256 KiB stack and at most 64 open descriptors: a walk that
// recursed per level, or held descriptors per level, would crash or fail.
void RunConstrained(const std::function<void()>& body) {
  struct rlimit saved;
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &saved), 0);
  struct rlimit low = saved;
  low.rlim_cur = 64;
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 256 * 1024);
  pthread_t thread;
  auto run = [](void* arg) -> void* {
    (*static_cast<const std::function<void()>*>(arg))();
    return nullptr;
  };
  ASSERT_EQ(pthread_create(&thread, &attr, run, const_cast<std::function<void()>*>(&body)), 0);
  pthread_join(thread, nullptr);
  pthread_attr_destroy(&attr);
  setrlimit(RLIMIT_NOFILE, &saved);
}

TEST(TreeCopyTest, TreeThirtyThousandDeepIsCopiedMeasuredAndRemovedWithFewDescriptors) {
  testing::SmallTmpfs fs(64 * kMiB);
  const std::string top = fs.path() + "/deep";
  ASSERT_EQ(mkdir(top.c_str(), 0700), 0);
  MakeDeepTree(top, 30000);
  CopyLimits limits;
  limits.max_depth = 40000;
  absl::StatusOr<CopyStats> copied, measured;
  absl::Status removed_copy, removed_top;
  RunConstrained([&] {
    copied = CopyTree(top, fs.path() + "/copy", limits);
    measured = MeasureTree(fs.path() + "/copy", limits);
    removed_copy = RemoveTree(fs.path() + "/copy");
    removed_top = RemoveTree(top);
  });
  ASSERT_TRUE(copied.ok()) << copied.status();
  EXPECT_EQ(copied->entries, 30001);  // the directories and the leaf
  EXPECT_EQ(copied->files, 1);
  ASSERT_TRUE(measured.ok()) << measured.status();
  EXPECT_EQ(measured->entries, 30001);
  EXPECT_TRUE(removed_copy.ok()) << removed_copy;
  EXPECT_TRUE(removed_top.ok()) << removed_top;
  EXPECT_FALSE(Exists(fs.path() + "/copy"));
  EXPECT_FALSE(Exists(top));
}

TEST(TreeCopyTest, TreeDeeperThanTheLimitIsRefusedNamingIt) {
  testing::TempWorkspace ws;
  MakeDeepTree(ws.Path("") + "/", 20);
  CopyLimits limits;
  limits.max_depth = 10;
  limits.depth_bound = "--workspace_max_depth";
  absl::StatusOr<CopyStats> copy = CopyTree(ws.Path(""), ws.root() + "/copy", limits);
  EXPECT_EQ(copy.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(copy.status().message().find("--workspace_max_depth"), std::string::npos)
      << copy.status();
  EXPECT_EQ(MeasureTree(ws.Path(""), limits).status().code(), absl::StatusCode::kResourceExhausted);
}

TEST(TreeCopyTest, FifoIsSkippedWithoutBlocking) {
  testing::TempWorkspace ws;
  ws.WriteFile("a.txt", "a");
  ws.MakeFifo("pipe");
  absl::StatusOr<CopyStats> copy = CopyTree(ws.Path(""), ws.root() + "/copy");
  ASSERT_TRUE(copy.ok()) << copy.status();
  EXPECT_EQ(copy->files, 1);
  EXPECT_TRUE(Exists(ws.root() + "/copy/a.txt"));
  EXPECT_FALSE(Exists(ws.root() + "/copy/pipe"));
}

TEST(TreeCopyTest, FifoSwappedInForAFileIsNotOpenedForIo) {
  testing::TempWorkspace ws;
  ws.WriteFile("f", "data");
  const struct stat file = Lstat(ws.Path("f"));
  ASSERT_EQ(unlink(ws.Path("f").c_str()), 0);
  ws.MakeFifo("f");
  int dir = open(ws.Path("").c_str(), O_RDONLY | O_DIRECTORY);
  ASSERT_GE(dir, 0);
  // Without O_NONBLOCK this open would wait for a writer forever.
  absl::StatusOr<int> opened = OpenEntry(dir, "f", O_RDONLY, file);
  close(dir);
  EXPECT_EQ(opened.status().code(), absl::StatusCode::kNotFound) << opened.status();
}

TEST(TreeCopyTest, SparseFileAndHardLinkCopyAllocateWhatTheSourceAllocates) {
  testing::SmallTmpfs fs(64 * kMiB);
  if (!fs.mounted()) GTEST_SKIP() << "needs a small tmpfs (" << fs.error() << ")";
  const std::string top = fs.path() + "/ws";
  ASSERT_EQ(mkdir(top.c_str(), 0700), 0);
  int fd = open((top + "/sparse").c_str(), O_WRONLY | O_CREAT, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, int64_t{10} << 30), 0);  // 10 GiB, nothing allocated
  ASSERT_EQ(pwrite(fd, "data", 4, int64_t{5} << 30), 4);
  close(fd);
  ASSERT_EQ(link((top + "/sparse").c_str(), (top + "/second").c_str()), 0);
  absl::StatusOr<CopyStats> source = MeasureTree(top);
  ASSERT_TRUE(source.ok()) << source.status();
  EXPECT_LE(source->allocated_bytes, 64 * 1024);

  absl::StatusOr<CopyStats> copy = CopyTree(top, fs.path() + "/copy");
  ASSERT_TRUE(copy.ok()) << copy.status();
  EXPECT_EQ(copy->files, 2);
  EXPECT_EQ(copy->allocated_bytes, source->allocated_bytes);
  const struct stat first = Lstat(fs.path() + "/copy/sparse");
  const struct stat second = Lstat(fs.path() + "/copy/second");
  EXPECT_EQ(first.st_ino, second.st_ino);
  EXPECT_EQ(first.st_nlink, 2u);
  EXPECT_EQ(first.st_size, int64_t{10} << 30);
  EXPECT_EQ(first.st_blocks, Lstat(top + "/sparse").st_blocks);
  char buf[4] = {};
  fd = open((fs.path() + "/copy/second").c_str(), O_RDONLY);
  ASSERT_EQ(pread(fd, buf, 4, int64_t{5} << 30), 4);
  close(fd);
  EXPECT_EQ(std::string(buf, 4), "data");
}

TEST(TreeCopyTest, BytesBoundRefusesNamingIt) {
  testing::TempWorkspace ws;
  ws.WriteFile("a", std::string(64 * 1024, 'a'));
  ws.WriteFile("b", std::string(64 * 1024, 'b'));
  CopyLimits limits;
  limits.max_allocated_bytes = 100 * 1024;
  limits.bytes_bound = "--workspace_history_max_bytes";
  for (const auto& result :
       {CopyTree(ws.Path(""), ws.root() + "/copy", limits), MeasureTree(ws.Path(""), limits)}) {
    EXPECT_EQ(result.status().code(), absl::StatusCode::kResourceExhausted);
    EXPECT_NE(result.status().message().find("--workspace_history_max_bytes"), std::string::npos)
        << result.status();
  }
}

TEST(TreeCopyTest, EntriesBoundRefusesNamingIt) {
  testing::TempWorkspace ws;
  for (int i = 0; i < 10; ++i) ws.WriteFile(absl::StrCat("f", i), "x");
  CopyLimits limits;
  limits.max_entries = 5;
  limits.entries_bound = "--workspace_history_max_files";
  absl::StatusOr<CopyStats> copy = CopyTree(ws.Path(""), ws.root() + "/copy", limits);
  EXPECT_EQ(copy.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(copy.status().message().find("--workspace_history_max_files"), std::string::npos)
      << copy.status();
}

TEST(TreeCopyTest, PassedDeadlineRefuses) {
  testing::TempWorkspace ws;
  for (int i = 0; i < 100; ++i) ws.WriteFile(absl::StrCat("f", i), "x");
  CopyLimits limits;
  limits.deadline = absl::Now() - absl::Seconds(1);
  absl::StatusOr<CopyStats> copy = CopyTree(ws.Path(""), ws.root() + "/copy", limits);
  EXPECT_EQ(copy.status().code(), absl::StatusCode::kDeadlineExceeded) << copy.status();
}

TEST(TreeCopyTest, TheDeadlineIsReadOnTheGivenClock) {
  testing::TempWorkspace ws;
  for (int i = 0; i < 100; ++i) ws.WriteFile(absl::StrCat("f", i), "x");
  FakeClock clock;
  CopyLimits limits;
  limits.clock = &clock;
  limits.deadline = clock.Now() + absl::Seconds(1);
  EXPECT_TRUE(CopyTree(ws.Path(""), ws.root() + "/before", limits).ok());
  clock.Advance(absl::Seconds(2));  // no real time passes
  absl::StatusOr<CopyStats> copy = CopyTree(ws.Path(""), ws.root() + "/after", limits);
  EXPECT_EQ(copy.status().code(), absl::StatusCode::kDeadlineExceeded) << copy.status();
}

}  // namespace
}  // namespace rein
