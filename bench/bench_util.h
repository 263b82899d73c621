// Shared pieces of the benchmarks: percentiles, the BENCH line format, process figures from
// /proc, a scratch directory, and a watchdog that ends a benchmark whose phase overruns its
// deadline.
#ifndef REIN_BENCH_BENCH_UTIL_H_
#define REIN_BENCH_BENCH_UTIL_H_

#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/time.h"

namespace rein::bench {

// The p-th percentile (0..1) of `v` by nearest rank; 0 for an empty vector.
double Percentile(std::vector<double> v, double p);

// Prints one machine-readable figure: "BENCH\t<key>\t<value>\t<unit>\n" on stdout, flushed.
// Keys are lowercase and dot-separated, starting with the benchmark's section.
void PrintBench(const std::string& key, double value, const std::string& unit);

// Resident set size of `pid` in KiB (VmRSS), or -1 when it cannot be read.
long RssKiB(pid_t pid);

// User plus system CPU time `pid` has used so far (from /proc/<pid>/stat), or a negative
// duration when it cannot be read.
absl::Duration CpuTime(pid_t pid);

// A new directory <prefix>XXXXXX (mkdtemp), removed with its contents on destruction unless
// kept; path() is empty when it could not be made.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& prefix);
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::string& path() const { return path_; }
  // Leaves the directory in place (for the logs in it).
  void Keep() { keep_ = true; }

 private:
  std::string path_;
  bool keep_ = false;
};

// Ends the whole process when a phase runs past its deadline: prints
// "<name>: phase <phase> timed out after <limit>", SIGKILLs the registered child processes
// (their process groups too) and exits with status 3. A benchmark calls Enter at the start of
// each phase; the orchestrator's own timeout is the second line of defence.
// Thread-safe.
class Watchdog {
 public:
  explicit Watchdog(std::string name);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  void Enter(const std::string& phase, absl::Duration limit);
  // A child process to kill (with its process group, when it leads one) on a timeout.
  void AddChild(pid_t pid);
  void RemoveChild(pid_t pid);

 private:
  void Loop();

  const std::string name_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::string phase_;
  absl::Time deadline_ = absl::InfiniteFuture();
  absl::Duration limit_;
  std::vector<pid_t> children_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace rein::bench

#endif  // REIN_BENCH_BENCH_UTIL_H_
