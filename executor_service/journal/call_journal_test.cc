// Tests of the call journal: at most once across executors, replay, liveness, bad records,
// cleanup.
#include "executor_service/journal/call_journal.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/testing/fake_clock.h"
#include "gtest/gtest.h"

namespace rein {
namespace {

using Kind = JournalVerdict::Kind;

class CallJournalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string base = getenv("TEST_TMPDIR") ? getenv("TEST_TMPDIR") : "/tmp";
    std::string tmpl = base + "/journal-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    root_ = tmpl;
  }

  std::unique_ptr<CallJournal> Open(const std::string& executor_id,
                                    absl::Duration heartbeat = absl::Seconds(1),
                                    absl::Duration liveness = absl::Seconds(5),
                                    Clock* clock = RealClock()) {
    CallJournalOptions options;
    options.clock = clock;
    options.workspace_root = root_;
    options.executor_id = executor_id;
    options.heartbeat_interval = heartbeat;
    options.liveness_timeout = liveness;
    absl::StatusOr<std::unique_ptr<CallJournal>> journal = CallJournal::Open(options);
    EXPECT_TRUE(journal.ok()) << journal.status();
    return journal.ok() ? *std::move(journal) : nullptr;
  }

  std::string StartedPath(const JournalCall& call) const {
    return absl::StrCat(root_, "/.rein-journal/runs/", JournalFileName(call.run_id), "/",
                        JournalFileName(call.call_id), ".started");
  }

  static JournalCall Call(const std::string& id = "run-1-3") {
    return JournalCall{id, "run-1", "run_command", R"({"shell":"echo x >> n"})"};
  }

  static JournalReply Reply(const std::string& executor_id, const std::string& output) {
    JournalReply reply;
    reply.result.ok = true;
    reply.result.output = output;
    reply.executor_id = executor_id;
    reply.duration = absl::Milliseconds(1234);
    return reply;
  }

  static void Overwrite(const std::string& path, const std::string& content) {
    std::ofstream out(path, std::ios::trunc);
    out << content;
  }

  std::string root_;
};

TEST_F(CallJournalTest, FinishedCallIsReplayedOnAnotherExecutor) {
  auto a = Open("exec-a");
  auto b = Open("exec-b");
  absl::StatusOr<JournalVerdict> first = a->Begin(Call(), absl::Now());
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->kind, Kind::kRun);
  ASSERT_TRUE(a->Finish(Call(), Reply("exec-a", "ran once\n\xff")).ok());
  absl::StatusOr<JournalVerdict> again = b->Begin(Call(), absl::Now());
  ASSERT_TRUE(again.ok()) << again.status();
  ASSERT_EQ(again->kind, Kind::kReplay);
  EXPECT_EQ(again->reply.executor_id, "exec-a");
  EXPECT_EQ(again->reply.result.output, "ran once\n\xEF\xBF\xBD");  // sanitized as on the wire
  EXPECT_EQ(again->reply.duration, absl::Milliseconds(1234));
  // The executor that ran it replays too.
  absl::StatusOr<JournalVerdict> same = a->Begin(Call(), absl::Now());
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->kind, Kind::kReplay);
}

TEST_F(CallJournalTest, ThreadsOfTwoExecutorsRunEachCallOnce) {
  auto a = Open("exec-a");
  auto b = Open("exec-b");
  for (int c = 0; c < 20; ++c) {
    const JournalCall call = Call(absl::StrCat("run-1-", c));
    std::atomic<int> runs{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t) {
      CallJournal* j = t % 2 == 0 ? a.get() : b.get();
      threads.emplace_back([j, &call, &runs] {
        absl::StatusOr<JournalVerdict> v = j->Begin(call, absl::Now() + absl::Seconds(10));
        ASSERT_TRUE(v.ok()) << v.status();
        if (v->kind == Kind::kRun) {
          runs++;
          absl::SleepFor(absl::Milliseconds(5));
          ASSERT_TRUE(j->Finish(call, Reply("x", "done")).ok());
        } else {
          EXPECT_EQ(v->kind, Kind::kReplay);  // the others waited for the one that ran
        }
      });
    }
    for (auto& t : threads) t.join();
    EXPECT_EQ(runs.load(), 1) << call.call_id;
  }
}

