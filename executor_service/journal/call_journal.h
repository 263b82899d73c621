// The call journal: makes a mutating call run at most once across every executor that shares
// one --workspace_root, and lets any of them answer a repeated call_id from what was recorded.
#ifndef REIN_EXECUTOR_SERVICE_CALL_JOURNAL_H_
#define REIN_EXECUTOR_SERVICE_CALL_JOURNAL_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "executor_service/tools/tool.h"

namespace rein {

// The journal lives in <workspace_root>/kJournalDirName (workspace.h): a reserved workspace
// name (ValidateWorkspaceName refuses it), so no run can open it as its workspace, and outside
// every workspace, so no tool path (resolved beneath the workspace) and no sandboxed command
// (which sees only its workspace) can reach it.
// The version written into every record; a record of any other version is not trusted.
inline constexpr int kJournalFormat = 1;

struct CallJournalOptions {
  std::string workspace_root;  // the shared --workspace_root
  std::string executor_id;     // written into every record this executor makes
  // This executor's heartbeat file is touched this often...
  absl::Duration heartbeat_interval = absl::Seconds(1);
  // ...and another executor whose heartbeat is older than this (by the shared filesystem's own
  // clock) is dead: the calls it started and did not finish have an unknown outcome.
  absl::Duration liveness_timeout = absl::Seconds(5);
  // Runs whose journal was last written longer ago than this are removed (--journal_retention).
  absl::Duration retention = absl::Hours(24 * 7);
  // How often the journal is swept for runs past `retention`.
  absl::Duration sweep_interval = absl::Hours(1);
  // Times the heartbeat, the sweeps and Begin's polling, and how long another executor's
  // heartbeat has been seen unchanged. Not owned; never null.
  Clock* clock = RealClock();
  // Tests: called after a claim's flush (the run directory's fsync) returned.
  std::function<void()> after_claim_flush;
};

// The identity of one mutating call, as the request gave it.
struct JournalCall {
  std::string call_id;
  std::string run_id;  // may be empty
  std::string tool;
  std::string args_json;
};

// A finished call's reply as recorded.
struct JournalReply {
  ToolResult result;
  std::string executor_id;  // the executor that ran it
  absl::Duration duration = absl::ZeroDuration();
};

// What the journal says about a call when an executor receives it.
struct JournalVerdict {
  enum class Kind {
    kRun,      // this executor has claimed the call: run it, then Finish (or Abandon)
    kReplay,   // the call finished: `reply` is its recorded reply; run nothing
    kRunning,  // the call is running on a live executor (`executor_id`): ask again later
    kUnknown,  // the executor that started it died mid-call, or no record can be trusted
  };
  Kind kind = Kind::kRun;
  JournalReply reply;       // kReplay
  std::string executor_id;  // kRunning, kUnknown: the executor that started it, when known
  std::string detail;       // kUnknown, kRunning: why, for a person
};

// One executor's view of the shared journal. Layout under <root>/.rein-journal/:
//   live/<instance>                 this process's heartbeat (instance: random, per start)
//   runs/<run>/<call>.started       who started the call, created atomically with link()
//   runs/<run>/<call>.reply         the reply: created empty by the claim ("not yet"), then
//                                   written in place under an exclusive flock and fdatasynced
//                                   before the reply is sent
// One flush before the call runs (the directory's fsync after the claim makes both names
// durable; a started record whose content a crash lost reads as corrupt: an unknown outcome,
// never run again) and one after (the reply's fdatasync). A reply that is empty or locked is
// not there yet; one that does not parse is corrupt (unknown outcome).
// File names are the ids with every byte outside [A-Za-z0-9_-] escaped as %XX (long ids
// hashed); each record also holds the id itself, checked on reading.
// Thread-safe; a background thread keeps the heartbeat and sweeps old runs.
class CallJournal {
 public:
  // Creates the journal's directories (if missing) and this executor's heartbeat.
  static absl::StatusOr<std::unique_ptr<CallJournal>> Open(CallJournalOptions options);
  // Stops the heartbeat and removes it: calls of this process still unfinished become unknown.
  ~CallJournal();

