// Per-command pids cgroups.
#include "executor_service/process/pids_cgroup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/match.h"
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

std::atomic<uint64_t> next_instance{0};

// Retired cgroups removed even while commands are in flight, once this many wait.
constexpr size_t kMaxRetiring = 32;

// Removes the cgroup `path` if it holds no process; false when it stays.
bool RemoveIfEmpty(const std::string& path) {
  if (!ReadPids(path + "/cgroup.procs").empty()) return false;
  return rmdir(path.c_str()) == 0 || errno == ENOENT;
}

}  // namespace

uint64_t PidNamespace() {
  struct stat st;
  return stat("/proc/self/ns/pid", &st) == 0 ? static_cast<uint64_t>(st.st_ino) : 0;
}

PidsCgroupParent::PidsCgroupParent(std::string path, bool owned)
    : path_(std::move(path)), owned_(owned), instance_(next_instance.fetch_add(1)) {}

PidsCgroup::~PidsCgroup() {
  spawner_.reset();  // an unused one is killed and reaped here
  KillAll();
  procs_.Reset();
  const absl::Time until = absl::Now() + absl::Seconds(2);
  while (absl::Now() < until) {
    if (rmdir(path_.c_str()) == 0 || errno == ENOENT) return;
    usleep(200);  // exiting processes leave the cgroup a moment after SIGKILL
  }
}

void PidsCgroup::KillAll() {
  // cgroup v2 kills the whole cgroup at once (but returns before they are gone); v1 needs a
  // loop (a forking process may add one more between the read and the kill, never more than
  // pids.max). Either way, wait until cgroup.procs is empty.
  const bool v2_killed = WriteText(path_ + "/cgroup.kill", "1");
  const absl::Time until = absl::Now() + absl::Seconds(2);
  while (absl::Now() < until) {
    std::vector<int> pids = ReadPids(path_ + "/cgroup.procs");
    if (pids.empty()) return;
    if (!v2_killed) {
      for (int pid : pids) kill(pid, SIGKILL);
    }
    usleep(200);
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
  const uint64_t pid_namespace = PidNamespace();
  RemoveStaleCgroups(base, pid_namespace);
  const std::string path = absl::StrCat(base, "/rein-executor-", pid_namespace, "-", getpid());
  if (mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot create ", path, ": ", strerror(errno)));
  }
  std::unique_ptr<PidsCgroupParent> parent(new PidsCgroupParent(path, /*owned=*/true));
  absl::StatusOr<std::unique_ptr<PidsCgroup>> probe = parent->Create(/*max_pids=*/1);
  if (!probe.ok()) return probe.status();
  return parent;
}

int PidsCgroupParent::RemoveStaleCgroups(const std::string& dir, uint64_t pid_namespace) {
  if (pid_namespace == 0) return 0;
  const std::string prefix = absl::StrCat("rein-executor-", pid_namespace, "-");
  std::vector<std::string> stale;
  if (DIR* d = opendir(dir.c_str())) {
    while (struct dirent* e = readdir(d)) {
      const absl::string_view name = e->d_name;
      int pid = 0;
      if (!absl::StartsWith(name, prefix) || !absl::SimpleAtoi(name.substr(prefix.size()), &pid) ||
          pid <= 0 || pid == getpid()) {
        continue;
      }
      if (kill(pid, 0) == 0 || errno != ESRCH) continue;  // alive (or not ours to ask)
      stale.emplace_back(name);
    }
    closedir(d);
  }
  int removed = 0;
  for (const std::string& name : stale) {
    const std::string path = absl::StrCat(dir, "/", name);
    if (DIR* d = opendir(path.c_str())) {
      std::vector<std::string> children;
      while (struct dirent* e = readdir(d)) {
        if (absl::StartsWith(e->d_name, "cmd-") && e->d_type == DT_DIR) {
          children.push_back(e->d_name);
        }
      }
      closedir(d);
      // A command that outlived its executor keeps its cgroup (and so the parent).
      for (const std::string& child : children) RemoveIfEmpty(absl::StrCat(path, "/", child));
    }
    if (RemoveIfEmpty(path)) ++removed;
  }
  return removed;
}

PidsCgroupParent::~PidsCgroupParent() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  if (thread_.joinable()) thread_.join();
  // The background thread is gone: remove what is left here.
  absl::MutexLock lock(&mu_);
  pool_.clear();
  retired_.clear();
  if (owned_) rmdir(path_.c_str());
}

