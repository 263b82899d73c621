// The call journal on the shared workspace root.
#include "executor_service/journal/call_journal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"
#include "executor_service/process/errno_status.h"
#include "executor_service/process/output_buffer.h"
#include "executor_service/process/unique_fd.h"
#include "executor_service/workspace/durable_file.h"

namespace rein {
namespace {

constexpr const char* kStarted = ".started";
constexpr const char* kReply = ".reply";
constexpr const char* kEnded = ".ended";  // runs/<run>.ended: the run's tombstone
// Longest record read back (a reply holds at most kHardMaxOutputBytes of output, escaped).
constexpr size_t kMaxRecordBytes = 64 << 20;
constexpr size_t kMaxFileNameBytes = 200;

uint64_t Fnv1a(absl::string_view s, uint64_t basis) {
  uint64_t h = basis;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

// A fingerprint of what the call does, so that a call_id reused for another call is noticed.
std::string CallHash(const JournalCall& call) {
  const std::string s = absl::StrCat(call.tool, std::string(1, '\0'), call.args_json);
  return absl::StrFormat("%016x%016x", Fnv1a(s, 14695981039346656037ull),
                         Fnv1a(s, 0x6c62272e07bb0142ull));
}

absl::Status MakeDir(const std::string& path) {
  if (mkdir(path.c_str(), 0700) != 0 && errno != EEXIST)
    return ErrnoStatus(errno, absl::StrCat("call journal: mkdir ", path));
  return absl::OkStatus();
}

// Writes `data` to a new file at `path`; with `sync`, makes its content durable (fdatasync)
// before returning. The caller makes its name durable (SyncDirectory).
absl::Status WriteRecord(const std::string& path, const std::string& data, bool sync) {
  UniqueFd fd(open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (fd.get() < 0) {
    if (errno == ENOENT)
      return absl::NotFoundError(absl::StrCat("call journal: ", path, " is gone"));
    return ErrnoStatus(errno, absl::StrCat("call journal: create ", path));
  }
  if (const int err = WriteAll(fd.get(), data); err != 0) {
    unlink(path.c_str());
    return ErrnoStatus(err, absl::StrCat("call journal: write ", path));
  }
  if (sync && fdatasync(fd.get()) != 0) {
    const int err = errno;
    unlink(path.c_str());
    return ErrnoStatus(err, absl::StrCat("call journal: fdatasync ", path));
  }
  return absl::OkStatus();
}

// Writes `data` into the empty reply file at `path` (made by the claim) and fdatasyncs it.
absl::Status WriteReply(const std::string& path, const std::string& data) {
  UniqueFd fd(open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOFOLLOW));
  if (fd.get() < 0) {
    if (errno == ENOENT)
      return absl::NotFoundError(absl::StrCat("call journal: ", path, " is gone"));
    return ErrnoStatus(errno, absl::StrCat("call journal: open ", path));
  }
  if (flock(fd.get(), LOCK_EX) != 0)
    return ErrnoStatus(errno, absl::StrCat("call journal: flock ", path));
  struct stat st;
  if (fstat(fd.get(), &st) != 0)
    return ErrnoStatus(errno, absl::StrCat("call journal: stat ", path));
  if (st.st_size != 0)
    return absl::InternalError(absl::StrCat("call journal: ", path, " was written already"));
  if (const int err = WriteAll(fd.get(), data); err != 0)
    return ErrnoStatus(err, absl::StrCat("call journal: write ", path));
  if (fdatasync(fd.get()) != 0)
    return ErrnoStatus(errno, absl::StrCat("call journal: fdatasync ", path));
  return absl::OkStatus();
}

// The whole file; NOT_FOUND when it does not exist. A reply record (`reply`) is also NOT_FOUND
// while it is empty (made by the claim, not yet written), and UNAVAILABLE while someone holds
// its exclusive flock: Finish while it writes and syncs, or a process cloned from the executor
// at that moment until it closes its descriptors. This reads under a shared lock, so a reply is
// never read torn; Begin polls an UNAVAILABLE one like a call still running.
absl::StatusOr<std::string> ReadRecordFile(const std::string& path, bool reply = false) {
  UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (fd.get() < 0) {
    if (errno == ENOENT) return absl::NotFoundError(path);
    return ErrnoStatus(errno, absl::StrCat("call journal: open ", path));
  }
  if (reply && flock(fd.get(), LOCK_SH | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) return absl::UnavailableError(absl::StrCat(path, " being written"));
    return ErrnoStatus(errno, absl::StrCat("call journal: flock ", path));
  }
  std::string data;
  char buf[65536];
  while (true) {
    ssize_t n = read(fd.get(), buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoStatus(errno, absl::StrCat("call journal: read ", path));
    if (n == 0) break;
    data.append(buf, static_cast<size_t>(n));
    if (data.size() > kMaxRecordBytes) return absl::DataLossError("record too large");
  }
  if (reply && data.empty()) return absl::NotFoundError(absl::StrCat(path, " not yet written"));
  return data;
}

// A record parsed and checked against the call; DATA_LOSS when it cannot be trusted (corrupt,
// another format, another call's record), with why.
absl::StatusOr<nlohmann::json> ParseRecord(const std::string& data, const char* kind,
                                           const JournalCall& call) {
  nlohmann::json j = nlohmann::json::parse(data, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::DataLossError(absl::StrCat("its ", kind, " record is corrupt"));
  }
  auto format = j.find("format");
  if (format == j.end() || !format->is_number_integer() || *format != kJournalFormat) {
    return absl::DataLossError(
        absl::StrCat("its ", kind, " record is of another format (",
                     format == j.end() ? std::string("none") : format->dump(), ", this executor ",
                     "reads ", kJournalFormat, ")"));
  }
  auto str = [&](const char* key) -> std::string {
    auto it = j.find(key);
    return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  if (str("record") != kind || str("call_id") != call.call_id || str("run_id") != call.run_id) {
    return absl::DataLossError(absl::StrCat("its ", kind, " record is not this call's"));
  }
  if (str("call_hash").empty()) {
    return absl::DataLossError(absl::StrCat("its ", kind, " record is corrupt"));
  }
  if (str("call_hash") != CallHash(call)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "call_id: \"", call.call_id.substr(0, 128),
        "\" was already used for a different tool or arguments (a call_id names one call)"));
  }
  return j;
}

absl::StatusOr<JournalReply> ReplyFromRecord(const nlohmann::json& j) {
  auto r = j.find("result");
  if (r == j.end() || !r->is_object()) return absl::DataLossError("its reply record is corrupt");
  JournalReply reply;
  try {
    reply.result.ok = r->at("ok").get<bool>();
    reply.result.output = r->at("output").get<std::string>();
    reply.result.truncated = r->at("truncated").get<bool>();
    reply.result.error_code = r->at("error_code").get<std::string>();
    reply.result.error_message = r->at("error_message").get<std::string>();
    reply.result.error_reason = r->value("error_reason", std::string());
    reply.result.exit_code = r->at("exit_code").get<int>();
    reply.result.timed_out = r->at("timed_out").get<bool>();
    reply.executor_id = j.at("executor_id").get<std::string>();
    reply.duration = absl::Nanoseconds(j.at("duration_ns").get<int64_t>());
  } catch (const nlohmann::json::exception&) {
    return absl::DataLossError("its reply record is corrupt");
  }
  return reply;
}

bool IsInstanceToken(absl::string_view s) {
  if (s.size() != 32) return false;
  for (char c : s) {
    if (!absl::ascii_isdigit(c) && !(c >= 'a' && c <= 'f')) return false;
  }
  return true;
}

absl::Time MtimeOf(const struct stat& st) { return absl::TimeFromTimespec(st.st_mtim); }

// Removes a run directory (flat: records and temporary files). Returns the calls it held.
int RemoveRunDir(const std::string& path) {
  int calls = 0;
  if (DIR* d = opendir(path.c_str())) {
    while (struct dirent* e = readdir(d)) {
      absl::string_view name = e->d_name;
      if (name == "." || name == "..") continue;
      if (absl::EndsWith(name, kStarted)) ++calls;
      unlinkat(dirfd(d), e->d_name, 0);
    }
    closedir(d);
  }
  rmdir(path.c_str());
  return calls;
}

}  // namespace

std::string JournalFileName(const std::string& id) {
  if (id.empty()) return "%";
  std::string out;
  for (unsigned char c : id) {
    if (absl::ascii_isalnum(c) || c == '_' || c == '-') {
      out.push_back(static_cast<char>(c));
    } else {
      absl::StrAppendFormat(&out, "%%%02X", c);
    }
  }
  if (out.size() <= kMaxFileNameBytes) return out;
  return absl::StrFormat("~%016x%016x", Fnv1a(id, 14695981039346656037ull),
                         Fnv1a(id, 0x6c62272e07bb0142ull));
}

absl::StatusOr<std::unique_ptr<CallJournal>> CallJournal::Open(CallJournalOptions options) {
  if (options.workspace_root.empty()) {
    return absl::InvalidArgumentError("call journal: the workspace root is required");
  }
  if (options.liveness_timeout < 2 * options.heartbeat_interval) {
    return absl::InvalidArgumentError(
        "call journal: the liveness timeout must be at least twice the heartbeat interval");
  }
  const std::string dir = absl::StrCat(options.workspace_root, "/", kJournalDirName);
  for (const std::string& d : {dir, dir + "/live", dir + "/runs"}) {
    absl::Status made = MakeDir(d);
    if (!made.ok()) return made;
  }
  // From the kernel, not a user-space generator whose state a fork() would copy.
  uint64_t token[2];
  if (getrandom(token, sizeof(token), 0) != sizeof(token)) {
    return ErrnoStatus(errno, "call journal: getrandom");
  }
  const std::string instance = absl::StrFormat("%016x%016x", token[0], token[1]);
  std::unique_ptr<CallJournal> journal(new CallJournal(std::move(options), dir, instance));
  absl::Status beat = journal->Beat();
  if (!beat.ok()) return beat;
  journal->background_ = std::thread([j = journal.get()] { j->BackgroundLoop(); });
  return journal;
}

CallJournal::CallJournal(CallJournalOptions options, std::string dir, std::string instance)
    : options_(std::move(options)),
      dir_(std::move(dir)),
      instance_(std::move(instance)),
      heartbeat_path_(absl::StrCat(dir_, "/live/", instance_)) {}

CallJournal::~CallJournal() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  if (background_.joinable()) background_.join();
  unlink(heartbeat_path_.c_str());
}

absl::Status CallJournal::Beat() {
  if (utimensat(AT_FDCWD, heartbeat_path_.c_str(), nullptr, 0) == 0) return absl::OkStatus();
  if (errno != ENOENT)
    return ErrnoStatus(errno, absl::StrCat("call journal: touch ", heartbeat_path_));
  UniqueFd fd(open(heartbeat_path_.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
  if (fd.get() < 0)
    return ErrnoStatus(errno, absl::StrCat("call journal: create ", heartbeat_path_));
  const std::string who = absl::StrCat(options_.executor_id, "\n");
  if (write(fd.get(), who.data(), who.size()) < 0) {
    return ErrnoStatus(errno, absl::StrCat("call journal: write ", heartbeat_path_));
  }
  return absl::OkStatus();
}

void CallJournal::BackgroundLoop() {
  Clock* const clock = options_.clock;
  absl::Time last_sweep = absl::InfinitePast();
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      const absl::Time until = clock->Now() + options_.heartbeat_interval;
      auto stopping = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stop_; };
      clock->AwaitWithDeadline(&mu_, absl::Condition(&stopping), until);
      if (stop_) return;
    }
    absl::Status beat = Beat();
    if (!beat.ok()) std::fprintf(stderr, "rein-executor: %s\n", beat.ToString().c_str());
    if (clock->Now() - last_sweep >= options_.sweep_interval) {
      SweepExpired();
      last_sweep = clock->Now();
    }
  }
}