TEST_F(CallJournalTest, ProcessesRacingOnOneCallIdRunItOnce) {
  constexpr int kProcesses = 6;
  constexpr int kCalls = 20;
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  std::vector<pid_t> pids;
  for (int p = 0; p < kProcesses; ++p) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(fds[0]);
      CallJournalOptions options;
      options.workspace_root = root_;
      options.executor_id = absl::StrCat("proc-", p);
      auto journal = CallJournal::Open(options);
      if (!journal.ok()) _exit(3);
      for (int c = 0; c < kCalls; ++c) {
        const JournalCall call = Call(absl::StrCat("run-1-", c));
        auto v = (*journal)->Begin(call, absl::Now() + absl::Seconds(20));
        if (!v.ok()) {
          fprintf(stderr, "child %d: %s\n", p, v.status().ToString().c_str());
          _exit(4);
        }
        if (v->kind == Kind::kRun) {
          char byte = static_cast<char>(c);
          if (write(fds[1], &byte, 1) != 1) _exit(5);
          if (!(*journal)->Finish(call, Reply(options.executor_id, "ok")).ok()) _exit(6);
        } else if (v->kind != Kind::kReplay) {
          _exit(7);
        }
      }
      journal->reset();
      _exit(0);
    }
    pids.push_back(pid);
  }
  close(fds[1]);
  for (pid_t pid : pids) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  }
  std::vector<int> runs(kCalls, 0);
  char byte;
  while (read(fds[0], &byte, 1) == 1) runs[static_cast<unsigned char>(byte)]++;
  close(fds[0]);
  for (int c = 0; c < kCalls; ++c) EXPECT_EQ(runs[c], 1) << "call " << c;
}

TEST_F(CallJournalTest, CallRunningOnLiveExecutorIsWaitedFor) {
  auto a = Open("exec-a");
  auto b = Open("exec-b");
  ASSERT_EQ(a->Begin(Call(), absl::Now())->kind, Kind::kRun);
  absl::StatusOr<JournalVerdict> busy = b->Begin(Call(), absl::Now() + absl::Milliseconds(100));
  ASSERT_TRUE(busy.ok());
  EXPECT_EQ(busy->kind, Kind::kRunning);
  EXPECT_EQ(busy->executor_id, "exec-a");
  std::thread finisher([&] {
    absl::SleepFor(absl::Milliseconds(300));
    ASSERT_TRUE(a->Finish(Call(), Reply("exec-a", "late")).ok());
  });
  absl::StatusOr<JournalVerdict> waited = b->Begin(Call(), absl::Now() + absl::Seconds(10));
  finisher.join();
  ASSERT_TRUE(waited.ok());
  ASSERT_EQ(waited->kind, Kind::kReplay);
  EXPECT_EQ(waited->reply.result.output, "late");
}

TEST_F(CallJournalTest, ExecutorGoneMidCallIsUnknown) {
  auto a = Open("exec-a");
  auto b = Open("exec-b");
  ASSERT_EQ(a->Begin(Call(), absl::Now())->kind, Kind::kRun);
  a.reset();  // stopped with the call unfinished: its heartbeat goes
  absl::StatusOr<JournalVerdict> v = b->Begin(Call(), absl::Now() + absl::Seconds(10));
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->kind, Kind::kUnknown);
  EXPECT_EQ(v->executor_id, "exec-a");
  EXPECT_NE(v->detail.find("heartbeat is gone"), std::string::npos) << v->detail;
}

