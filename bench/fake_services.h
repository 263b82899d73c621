// Fake planner and executor services for the benchmarks that drive a real rein-router: one
// subtask, list_files every iteration, each call answered at once or through a CallCapacity
// (a reply delay and a number of calls served at once).
#ifndef REIN_BENCH_FAKE_SERVICES_H_
#define REIN_BENCH_FAKE_SERVICES_H_

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "rein/v1/executor.grpc.pb.h"
#include "rein/v1/planner.grpc.pb.h"

namespace rein::bench {

// Serves at most `capacity` calls at once, each finishing `delay` after it began; the others
// wait in arrival order (as at an LLM API's concurrency limit or an executor's
// --max_concurrent). One thread finishes them all. Thread-safe.
class CallCapacity {
 public:
  CallCapacity(int capacity, absl::Duration delay);
  ~CallCapacity();
  CallCapacity(const CallCapacity&) = delete;
  CallCapacity& operator=(const CallCapacity&) = delete;

  // Finishes `reactor` (OK) once its turn came and its delay passed.
  void Serve(grpc::ServerUnaryReactor* reactor);
  // Answers every call now (UNAVAILABLE): nothing may be left open when a server shuts down.
  void Drain();
  // Calls finished OK so far.
  int64_t served() { return served_.load(); }

 private:
  void Loop();

  const int capacity_;
  const absl::Duration delay_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<grpc::ServerUnaryReactor*> waiting_;
  std::deque<std::pair<absl::Time, grpc::ServerUnaryReactor*>> serving_;
  bool stop_ = false;
  std::atomic<int64_t> served_{0};
  std::thread thread_;
};

// The serialized sizes of the last messages of each kind, to size the floor benchmark.
struct Payloads {
  std::atomic<size_t> decide_request{0}, decide_response{0};
  std::atomic<size_t> execute_request{0}, execute_response{0};
  std::atomic<size_t> evaluate_request{0}, evaluate_response{0};
};

// What tells one benchmark's fakes from another's.
struct FakeServiceOptions {
  // Stamped on the replies as PlanResponse.backend and ExecuteResponse.executor_id; empty: none.
  std::string name;
  // list_files's input schema in ListTools; empty: none.
  std::string tool_schema_json;
  // When set, Plan, Decide and Evaluate (Execute) are answered when this capacity serves them;
  // else at once. ListTools is always answered at once.
  CallCapacity* planner_capacity = nullptr;
  CallCapacity* executor_capacity = nullptr;
  // When set, the sizes of the last messages of each kind are recorded there.
  Payloads* payloads = nullptr;
};

// Plans one subtask; decides list_files each iteration; ends a run at its target iteration.
// Decide calls can be held open (Hold) until Release. gRPC's Server::Shutdown waits for every
// callback reactor to finish, past its deadline too (grpc/grpc#39114), so a held call that is
// never finished hangs the benchmark at teardown: holding and releasing share one lock, so no
// call slips in between a release and the end of holding. Thread-safe.
class FakePlanner final : public rein::v1::Planner::CallbackService {
 public:
  explicit FakePlanner(const FakeServiceOptions& options) : options_(options) {}

  grpc::ServerUnaryReactor* Plan(grpc::CallbackServerContext* ctx, const rein::v1::PlanRequest*,
                                 rein::v1::PlanResponse* resp) override;
  grpc::ServerUnaryReactor* Decide(grpc::CallbackServerContext* ctx,
                                   const rein::v1::DecideRequest* req,
                                   rein::v1::DecideResponse* resp) override;
  grpc::ServerUnaryReactor* Evaluate(grpc::CallbackServerContext* ctx,
                                     const rein::v1::EvaluateRequest* req,
                                     rein::v1::EvaluateResponse* resp) override;

  // Evaluate ends a run at iteration `n`; with 0 (the default), at the count its goal ends
  // with ("loop <n>").
  void set_target(int n) { target_ = n; }
  // From now on, Decide calls wait (holding no thread) until Release.
  void Hold();
  // Decide calls held now.
  size_t held();
  // Stops holding and answers every held call (UNAVAILABLE).
  void Release();

 private:
  const FakeServiceOptions options_;
  std::atomic<int> target_{0};
  std::mutex mu_;
  bool hold_ = false;
  std::vector<grpc::ServerUnaryReactor*> held_;
};

// Offers list_files, and runs it (its output names its arguments). Thread-safe.
class FakeExecutor final : public rein::v1::Executor::CallbackService {
 public:
  explicit FakeExecutor(const FakeServiceOptions& options) : options_(options) {}

  grpc::ServerUnaryReactor* ListTools(grpc::CallbackServerContext* ctx,
                                      const rein::v1::ListToolsRequest*,
                                      rein::v1::ListToolsResponse* resp) override;
  grpc::ServerUnaryReactor* Execute(grpc::CallbackServerContext* ctx,
                                    const rein::v1::ExecuteRequest* req,
                                    rein::v1::ExecuteResponse* resp) override;

 private:
  const FakeServiceOptions options_;
};

// Both fakes, each on its own server. Destroying it answers every open call, then shuts the
// servers down.
class FakeServices {
 public:
  explicit FakeServices(const FakeServiceOptions& options);
  ~FakeServices();
  FakeServices(const FakeServices&) = delete;
  FakeServices& operator=(const FakeServices&) = delete;

  // Listens on loopback TCP, or with a `socket_dir` on Unix-domain sockets there
  // (planner.sock, executor.sock); false (with a message) when a fake cannot listen.
  bool Start(const std::string& socket_dir = "");
  // Where the router reaches them ("127.0.0.1:<port>" or "unix:<path>").
  const std::string& planner_target() const { return planner_target_; }
  const std::string& executor_target() const { return executor_target_; }
  FakePlanner& planner() { return planner_; }
  // Answers every held and waiting call (UNAVAILABLE) and stops holding.
  void Release();

 private:
  const FakeServiceOptions options_;
  FakePlanner planner_;
  FakeExecutor executor_;
  std::unique_ptr<grpc::Server> planner_server_, executor_server_;
  std::string planner_target_, executor_target_;
};

}  // namespace rein::bench

#endif  // REIN_BENCH_FAKE_SERVICES_H_