std::string CallJournal::RunDir(const std::string& run_id) const {
  return absl::StrCat(dir_, "/runs/", JournalFileName(run_id));
}

std::string CallJournal::CallPath(const JournalCall& call, const char* suffix) const {
  return absl::StrCat(RunDir(call.run_id), "/", JournalFileName(call.call_id), suffix);
}

std::string CallJournal::TempPath(const std::string& dir) {
  return absl::StrCat(dir, "/.tmp-", instance_, "-", temp_counter_.fetch_add(1));
}

bool CallJournal::InstanceAlive(const std::string& instance, const std::string& call_key,
                                std::string* why) {
  if (instance == instance_) {
    absl::MutexLock lock(&mu_);
    if (running_.count(call_key) > 0) return true;
    *why = "this executor started it and lost it (its reply could not be recorded)";
    return false;
  }
  struct stat theirs;
  if (stat(absl::StrCat(dir_, "/live/", instance).c_str(), &theirs) != 0) {
    *why = "its heartbeat is gone (the executor stopped)";
    return false;
  }
  // Both times come from the filesystem that holds the journal, so the executors' own clocks
  // do not matter: "now" is this executor's heartbeat, touched just before.
  struct stat mine;
  if (!Beat().ok() || stat(heartbeat_path_.c_str(), &mine) != 0) return true;  // cannot judge
  const absl::Duration age = MtimeOf(mine) - MtimeOf(theirs);
  if (age > options_.liveness_timeout) {
    *why = absl::StrCat("its heartbeat stopped ",
                        absl::FormatDuration(absl::Trunc(age, absl::Milliseconds(100))),
                        " ago (the executor died mid-call)");
    return false;
  }
  // And on this executor's clock: a heartbeat seen unchanged for longer than the timeout is
  // stopped too, whatever the filesystem's clock says (a filesystem whose clock stands still,
  // or a test's fake clock).
  const absl::Time now = options_.clock->Now();
  absl::MutexLock lock(&mu_);
  auto [it, first] = seen_.try_emplace(instance, Seen{MtimeOf(theirs), now});
  Seen& seen = it->second;
  if (first || seen.mtime != MtimeOf(theirs)) {
    seen = {MtimeOf(theirs), now};
    return true;
  }
  const absl::Duration unchanged = now - seen.since;
  if (unchanged > options_.liveness_timeout) {
    *why = absl::StrCat("its heartbeat has not changed for ",
                        absl::FormatDuration(absl::Trunc(unchanged, absl::Milliseconds(100))),
                        " (the executor died mid-call)");
    return false;
  }
  return true;
}

