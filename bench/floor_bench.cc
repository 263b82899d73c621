// floor_bench: the least one router iteration can cost on this machine, measured the way the
// router does the work: three loopback unary gRPC calls (Decide, Execute, Evaluate) with the
// payload sizes router_bench's fakes exchange, and three commits of the router's state size
// (a real SQLite file in WAL mode at the router's synchronous mode: one row upsert of the state
// plus one event insert per commit, in one transaction). Prints per call, per commit and the
// per-iteration floor (3 calls + 3 commits, p50s).
#include <signal.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "bench/bench_util.h"
#include "grpcpp/grpcpp.h"
#include "rein/v1/executor.grpc.pb.h"
#include "rein/v1/planner.grpc.pb.h"

// Defaults: the sizes router_bench printed on this project's bench loop; the orchestrator
// passes the ones measured in the same invocation.
ABSL_FLAG(int, decide_request, 120, "bytes of a Decide request");
ABSL_FLAG(int, decide_response, 40, "bytes of a Decide response");
ABSL_FLAG(int, execute_request, 90, "bytes of an Execute request");
ABSL_FLAG(int, execute_response, 50, "bytes of an Execute response");
ABSL_FLAG(int, evaluate_request, 200, "bytes of an Evaluate request");
ABSL_FLAG(int, evaluate_response, 10, "bytes of an Evaluate response");
ABSL_FLAG(int, state, 4096, "bytes of the run state written by each commit");
ABSL_FLAG(int, events_per_iteration, 600, "event bytes the router writes per iteration");
ABSL_FLAG(std::string, synchronous, "NORMAL", "SQLite synchronous mode (the router's)");
ABSL_FLAG(int, calls, 3000, "rounds of three calls to time");
ABSL_FLAG(int, commits, 3000, "commits to time");
ABSL_FLAG(bool, quick, false, "a smaller run for smoke tests");
ABSL_FLAG(int, phase_timeout_seconds, 120, "a phase running longer ends the benchmark");

namespace {

using rein::bench::Percentile;
using rein::bench::PrintBench;

// Sets `*field` so that `msg` serializes to about `target` bytes (never below its size without
// the padding).
template <typename Message>
void PadTo(Message* msg, std::string* field, int target) {
  field->clear();
  for (int i = 0; i < 3; ++i) {
    long missing = target - static_cast<long>(msg->ByteSizeLong());
    if (missing <= 0) return;
    field->append(missing, 'x');
  }
}

class FloorPlanner final : public rein::v1::Planner::CallbackService {
 public:
  FloorPlanner() {
    decide_.mutable_tool_call()->set_tool("list_files");
    decide_.mutable_tool_call()->set_args_json("{\"path\":\"d1\"}");
    PadTo(&decide_, decide_.mutable_reasoning(), absl::GetFlag(FLAGS_decide_response));
    evaluate_.set_status(rein::v1::RunEvent::Evaluation::NEEDS_MORE_WORK);
    PadTo(&evaluate_, evaluate_.mutable_reasoning(), absl::GetFlag(FLAGS_evaluate_response));
  }
  grpc::ServerUnaryReactor* Decide(grpc::CallbackServerContext* ctx, const rein::v1::DecideRequest*,
                                   rein::v1::DecideResponse* resp) override {
    *resp = decide_;
    auto* reactor = ctx->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }
  grpc::ServerUnaryReactor* Evaluate(grpc::CallbackServerContext* ctx,
                                     const rein::v1::EvaluateRequest*,
                                     rein::v1::EvaluateResponse* resp) override {
    *resp = evaluate_;
    auto* reactor = ctx->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

 private:
  rein::v1::DecideResponse decide_;
  rein::v1::EvaluateResponse evaluate_;
};

class FloorExecutor final : public rein::v1::Executor::CallbackService {
 public:
  FloorExecutor() {
    execute_.set_ok(true);
    execute_.set_executor_id("bench");
    PadTo(&execute_, execute_.mutable_output(), absl::GetFlag(FLAGS_execute_response));
  }
  grpc::ServerUnaryReactor* Execute(grpc::CallbackServerContext* ctx,
                                    const rein::v1::ExecuteRequest*,
                                    rein::v1::ExecuteResponse* resp) override {
    *resp = execute_;
    auto* reactor = ctx->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

 private:
  rein::v1::ExecuteResponse execute_;
};

// Times `rounds` rounds of Decide, Execute, Evaluate; returns each call's time in us.
std::vector<double> TimeCalls(int rounds) {
  FloorPlanner planner;
  FloorExecutor executor;
  int planner_port = 0, executor_port = 0;
  grpc::ServerBuilder b1, b2;
  b1.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &planner_port);
  b1.RegisterService(&planner);
  auto planner_server = b1.BuildAndStart();
  b2.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &executor_port);
  b2.RegisterService(&executor);
  auto executor_server = b2.BuildAndStart();
  auto planner_stub = rein::v1::Planner::NewStub(grpc::CreateChannel(
      absl::StrCat("127.0.0.1:", planner_port), grpc::InsecureChannelCredentials()));
  auto executor_stub = rein::v1::Executor::NewStub(grpc::CreateChannel(
      absl::StrCat("127.0.0.1:", executor_port), grpc::InsecureChannelCredentials()));

