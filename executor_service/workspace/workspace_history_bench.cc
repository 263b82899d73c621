// Measures what one workspace-history snapshot costs: time and bytes per copy of a workspace
// of N files of S bytes (run: bazel run //executor_service/workspace:workspace_history_bench --
// DIR).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "executor_service/workspace/workspace_history.h"

int main(int argc, char** argv) {
  const std::string root = argc > 1 ? argv[1] : "/tmp/rein-history-bench";
  (void)rein::RemoveTree(root);
  mkdir(root.c_str(), 0700);
  std::printf("%8s %10s %12s %12s %14s\n", "files", "file_bytes", "total_MiB", "ms/snapshot",
              "MiB/s");
  for (auto [files, size] :
       {std::pair<int, int>{100, 4096}, {1000, 4096}, {100, 1 << 20}, {10000, 1024}}) {
    const std::string ws = absl::StrCat("ws-", files, "-", size);
    const std::string dir = absl::StrCat(root, "/", ws);
    mkdir(dir.c_str(), 0700);
    std::string content(size, 'x');
    for (int i = 0; i < files; ++i) {
      const std::string sub = absl::StrCat(dir, "/d", i % 32);
      mkdir(sub.c_str(), 0700);
      int fd = open(absl::StrCat(sub, "/f", i).c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd < 0 || write(fd, content.data(), content.size()) != size) return 1;
      close(fd);
    }
    rein::WorkspaceHistory history(root, /*retention=*/3);
    constexpr int kRounds = 5;
    absl::Time start = absl::Now();
    for (int r = 1; r <= kRounds; ++r) {
      auto stats = history.SnapshotBeforeCall("bench", ws, absl::StrCat("bench-", ws, "-", r));
      if (!stats.ok()) {
        std::fprintf(stderr, "%s\n", stats.status().ToString().c_str());
        return 1;
      }
    }
    const double ms = absl::ToDoubleMilliseconds(absl::Now() - start) / kRounds;
    const double mib = static_cast<double>(files) * size / (1 << 20);
    std::printf("%8d %10d %12.1f %12.2f %14.1f\n", files, size, mib, ms, mib / (ms / 1000));
  }
  (void)rein::RemoveTree(root);
  return 0;
}