absl::StatusOr<JournalVerdict> CallJournal::TryClaim(const JournalCall& call, bool flush) {
  const std::string reply_path = CallPath(call, kReply);
  const std::string started_path = CallPath(call, kStarted);
  auto read_reply = [&]() -> absl::StatusOr<JournalVerdict> {
    absl::StatusOr<std::string> data = ReadRecordFile(reply_path, /*reply=*/true);
    JournalVerdict v;
    if (absl::IsUnavailable(data.status())) {
      // Its writer holds the record: still running as far as a caller can tell (Begin polls).
      v.kind = JournalVerdict::Kind::kRunning;
      v.detail = absl::StrCat("the reply of call ", call.call_id, " is being written");
      return v;
    }
    if (!data.ok()) return data.status();
    absl::StatusOr<nlohmann::json> j = ParseRecord(*data, "reply", call);
    if (j.ok()) {
      absl::StatusOr<JournalReply> reply = ReplyFromRecord(*j);
      if (reply.ok()) {
        v.kind = JournalVerdict::Kind::kReplay;
        v.reply = *std::move(reply);
        return v;
      }
      j = reply.status();
    }
    if (absl::IsInvalidArgument(j.status())) return j.status();
    v.kind = JournalVerdict::Kind::kUnknown;
    v.detail = std::string(j.status().message());
    return v;
  };
  absl::StatusOr<JournalVerdict> replied = read_reply();
  if (replied.ok() || !absl::IsNotFound(replied.status())) return replied;

  nlohmann::json started = {{"format", kJournalFormat},
                            {"record", "started"},
                            {"call_id", call.call_id},
                            {"run_id", call.run_id},
                            {"tool", call.tool},
                            {"call_hash", CallHash(call)},
                            {"executor_id", options_.executor_id},
                            {"instance", instance_},
                            {"pid", static_cast<int64_t>(getpid())}};
  const std::string run_dir = RunDir(call.run_id);
  for (int attempt = 0; attempt < 3; ++attempt) {
    absl::Status made = MakeDir(run_dir);
    if (!made.ok()) return made;
    // A record already there is read, not raced for (this is the path of every poll).
    int err = EEXIST;
    struct stat existing;
    if (lstat(started_path.c_str(), &existing) != 0) {
      const std::string temp = TempPath(run_dir);
      // Only the record's name must survive a crash of the machine, and the directory's fsync
      // below makes it durable: a record whose content was lost reads as corrupt, which is an
      // unknown outcome (never run again), exactly what a crash mid-call is anyway.
      absl::Status written =
          WriteRecord(temp, started.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                      /*sync=*/false);
      if (!written.ok()) {
        if (absl::IsNotFound(written)) continue;  // the run's directory was just removed
        return written;
      }
      // Marked running before the record appears, so that this executor's other threads never
      // see its own record without the mark; a call already running here is not linked again.
      {
        absl::MutexLock lock(&mu_);
        if (!running_.insert(started_path).second) {
          unlink(temp.c_str());
          JournalVerdict v;
          v.kind = JournalVerdict::Kind::kRunning;
          v.executor_id = options_.executor_id;
          v.detail =
              absl::StrCat("call ", call.call_id, " is still running on executor ", v.executor_id);
          return v;
        }
      }
      // link() fails when the name exists, on every filesystem rein supports (including NFS,
      // where O_EXCL was long unreliable): the first executor to link wins the call.
      int rc = link(temp.c_str(), started_path.c_str());
      err = errno;
      if (rc != 0 && err != EEXIST) {
        // NFS may report an error for a link that was made (a retransmitted request): the
        // temporary file then has two names.
        struct stat st;
        if (stat(temp.c_str(), &st) == 0 && st.st_nlink == 2) rc = 0;
      }
      unlink(temp.c_str());
      if (rc != 0) {
        absl::MutexLock lock(&mu_);
        running_.erase(started_path);
      }
      if (rc == 0) {
        // The reply's file, empty ("not yet"), is made now so that the directory's fsync
        // below makes its name durable with the claim: Finish then only writes and
        // fdatasyncs it.
        UniqueFd reply(open(reply_path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
        if (reply.get() < 0) {
          const int open_errno = errno;
          Abandon(call);
          return ErrnoStatus(open_errno, absl::StrCat("call journal: create ", reply_path));
        }
        if (flush) FlushClaim(call);
        JournalVerdict v;
        v.kind = JournalVerdict::Kind::kRun;
        return v;
      }
      if (err != EEXIST) {
        if (err == ENOENT) continue;
        return ErrnoStatus(err, absl::StrCat("call journal: link ", started_path));
      }
    }
    // Someone started it: who, and are they alive?
    absl::StatusOr<std::string> data = ReadRecordFile(started_path);
    if (!data.ok()) {
      if (absl::IsNotFound(data.status())) {
        // Abandoned between our link and our read, or finished and the run forgotten.
        replied = read_reply();
        if (replied.ok() || !absl::IsNotFound(replied.status())) return replied;
        continue;
      }
      return data.status();
    }
    JournalVerdict v;
    absl::StatusOr<nlohmann::json> j = ParseRecord(*data, "started", call);
    if (!j.ok()) {
      if (absl::IsInvalidArgument(j.status())) return j.status();
      replied = read_reply();
      if (replied.ok() || !absl::IsNotFound(replied.status())) return replied;
      v.kind = JournalVerdict::Kind::kUnknown;
      v.detail = std::string(j.status().message());
      return v;
    }
    const std::string instance = j->value("instance", "");
    v.executor_id = j->value("executor_id", "");
    std::string why;
    if (IsInstanceToken(instance) && InstanceAlive(instance, started_path, &why)) {
      v.kind = JournalVerdict::Kind::kRunning;
      v.detail =
          absl::StrCat("call ", call.call_id, " is still running on executor ", v.executor_id);
      return v;
    }
    if (!IsInstanceToken(instance)) why = "its started record is corrupt";
    // It may have finished just before: the reply is written before the claim is released.
    replied = read_reply();
    if (replied.ok() || !absl::IsNotFound(replied.status())) return replied;
    v.kind = JournalVerdict::Kind::kUnknown;
    v.detail =
        absl::StrCat("executor ", v.executor_id, " started call ", call.call_id, " and ", why);
    return v;
  }
  return absl::InternalError(absl::StrCat("call journal: cannot record call ", call.call_id,
                                          " (its run's journal keeps disappearing)"));
}

absl::Status CallJournal::CheckNotEnded(const std::string& run_id) const {
  struct stat st;
  if (lstat(EndedPath(run_id).c_str(), &st) == 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "run ", run_id, " has ended (its journal was forgotten): its calls are not run again"));
  }
  return absl::OkStatus();
}