TEST_F(CallJournalTest, StaleHeartbeatIsDeadExecutor) {
  // exec-a beats rarely; its heartbeat is made old as a SIGKILLed executor's would be.
  auto a = Open("exec-a", /*heartbeat=*/absl::Hours(1), /*liveness=*/absl::Hours(2));
  auto b = Open("exec-b", absl::Seconds(1), /*liveness=*/absl::Seconds(3));
  ASSERT_EQ(a->Begin(Call(), absl::Now())->kind, Kind::kRun);
  EXPECT_EQ(b->Begin(Call(), absl::Now())->kind, Kind::kRunning);  // fresh: alive
  const std::string heartbeat = absl::StrCat(a->dir(), "/live/", a->instance());
  struct timespec times[2];
  times[0].tv_sec = times[1].tv_sec = time(nullptr) - 10;
  times[0].tv_nsec = times[1].tv_nsec = 0;
  ASSERT_EQ(utimensat(AT_FDCWD, heartbeat.c_str(), times, 0), 0);
  absl::StatusOr<JournalVerdict> v = b->Begin(Call(), absl::Now() + absl::Seconds(10));
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->kind, Kind::kUnknown);
  EXPECT_NE(v->detail.find("died mid-call"), std::string::npos) << v->detail;
}

TEST_F(CallJournalTest, ClaimOfAnExecutorWhoseHeartbeatStopsOnAFakeClockBecomesUnknown) {
  // Each executor has a clock of its own. exec-a's never moves, so it never beats again after
  // Open: to exec-b it is an executor that hung or died holding its claim.
  FakeClock a_clock;
  FakeClock b_clock;
  auto a = Open("exec-a", absl::Seconds(1), absl::Seconds(5), &a_clock);
  auto b = Open("exec-b", absl::Seconds(1), absl::Seconds(5), &b_clock);
  ASSERT_EQ(a->Begin(Call(), a_clock.Now())->kind, Kind::kRun);
  absl::StatusOr<JournalVerdict> busy = b->Begin(Call(), b_clock.Now());
  ASSERT_TRUE(busy.ok()) << busy.status();
  EXPECT_EQ(busy->kind, Kind::kRunning);  // seen for the first time: alive
  b_clock.Advance(absl::Seconds(4));
  EXPECT_EQ(b->Begin(Call(), b_clock.Now())->kind, Kind::kRunning);  // within the timeout
  // Begin's polls move b's clock (FakeClock::kSleepMovesTime): it waits past the liveness
  // timeout without a real sleep, and finds the claim's owner dead.
  absl::StatusOr<JournalVerdict> v = b->Begin(Call(), b_clock.Now() + absl::Seconds(10));
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->kind, Kind::kUnknown);
  EXPECT_EQ(v->executor_id, "exec-a");
  EXPECT_NE(v->detail.find("has not changed for"), std::string::npos) << v->detail;
}

TEST_F(CallJournalTest, CorruptStartedRecordIsUnknown) {
  auto a = Open("exec-a");
  auto b = Open("exec-b");
  ASSERT_EQ(a->Begin(Call(), absl::Now())->kind, Kind::kRun);
  Overwrite(StartedPath(Call()), "{\"format\": 1, \"record\": \"sta");
  absl::StatusOr<JournalVerdict> v = b->Begin(Call(), absl::Now());
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->kind, Kind::kUnknown);
  EXPECT_NE(v->detail.find("corrupt"), std::string::npos) << v->detail;
}

TEST_F(CallJournalTest, CorruptReplyRecordIsUnknown) {
  auto a = Open("exec-a");
  ASSERT_EQ(a->Begin(Call(), absl::Now())->kind, Kind::kRun);
  ASSERT_TRUE(a->Finish(Call(), Reply("exec-a", "x")).ok());
  std::string reply = StartedPath(Call());
  reply.replace(reply.size() - std::string(".started").size(), std::string::npos, ".reply");
  Overwrite(reply, "\x01garbage");
  auto b = Open("exec-b");
  absl::StatusOr<JournalVerdict> v = b->Begin(Call(), absl::Now());
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->kind, Kind::kUnknown);
}