  rein::v1::DecideRequest decide;
  decide.set_run_id("r-0123456789abcdef");
  decide.set_iteration(7);
  PadTo(&decide, decide.mutable_goal(), absl::GetFlag(FLAGS_decide_request));
  rein::v1::ExecuteRequest execute;
  execute.set_run_id("r-0123456789abcdef");
  execute.set_tool("list_files");
  PadTo(&execute, execute.mutable_args_json(), absl::GetFlag(FLAGS_execute_request));
  rein::v1::EvaluateRequest evaluate;
  evaluate.set_run_id("r-0123456789abcdef");
  PadTo(&evaluate, evaluate.mutable_goal(), absl::GetFlag(FLAGS_evaluate_request));

  std::vector<double> us;
  us.reserve(3 * rounds);
  auto time_call = [&](auto&& call) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    absl::Time t0 = absl::Now();
    grpc::Status s = call(&ctx);
    us.push_back(absl::ToDoubleMicroseconds(absl::Now() - t0));
    if (!s.ok()) fprintf(stderr, "call failed: %s\n", s.error_message().c_str());
  };
  const int warmup = rounds / 10 + 10;
  for (int i = 0; i < warmup + rounds; ++i) {
    if (i == warmup) us.clear();
    rein::v1::DecideResponse r1;
    time_call([&](grpc::ClientContext* c) { return planner_stub->Decide(c, decide, &r1); });
    rein::v1::ExecuteResponse r2;
    time_call([&](grpc::ClientContext* c) { return executor_stub->Execute(c, execute, &r2); });
    rein::v1::EvaluateResponse r3;
    time_call([&](grpc::ClientContext* c) { return planner_stub->Evaluate(c, evaluate, &r3); });
  }
  auto now = std::chrono::system_clock::now();
  planner_server->Shutdown(now);
  executor_server->Shutdown(now);
  return us;
}

bool Exec(sqlite3* db, const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    fprintf(stderr, "%s: %s\n", sql, err ? err : "?");
    sqlite3_free(err);
    return false;
  }
  return true;
}