std::string CallJournal::EndedPath(const std::string& run_id) const {
  return RunDir(run_id) + kEnded;
}

void CallJournal::FlushClaim(const JournalCall& call) {
  SyncDirectory(RunDir(call.run_id));
  if (options_.after_claim_flush) options_.after_claim_flush();
}

absl::StatusOr<JournalVerdict> CallJournal::Begin(const JournalCall& call, absl::Time wait_until) {
  return BeginClaim(call, wait_until, /*flush=*/true);
}

absl::StatusOr<JournalVerdict> CallJournal::BeginUnflushed(const JournalCall& call,
                                                           absl::Time wait_until) {
  return BeginClaim(call, wait_until, /*flush=*/false);
}

absl::StatusOr<JournalVerdict> CallJournal::BeginClaim(const JournalCall& call,
                                                       absl::Time wait_until, bool flush) {
  while (true) {
    // A call of a run that has ended is refused: a request delayed in the network (sent by a
    // router before it lost its lease) must not run after the run's records are gone.
    RETURN_IF_ERROR(CheckNotEnded(call.run_id));
    absl::StatusOr<JournalVerdict> v = TryClaim(call, flush);
    if (v.ok() && v->kind == JournalVerdict::Kind::kRun) {
      // ForgetRun may have come between the check and the claim.
      absl::Status ended = CheckNotEnded(call.run_id);
      if (!ended.ok()) {
        Abandon(call);
        return ended;
      }
    }
    if (!v.ok() || v->kind != JournalVerdict::Kind::kRunning) return v;
    const absl::Time now = options_.clock->Now();
    if (now >= wait_until) return v;
    options_.clock->SleepUntil(now + std::min(absl::Milliseconds(50), wait_until - now));
  }
}

