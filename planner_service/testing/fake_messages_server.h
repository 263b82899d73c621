// FakeMessagesServer: a real HTTP/1.1 server on loopback that checks requests as the Messages
// API does and answers from a per-test script, for the anthropic client and backend tests.
#ifndef REIN_PLANNER_SERVICE_TESTING_FAKE_MESSAGES_SERVER_H_
#define REIN_PLANNER_SERVICE_TESTING_FAKE_MESSAGES_SERVER_H_

#include <atomic>
#include <deque>
#include <map>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"

namespace rein {

// One scripted answer.
struct FakeReply {
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  absl::Duration delay = absl::ZeroDuration();  // before answering
  bool close_without_reply = false;             // read the request, then close the connection
};

// What the server received.
struct FakeRequest {
  std::string method;
  std::string path;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
  absl::Time received;
  int connection = 0;   // 1, 2, ... per accepted connection
  std::string problem;  // why the server refused it as the real API would; empty = valid
  // With SimulatePromptCache: the request's tokens up to its last cache breakpoint, and the
  // usage the server answered.
  int64_t prefix_tokens = 0;
  int64_t input_tokens = 0;
  int64_t cache_read_input_tokens = 0;
  int64_t cache_creation_input_tokens = 0;
};

// A Message reply whose content is one tool_use block.
FakeReply ToolUseReply(const std::string& name, const nlohmann::json& input,
                       const std::string& stop_reason = "tool_use");
// A Message reply whose content is one text block.
FakeReply TextReply(const std::string& text, const std::string& stop_reason = "end_turn");
// An error reply {"type": "error", "error": {"type", "message"}, "request_id"}.
FakeReply ErrorReply(int status, const std::string& type, const std::string& message);

// Listens on 127.0.0.1 (port 0) and serves each connection on its own thread with keep-alive.
// A request is first checked as the real API checks it (path, x-api-key, anthropic-version,
// content-type, JSON body with model, positive max_tokens, non-empty messages alternating
// from user, system blocks, tools with input_schema, tool_choice naming a tool, cache_control
// shape, temperature range); a bad one gets the real API's 400/401/404 error. A good one gets
// the next scripted reply, or 500 api_error when the script is empty. Thread-safe.
class FakeMessagesServer {
 public:
  explicit FakeMessagesServer(std::string api_key) : api_key_(std::move(api_key)) {}
  ~FakeMessagesServer();

  absl::Status Start();
  std::string base_url() const;

  void Enqueue(FakeReply reply);
  std::vector<FakeRequest> requests();

  // From now on, answer each message's `usage` as the API's prompt cache would: tokens counted
  // as ceil(bytes / 4) of each block in the API's prefix order (tools, system, messages); a
  // prefix up to a block with cache_control is written to the cache when it holds at least
  // `min_cacheable_tokens`, and read by a later request with the same prefix. input_tokens is
  // what is neither read nor written.
  void SimulatePromptCache(int64_t min_cacheable_tokens);

 private:
  void AcceptLoop();
  void Serve(int fd, int connection);
  std::string Check(const FakeRequest& request) const;
  // Fills the request's cache figures and rewrites the reply's usage (SimulatePromptCache).
  void ApplyPromptCache(FakeRequest* request, FakeReply* reply);

  const std::string api_key_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::thread acceptor_;

  absl::Mutex mu_;
  std::deque<FakeReply> script_ ABSL_GUARDED_BY(mu_);
  std::vector<FakeRequest> requests_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> workers_ ABSL_GUARDED_BY(mu_);
  std::vector<int> open_fds_ ABSL_GUARDED_BY(mu_);
  int64_t min_cacheable_tokens_ ABSL_GUARDED_BY(mu_) = -1;            // -1: no simulation
  std::map<std::string, int64_t> prompt_cache_ ABSL_GUARDED_BY(mu_);  // prefix -> its tokens
};

}  // namespace rein

#endif  // REIN_PLANNER_SERVICE_TESTING_FAKE_MESSAGES_SERVER_H_
