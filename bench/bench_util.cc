// Shared pieces of the benchmarks (see bench_util.h).
#include "bench/bench_util.h"

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace rein::bench {

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = std::min(v.size() - 1, static_cast<size_t>(p * (v.size() - 1) + 0.5));
  return v[i];
}

void PrintBench(const std::string& key, double value, const std::string& unit) {
  printf("BENCH\t%s\t%.6g\t%s\n", key.c_str(), value, unit.c_str());
  fflush(stdout);
}

long RssKiB(pid_t pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

absl::Duration CpuTime(pid_t pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/stat"));
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // The command name may hold spaces and parentheses: the fields start after the last ')'.
  size_t close = all.rfind(')');
  if (close == std::string::npos) return absl::Seconds(-1);
  std::istringstream fields(all.substr(close + 2));
  std::string field;
  long utime = -1, stime = -1;
  // Field 3 (state) is the first after ')'; utime and stime are fields 14 and 15.
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i == 14) utime = std::stol(field);
    if (i == 15) stime = std::stol(field);
  }
  if (utime < 0 || stime < 0) return absl::Seconds(-1);
  return absl::Seconds(static_cast<double>(utime + stime) / sysconf(_SC_CLK_TCK));
}

ScratchDir::ScratchDir(const std::string& prefix) {
  std::string pattern = prefix + "XXXXXX";
  if (mkdtemp(pattern.data()) != nullptr) path_ = pattern;
}

ScratchDir::~ScratchDir() {
  if (keep_ || path_.empty()) return;
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

Watchdog::Watchdog(std::string name) : name_(std::move(name)), thread_([this] { Loop(); }) {}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void Watchdog::Enter(const std::string& phase, absl::Duration limit) {
  std::lock_guard<std::mutex> lock(mu_);
  phase_ = phase;
  limit_ = limit;
  deadline_ = absl::Now() + limit;
}

void Watchdog::AddChild(pid_t pid) {
  std::lock_guard<std::mutex> lock(mu_);
  children_.push_back(pid);
}

void Watchdog::RemoveChild(pid_t pid) {
  std::lock_guard<std::mutex> lock(mu_);
  children_.erase(std::remove(children_.begin(), children_.end(), pid), children_.end());
}

void Watchdog::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    cv_.wait_for(lock, std::chrono::milliseconds(100));
    if (stop_ || absl::Now() < deadline_) continue;
    printf("%s: phase %s timed out after %s\n", name_.c_str(), phase_.c_str(),
           absl::FormatDuration(limit_).c_str());
    fflush(stdout);
    for (pid_t pid : children_) {
      kill(-pid, SIGKILL);  // its group, when it leads one
      kill(pid, SIGKILL);
    }
    _exit(3);
  }
}

}  // namespace rein::bench