absl::Status CallJournal::Finish(const JournalCall& call, const JournalReply& reply) {
  const std::string started_path = CallPath(call, kStarted);
  const ToolResult& r = reply.result;
  nlohmann::json record = {{"format", kJournalFormat},
                           {"record", "reply"},
                           {"call_id", call.call_id},
                           {"run_id", call.run_id},
                           {"call_hash", CallHash(call)},
                           {"executor_id", reply.executor_id},
                           {"duration_ns", absl::ToInt64Nanoseconds(reply.duration)},
                           {"result",
                            {{"ok", r.ok},
                             {"output", SanitizeUtf8(r.output)},
                             {"truncated", r.truncated},
                             {"error_code", SanitizeUtf8(r.error_code)},
                             {"error_message", SanitizeUtf8(r.error_message)},
                             {"error_reason", SanitizeUtf8(r.error_reason)},
                             {"exit_code", r.exit_code},
                             {"timed_out", r.timed_out}}}};
  // Written in place into the file the claim made (its name is already durable), under an
  // exclusive flock so that a reader never takes a half-written reply for a corrupt one, and
  // fdatasynced: one flush. A reply that could not be written completely reads as corrupt (an
  // unknown outcome), never as another reply.
  absl::Status status =
      WriteReply(CallPath(call, kReply),
                 record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  absl::MutexLock lock(&mu_);
  running_.erase(started_path);
  return status;
}

void CallJournal::Abandon(const JournalCall& call) {
  const std::string started_path = CallPath(call, kStarted);
  unlink(CallPath(call, kReply).c_str());  // still empty: nothing was run
  unlink(started_path.c_str());
  absl::MutexLock lock(&mu_);
  running_.erase(started_path);
}

absl::StatusOr<int> CallJournal::ForgetRun(const std::string& run_id) {
  const std::string path = RunDir(run_id);
  // First the tombstone (kept for the retention period), then the records: from here on no
  // call of the run is claimed, so none can run again once its record is gone.
  const std::string ended = EndedPath(run_id);
  struct stat tomb;
  if (lstat(ended.c_str(), &tomb) != 0) {
    absl::Status written = WriteRecord(ended, "ended\n", /*sync=*/true);
    if (written.ok()) SyncDirectory(absl::StrCat(dir_, "/runs"));
    // Another executor may have written it just now (ForgetRun goes to any of them).
    if (!written.ok() && lstat(ended.c_str(), &tomb) != 0) return written;
  }
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return 0;
    return ErrnoStatus(errno, absl::StrCat("call journal: stat ", path));
  }
  return RemoveRunDir(path);
}