// Times `count` commits, each an upsert of the state row and one event insert; returns us.
std::vector<double> TimeCommits(int count) {
  std::vector<double> us;
  char tmpl[] = "/tmp/rein-floor-XXXXXX";
  const char* dir = mkdtemp(tmpl);
  if (dir == nullptr) return us;
  const std::string path = absl::StrCat(dir, "/floor.db");
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) return us;
  const std::string sync = absl::StrCat("PRAGMA synchronous=", absl::GetFlag(FLAGS_synchronous));
  if (!Exec(db, "PRAGMA journal_mode=WAL") || !Exec(db, sync.c_str()) ||
      !Exec(db,
            "CREATE TABLE runs (run_id TEXT PRIMARY KEY NOT NULL, version INTEGER NOT NULL, "
            "state BLOB NOT NULL)") ||
      !Exec(db,
            "CREATE TABLE events (run_id TEXT NOT NULL, seq INTEGER NOT NULL, body BLOB NOT "
            "NULL, PRIMARY KEY (run_id, seq)) WITHOUT ROWID")) {
    sqlite3_close(db);
    return us;
  }
  sqlite3_stmt* upsert = nullptr;
  sqlite3_stmt* event = nullptr;
  sqlite3_prepare_v2(db,
                     "INSERT INTO runs (run_id, version, state) VALUES ('r', ?1, ?2) "
                     "ON CONFLICT (run_id) DO UPDATE SET version = ?1, state = ?2",
                     -1, &upsert, nullptr);
  sqlite3_prepare_v2(db, "INSERT INTO events (run_id, seq, body) VALUES ('r', ?, ?)", -1, &event,
                     nullptr);
  const std::string state(absl::GetFlag(FLAGS_state), 's');
  const std::string body(std::max(1, absl::GetFlag(FLAGS_events_per_iteration) / 3), 'e');
  const int warmup = count / 10 + 10;
  us.reserve(count);
  for (int i = 0; i < warmup + count; ++i) {
    absl::Time t0 = absl::Now();
    bool ok = Exec(db, "BEGIN IMMEDIATE");
    sqlite3_bind_int64(upsert, 1, i);
    sqlite3_bind_blob(upsert, 2, state.data(), state.size(), SQLITE_STATIC);
    ok = ok && sqlite3_step(upsert) == SQLITE_DONE;
    sqlite3_reset(upsert);
    sqlite3_bind_int64(event, 1, i);
    sqlite3_bind_blob(event, 2, body.data(), body.size(), SQLITE_STATIC);
    ok = ok && sqlite3_step(event) == SQLITE_DONE;
    sqlite3_reset(event);
    ok = ok && Exec(db, "COMMIT");
    if (!ok) {
      fprintf(stderr, "commit failed: %s\n", sqlite3_errmsg(db));
      break;
    }
    if (i >= warmup) us.push_back(absl::ToDoubleMicroseconds(absl::Now() - t0));
  }
  sqlite3_finalize(upsert);
  sqlite3_finalize(event);
  sqlite3_close(db);
  for (const char* suffix : {"", "-wal", "-shm"}) unlink((path + suffix).c_str());
  rmdir(dir);
  return us;
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  signal(SIGPIPE, SIG_IGN);
  setvbuf(stdout, nullptr, _IOLBF, 0);
  const bool quick = absl::GetFlag(FLAGS_quick);
  const int rounds = quick ? 500 : absl::GetFlag(FLAGS_calls);
  const int commits = quick ? 500 : absl::GetFlag(FLAGS_commits);
  const absl::Duration limit = absl::Seconds(absl::GetFlag(FLAGS_phase_timeout_seconds));
  rein::bench::Watchdog watchdog("floor_bench");

  printf("floor: what one iteration needs at minimum, on this machine now.\n");
  watchdog.Enter("calls", limit);
  std::vector<double> calls = TimeCalls(rounds);
  watchdog.Enter("commits", limit);
  std::vector<double> commit_us = TimeCommits(commits);
  if (calls.empty() || commit_us.empty()) {
    printf("floor_bench: a measurement failed (see above)\n");
    return 1;
  }
  const double call50 = Percentile(calls, 0.5), call99 = Percentile(calls, 0.99);
  const double commit50 = Percentile(commit_us, 0.5), commit99 = Percentile(commit_us, 0.99);
  printf(
      "loopback unary call (Decide %d/%d B, Execute %d/%d B, Evaluate %d/%d B): "
      "p50 %.1f us  p99 %.1f us\n",
      absl::GetFlag(FLAGS_decide_request), absl::GetFlag(FLAGS_decide_response),
      absl::GetFlag(FLAGS_execute_request), absl::GetFlag(FLAGS_execute_response),
      absl::GetFlag(FLAGS_evaluate_request), absl::GetFlag(FLAGS_evaluate_response), call50,
      call99);
  printf("SQLite commit (WAL, synchronous=%s, %d B state + %d B event): p50 %.1f us  p99 %.1f us\n",
         absl::GetFlag(FLAGS_synchronous).c_str(), absl::GetFlag(FLAGS_state),
         std::max(1, absl::GetFlag(FLAGS_events_per_iteration) / 3), commit50, commit99);
  printf("floor per iteration (3 calls + 3 commits, p50): %.1f us\n", 3 * call50 + 3 * commit50);
  PrintBench("floor.call.p50", call50, "us");
  PrintBench("floor.call.p99", call99, "us");
  PrintBench("floor.commit.p50", commit50, "us");
  PrintBench("floor.commit.p99", commit99, "us");
  PrintBench("floor.iteration.p50", 3 * call50 + 3 * commit50, "us");
  return 0;
}
