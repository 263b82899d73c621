// Per-command pids cgroups.
#include "executor_service/pids_cgroup.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"

namespace rein {
namespace {

bool WriteText(const std::string& path, const std::string& text) {
  UniqueFd fd(open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd.valid()) return false;
  return write(fd.get(), text.data(), text.size()) == static_cast<ssize_t>(text.size());
}

std::vector<int> ReadPids(const std::string& path) {
  std::vector<int> pids;
  std::ifstream in(path);
  int pid;
  while (in >> pid) pids.push_back(pid);
  return pids;
}

}  // namespace

PidsCgroup::~PidsCgroup() {
  KillAll();
  procs_.Reset();
  const absl::Time until = absl::Now() + absl::Seconds(2);
  while (absl::Now() < until) {
    if (rmdir(path_.c_str()) == 0 || errno == ENOENT) return;
    usleep(200);  // exiting processes leave the cgroup a moment after SIGKILL
  }
}

void PidsCgroup::KillAll() {
  // cgroup v2 kills the whole cgroup atomically; v1 needs a loop (a forking process may add
  // one more between the read and the kill, never more than pids.max).
  if (WriteText(path_ + "/cgroup.kill", "1")) return;
  const absl::Time until = absl::Now() + absl::Seconds(2);
  while (absl::Now() < until) {
    std::vector<int> pids = ReadPids(path_ + "/cgroup.procs");
    if (pids.empty()) return;
    for (int pid : pids) kill(pid, SIGKILL);
    usleep(1000);
  }
}

absl::StatusOr<std::unique_ptr<PidsCgroupParent>> PidsCgroupParent::Open(const std::string& path) {
  std::unique_ptr<PidsCgroupParent> parent(new PidsCgroupParent(path, /*owned=*/false));
  absl::StatusOr<std::unique_ptr<PidsCgroup>> probe = parent->Create(/*max_pids=*/1);
  if (!probe.ok()) return probe.status();
  return parent;
}

absl::StatusOr<std::unique_ptr<PidsCgroupParent>> PidsCgroupParent::Detect() {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  std::string own;
  while (std::getline(in, line)) {
    std::vector<std::string> parts = absl::StrSplit(line, absl::MaxSplits(':', 2));
    if (parts.size() != 3) continue;
    for (absl::string_view controller : absl::StrSplit(parts[1], ',')) {
      if (controller == "pids") own = parts[2];
    }
  }
  if (own.empty()) {
    return absl::FailedPreconditionError(
        "no cgroup v1 pids hierarchy (give a delegated cgroup with --sandbox_cgroup)");
  }
  const std::string base = absl::StrCat("/sys/fs/cgroup/pids", own == "/" ? "" : own);
  const std::string path = absl::StrCat(base, "/rein-executor-", getpid());
  if (mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot create ", path, ": ", strerror(errno)));
  }
  std::unique_ptr<PidsCgroupParent> parent(new PidsCgroupParent(path, /*owned=*/true));
  absl::StatusOr<std::unique_ptr<PidsCgroup>> probe = parent->Create(/*max_pids=*/1);
  if (!probe.ok()) return probe.status();
  return parent;
}

PidsCgroupParent::~PidsCgroupParent() {
  if (owned_) rmdir(path_.c_str());
}

absl::StatusOr<std::unique_ptr<PidsCgroup>> PidsCgroupParent::Create(uint64_t max_pids) {
  const std::string path = absl::StrCat(path_, "/cmd-", next_.fetch_add(1));
  if (mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot create cgroup ", path, ": ", strerror(errno)));
  }
  UniqueFd procs(open((path + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC));
  if (!procs.valid() || !WriteText(path + "/pids.max", absl::StrCat(max_pids))) {
    const int err = errno;
    rmdir(path.c_str());
    return absl::FailedPreconditionError(
        absl::StrCat("cgroup ", path, " has no usable pids controller: ", strerror(err)));
  }
  return std::make_unique<PidsCgroup>(path, std::move(procs));
}

}  // namespace rein