TEST_F(CallJournalTest, AReplyBeingWrittenIsRunningAndAHalfWrittenOneIsUnknown) {
  auto a = Open("exec-a");
  auto b = Open("exec-b");
  ASSERT_EQ(a->Begin(Call(), absl::Now())->kind, Kind::kRun);
  std::string path = StartedPath(Call());
  path.replace(path.size() - std::string(".started").size(), std::string::npos, ".reply");
  const int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0) << "the claim makes the reply's file";
  EXPECT_EQ(b->Begin(Call(), absl::Now())->kind, Kind::kRunning);  // empty: not yet
  // Finish's writer holds an exclusive lock while it writes: a reader that sees part of it
  // waits, it does not call it corrupt.
  ASSERT_EQ(flock(fd, LOCK_EX), 0);
  const std::string part = "{\"format\": 1, \"record\": \"rep";
  ASSERT_EQ(write(fd, part.data(), part.size()), static_cast<ssize_t>(part.size()));
  EXPECT_EQ(b->Begin(Call(), absl::Now())->kind, Kind::kRunning);
  // A writer gone half-way leaves a corrupt reply: unknown, never run again.
  close(fd);
  absl::StatusOr<JournalVerdict> v = b->Begin(Call(), absl::Now());
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->kind, Kind::kUnknown);
  EXPECT_NE(v->detail.find("corrupt"), std::string::npos) << v->detail;
}

// A process cloned from the executor while Finish held the reply's lock keeps a copy of that
// lock until it closes its descriptors. A retry of the finished call on the same executor sees
// it as running, and polling until the lock goes replays the reply; it never calls a durable
// reply unknown.
TEST_F(CallJournalTest, ALockOutlivingFinishIsWaitedForNotCalledUnknown) {
  auto a = Open("exec-a");
  ASSERT_EQ(a->Begin(Call(), absl::Now())->kind, Kind::kRun);
  ASSERT_TRUE(a->Finish(Call(), Reply("exec-a", "done")).ok());
  std::string path = StartedPath(Call());
  path.replace(path.size() - std::string(".started").size(), std::string::npos, ".reply");
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(flock(fd, LOCK_EX), 0);
  std::thread release([fd] {
    absl::SleepFor(absl::Milliseconds(300));
    close(fd);
  });
  absl::StatusOr<JournalVerdict> running = a->Begin(Call(), absl::Now());
  ASSERT_TRUE(running.ok()) << running.status();
  EXPECT_EQ(running->kind, Kind::kRunning) << running->detail;
  absl::StatusOr<JournalVerdict> v = a->Begin(Call(), absl::Now() + absl::Seconds(10));
  release.join();
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->kind, Kind::kReplay) << v->detail;
}

TEST_F(CallJournalTest, OlderFormatRecordIsUnknown) {
  auto a = Open("exec-a");
  ASSERT_EQ(a->Begin(Call(), absl::Now())->kind, Kind::kRun);
  const JournalCall call = Call();
  Overwrite(StartedPath(call), absl::StrCat(R"({"format": 0, "record": "started", "call_id": ")",
                                            call.call_id, R"(", "run_id": "run-1"})"));
  auto b = Open("exec-b");
  absl::StatusOr<JournalVerdict> v = b->Begin(call, absl::Now());
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->kind, Kind::kUnknown);
  EXPECT_NE(v->detail.find("another format"), std::string::npos) << v->detail;
}

TEST_F(CallJournalTest, CallIdReusedForOtherArgumentsIsRefused) {
  auto a = Open("exec-a");
  ASSERT_EQ(a->Begin(Call(), absl::Now())->kind, Kind::kRun);
  ASSERT_TRUE(a->Finish(Call(), Reply("exec-a", "x")).ok());
  JournalCall other = Call();
  other.args_json = R"({"shell":"rm -rf ."})";
  absl::StatusOr<JournalVerdict> v = a->Begin(other, absl::Now());
  EXPECT_EQ(v.status().code(), absl::StatusCode::kInvalidArgument) << v.status();
}

TEST_F(CallJournalTest, AbandonedCallCanBeClaimedAgain) {
  auto a = Open("exec-a");
  auto b = Open("exec-b");
  ASSERT_EQ(a->Begin(Call(), absl::Now())->kind, Kind::kRun);
  a->Abandon(Call());
  EXPECT_EQ(b->Begin(Call(), absl::Now())->kind, Kind::kRun);
}