int CallJournal::SweepExpired() {
  struct stat mine;
  if (!Beat().ok() || stat(heartbeat_path_.c_str(), &mine) != 0) return 0;
  const absl::Time now = MtimeOf(mine);
  int removed = 0;
  const std::string runs = dir_ + "/runs";
  if (DIR* d = opendir(runs.c_str())) {
    std::vector<std::string> old;
    while (struct dirent* e = readdir(d)) {
      absl::string_view name = e->d_name;
      if (name == "." || name == "..") continue;
      struct stat st;
      if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
      if (S_ISREG(st.st_mode) && absl::EndsWith(name, kEnded)) {
        // A tombstone of a run forgotten longer ago than any of its calls may be in flight.
        if (now - MtimeOf(st) > options_.retention) unlinkat(dirfd(d), e->d_name, 0);
        continue;
      }
      if (!S_ISDIR(st.st_mode)) continue;
      if (now - MtimeOf(st) > options_.retention) old.push_back(e->d_name);
    }
    closedir(d);
    for (const std::string& name : old) {
      RemoveRunDir(absl::StrCat(runs, "/", name));
      ++removed;
    }
  }
  const std::string live = dir_ + "/live";
  if (DIR* d = opendir(live.c_str())) {
    while (struct dirent* e = readdir(d)) {
      absl::string_view name = e->d_name;
      if (name == "." || name == ".." || name == instance_) continue;
      struct stat st;
      if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
          now - MtimeOf(st) > options_.retention) {
        unlinkat(dirfd(d), e->d_name, 0);
      }
    }
    closedir(d);
  }
  return removed;
}

}  // namespace rein