absl::StatusOr<std::unique_ptr<PidsCgroup>> PidsCgroupParent::Take(
    uint64_t max_pids, int pool_size, bool spawners, const std::string& spawner_binary) {
  {
    absl::MutexLock lock(&mu_);
    if (!thread_.joinable()) thread_ = std::thread([this] { Background(); });
    pool_size_ = static_cast<size_t>(std::max(pool_size, 0));
    if (pool_max_pids_ != max_pids || pool_spawners_ != spawners ||
        pool_spawner_binary_ != spawner_binary) {
      // A different kind: the pooled ones do not fit (retire them, they were never used).
      for (auto& unused : pool_) retired_.push_back(std::move(unused));
      pool_.clear();
      pool_max_pids_ = max_pids;
      pool_spawners_ = spawners;
      pool_spawner_binary_ = spawner_binary;
    }
    ++in_flight_;
    if (!pool_.empty()) {
      std::unique_ptr<PidsCgroup> cgroup = std::move(pool_.front());
      pool_.pop_front();
      return cgroup;  // the background thread refills the pool once no command is in flight
    }
  }
  absl::StatusOr<std::unique_ptr<PidsCgroup>> made = Create(max_pids);
  if (!made.ok()) {
    absl::MutexLock lock(&mu_);
    --in_flight_;
  }
  return made;
}

void PidsCgroupParent::Retire(std::unique_ptr<PidsCgroup> cgroup) {
  if (cgroup == nullptr) return;
  {
    absl::MutexLock lock(&mu_);
    if (in_flight_ > 0) --in_flight_;
    if (thread_.joinable()) {
      retired_.push_back(std::move(cgroup));
      return;
    }
  }
  cgroup.reset();  // no background thread (Take was never called): removed here
}

size_t PidsCgroupParent::retiring() const {
  absl::MutexLock lock(&mu_);
  return retired_.size() + removing_;
}

void PidsCgroupParent::Background() {
  // Making a cgroup (and moving a spawner into it) and removing one take the kernel's cgroup
  // locks, which a starting command's fork, execve and exit wait for too: that work waits
  // while a command is in flight, unless the pool ran dry or too much awaits removal.
  auto has_work = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (stop_) return true;
    const bool quiet = in_flight_ == 0;
    return (!retired_.empty() && (quiet || retired_.size() >= kMaxRetiring)) ||
           (pool_.size() < pool_size_ && (quiet || pool_.empty()));
  };
  absl::MutexLock lock(&mu_);
  while (true) {
    mu_.Await(absl::Condition(&has_work));
    if (stop_) return;
    if (!retired_.empty()) {
      std::vector<std::unique_ptr<PidsCgroup>> batch;
      batch.swap(retired_);
      removing_ = batch.size();
      mu_.Unlock();
      batch.clear();  // kills what is left and removes each directory
      mu_.Lock();
      removing_ = 0;
      continue;
    }
    const uint64_t max_pids = pool_max_pids_;
    const bool spawner = pool_spawners_;
    const std::string binary = pool_spawner_binary_;
    mu_.Unlock();
    absl::StatusOr<std::unique_ptr<PidsCgroup>> fresh = Create(max_pids);
    if (fresh.ok() && spawner) {
      absl::StatusOr<std::unique_ptr<Spawner>> started =
          Spawner::Start((*fresh)->procs_fd(), binary);
      // Without one (the machine is short of processes now) it is still a fresh cgroup.
      if (started.ok()) (*fresh)->set_spawner(*std::move(started));
    }
    mu_.Lock();
    if (!fresh.ok()) {
      // The hierarchy refuses now: stop filling; Take creates on demand (and says why).
      pool_size_ = 0;
      continue;
    }
    if (max_pids == pool_max_pids_ && spawner == pool_spawners_ && binary == pool_spawner_binary_) {
      pool_.push_back(*std::move(fresh));
    } else {
      retired_.push_back(*std::move(fresh));
    }
  }
}

absl::StatusOr<std::unique_ptr<PidsCgroup>> PidsCgroupParent::Create(uint64_t max_pids) {
  // A new directory, never one that exists: it could be another command's (another parent
  // in this process shares Detect's directory).
  std::string path;
  for (int attempt = 0;; ++attempt) {
    path = absl::StrCat(path_, "/cmd-", instance_, "-", next_.fetch_add(1));
    if (mkdir(path.c_str(), 0755) == 0) break;
    if (errno != EEXIST || attempt >= 100) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot create cgroup ", path, ": ", strerror(errno)));
    }
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