TEST_F(CallJournalTest, ForgetRunRemovesItsRecords) {
  auto a = Open("exec-a");
  for (int c = 0; c < 3; ++c) {
    const JournalCall call = Call(absl::StrCat("run-1-", c));
    ASSERT_EQ(a->Begin(call, absl::Now())->kind, Kind::kRun);
    ASSERT_TRUE(a->Finish(call, Reply("exec-a", "x")).ok());
  }
  JournalCall other{"run-2-1", "run-2", "write_file", "{}"};
  ASSERT_EQ(a->Begin(other, absl::Now())->kind, Kind::kRun);
  absl::StatusOr<int> forgotten = a->ForgetRun("run-1");
  ASSERT_TRUE(forgotten.ok());
  EXPECT_EQ(*forgotten, 3);
  struct stat st;
  EXPECT_NE(stat(absl::StrCat(a->dir(), "/runs/run-1").c_str(), &st), 0);
  EXPECT_EQ(stat(absl::StrCat(a->dir(), "/runs/run-2").c_str(), &st), 0);
  EXPECT_EQ(*a->ForgetRun("run-1"), 0);  // twice is harmless
  // A call of the ended run that arrives late (a request from a router that lost its lease,
  // delayed in a partitioned network) never runs again now that its record is gone, on any
  // executor.
  auto b = Open("exec-b");
  for (CallJournal* journal : {a.get(), b.get()}) {
    absl::StatusOr<JournalVerdict> late = journal->Begin(Call("run-1-0"), absl::Now());
    EXPECT_EQ(late.status().code(), absl::StatusCode::kFailedPrecondition) << late.status();
    EXPECT_TRUE(absl::StrContains(late.status().message(), "has ended")) << late.status();
  }
  EXPECT_EQ(b->Begin(other, absl::Now())->kind, Kind::kRunning);  // other runs are unaffected
}

TEST_F(CallJournalTest, SweepRemovesRunsPastRetention) {
  auto a = Open("exec-a");
  for (const char* run : {"old", "new"}) {
    JournalCall call{absl::StrCat(run, "-1"), run, "write_file", "{}"};
    ASSERT_EQ(a->Begin(call, absl::Now())->kind, Kind::kRun);
    ASSERT_TRUE(a->Finish(call, Reply("exec-a", "x")).ok());
  }
  const std::string old_dir = absl::StrCat(a->dir(), "/runs/old");
  struct timespec times[2];
  times[0].tv_sec = times[1].tv_sec = time(nullptr) - 8 * 24 * 3600;  // past the 7 days
  times[0].tv_nsec = times[1].tv_nsec = 0;
  ASSERT_EQ(utimensat(AT_FDCWD, old_dir.c_str(), times, 0), 0);
  EXPECT_EQ(a->SweepExpired(), 1);
  struct stat st;
  EXPECT_NE(stat(old_dir.c_str(), &st), 0);
  EXPECT_EQ(stat(absl::StrCat(a->dir(), "/runs/new").c_str(), &st), 0);
}

TEST_F(CallJournalTest, FileNamesAreSafeAndDistinct) {
  EXPECT_EQ(JournalFileName("run-1_a"), "run-1_a");
  EXPECT_EQ(JournalFileName(""), "%");
  EXPECT_EQ(JournalFileName("../x"), "%2E%2E%2Fx");
  EXPECT_EQ(JournalFileName(".rein"), "%2Erein");
  const std::string long_a(300, 'a');
  std::string long_b = long_a;
  long_b.back() = 'b';
  EXPECT_EQ(JournalFileName(long_a).size(), 33u);
  EXPECT_NE(JournalFileName(long_a), JournalFileName(long_b));
}

TEST_F(CallJournalTest, IdsWithOddBytesRoundTrip) {
  auto a = Open("exec-a");
  JournalCall call{std::string("c/../\0x", 7), std::string("r\n", 2), "write_file", "{}"};
  ASSERT_EQ(a->Begin(call, absl::Now())->kind, Kind::kRun);
  ASSERT_TRUE(a->Finish(call, Reply("exec-a", "x")).ok());
  EXPECT_EQ(a->Begin(call, absl::Now())->kind, Kind::kReplay);
}

}  // namespace
}  // namespace rein
