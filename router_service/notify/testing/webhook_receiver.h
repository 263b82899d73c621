// WebhookReceiver: a real HTTP/1.1 receiver of webhooks on loopback for tests; it checks each
// request's Standard Webhooks signature and answers from a script.
#ifndef REIN_ROUTER_SERVICE_NOTIFY_TESTING_WEBHOOK_RECEIVER_H_
#define REIN_ROUTER_SERVICE_NOTIFY_TESTING_WEBHOOK_RECEIVER_H_

#include <atomic>
#include <deque>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace rein::testing {

// One scripted answer.
struct ReceiverReply {
  int status = 200;
  std::map<std::string, std::string> headers;
  std::string body;
  absl::Duration delay = absl::ZeroDuration();  // before answering
};

struct ReceivedWebhook {
  std::string path;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
  bool signature_valid = false;  // webhook-signature verifies under the receiver's key
  absl::Time received;
};

// Listens on 127.0.0.1; one connection at a time on its own thread, Connection: close. Each
// request gets the next scripted reply, or 200 with an empty body once the script is empty.
// Thread-safe.
class WebhookReceiver {
 public:
  explicit WebhookReceiver(std::string key) : key_(std::move(key)) {}
  ~WebhookReceiver();

  // Listens on `port` (0 = any free one; a port used before, after Stop, to come back).
  absl::Status Start(int port = 0);
  // Closes the socket: senders then meet "connection refused".
  void Stop();

  int port() const { return port_; }
  std::string url(const std::string& path = "/hook") const;

  void Enqueue(ReceiverReply reply);
  std::vector<ReceivedWebhook> received();
  // Waits until at least `n` requests came, or `timeout` passed; whether they came.
  bool AwaitCount(size_t n, absl::Duration timeout);

 private:
  void Serve(int listen_fd);
  void Handle(int fd);

  const std::string key_;
  int port_ = 0;
  int listen_fd_ = -1;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
  absl::Mutex mu_;
  std::deque<ReceiverReply> script_ ABSL_GUARDED_BY(mu_);
  std::vector<ReceivedWebhook> received_ ABSL_GUARDED_BY(mu_);
};

}  // namespace rein::testing

#endif  // REIN_ROUTER_SERVICE_NOTIFY_TESTING_WEBHOOK_RECEIVER_H_