  CallJournal(const CallJournal&) = delete;
  CallJournal& operator=(const CallJournal&) = delete;

  // The journal directory (<root>/.rein-journal).
  const std::string& dir() const { return dir_; }
  // This process's liveness token (its heartbeat file's name).
  const std::string& instance() const { return instance_; }

  // Claims `call` for this executor, or says why not. While the call runs on a live executor,
  // waits (polling) until it finishes, that executor dies, or `wait_until`. INVALID_ARGUMENT
  // when the call_id was recorded for a different tool or arguments; INTERNAL when the
  // journal cannot be written.
  absl::StatusOr<JournalVerdict> Begin(const JournalCall& call, absl::Time wait_until);
  // Begin, but a claim (kRun) is returned before its flush: the caller must call FlushClaim
  // and let it return before the call runs (the caller overlaps the flush with work that does
  // not run the call, the workspace snapshot).
  absl::StatusOr<JournalVerdict> BeginUnflushed(const JournalCall& call, absl::Time wait_until);
  // Makes a claim returned by BeginUnflushed durable (the run directory's fsync).
  void FlushClaim(const JournalCall& call);
  // Records the reply of a call claimed by Begin (kRun) and releases the claim.
  absl::Status Finish(const JournalCall& call, const JournalReply& reply);
  // Drops the claim of a call that was claimed but not run (the started record goes).
  void Abandon(const JournalCall& call);

  // Removes the journal of `run_id` (the run ended) and leaves a tombstone, runs/<run>.ended,
  // kept for the retention period: from then on Begin refuses the run's calls
  // (FAILED_PRECONDITION), so a request that arrives late (delayed in a partitioned network
  // from a router that lost its lease) cannot run again once its record is gone. Returns how
  // many calls were forgotten.
  absl::StatusOr<int> ForgetRun(const std::string& run_id);
  // Removes every run whose journal was last written before `retention` ago (by the shared
  // filesystem's clock) and heartbeats of executors gone as long. Returns runs removed.
  int SweepExpired();

  // Touches this executor's heartbeat now (the background thread does it every interval).
  absl::Status Beat();

 private:
  CallJournal(CallJournalOptions options, std::string dir, std::string instance);
  void BackgroundLoop();
  // One look at the call (no waiting); kRun means "claimed".
  absl::StatusOr<JournalVerdict> TryClaim(const JournalCall& call, bool flush);
  absl::StatusOr<JournalVerdict> BeginClaim(const JournalCall& call, absl::Time wait_until,
                                            bool flush);
  // Whether the executor instance that wrote a started record is alive.
  bool InstanceAlive(const std::string& instance, const std::string& call_key, std::string* why);
  std::string RunDir(const std::string& run_id) const;
  // runs/<run>.ended, written by ForgetRun: the run has ended and its calls are refused.
  std::string EndedPath(const std::string& run_id) const;
  absl::Status CheckNotEnded(const std::string& run_id) const;
  std::string CallPath(const JournalCall& call, const char* suffix) const;
  std::string TempPath(const std::string& dir);

  CallJournalOptions options_;
  std::string dir_;
  std::string instance_;
  std::string heartbeat_path_;
  std::atomic<uint64_t> temp_counter_{0};

  absl::Mutex mu_;
  // Calls this process has claimed and not finished (by their started record's path).
  std::set<std::string> running_ ABSL_GUARDED_BY(mu_);

  // Per other executor instance: its heartbeat's mtime when last seen, and since when (on
  // options_.clock) it has been seen unchanged.
  struct Seen {
    absl::Time mtime;
    absl::Time since;
  };
  std::map<std::string, Seen> seen_ ABSL_GUARDED_BY(mu_);

  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread background_;
};

// The journal file name of an id: bytes outside [A-Za-z0-9_-] as %XX, "%" for the empty id,
// and "~" + a 128-bit hex digest when that would pass 200 bytes. Exposed for tests.
std::string JournalFileName(const std::string& id);

}  // namespace rein

#endif  // REIN_EXECUTOR_SERVICE_CALL_JOURNAL_H_
