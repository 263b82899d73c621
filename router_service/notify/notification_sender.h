// NotificationSender: delivers the outbox's notices as signed CloudEvents webhooks, apart from
// the loop, retrying with backoff until they are taken or their retry period runs out.
#ifndef REIN_ROUTER_SERVICE_NOTIFY_NOTIFICATION_SENDER_H_
#define REIN_ROUTER_SERVICE_NOTIFY_NOTIFICATION_SENDER_H_

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "router_service/notify/webhook_config.h"
#include "router_service/notify/webhook_transport.h"
#include "router_service/store/notification_outbox.h"
#include "router_service/store/run_store.h"

namespace rein {

struct NotificationSenderOptions {
  // How long after its commit a notice is still retried (--webhook_retry_for); then it is
  // marked failed and the log says so.
  absl::Duration retry_for = absl::Hours(24);
  // One POST's whole exchange (--webhook_timeout).
  absl::Duration request_timeout = absl::Seconds(10);
  // The first retry's delay, doubled per failed attempt up to max_backoff, each drawn with
  // jitter from [half, all] of it; a receiver's Retry-After (up to max_backoff) is waited at
  // least.
  absl::Duration initial_backoff = absl::Seconds(1);
  absl::Duration max_backoff = absl::Minutes(10);
  // How often an idle sender looks for due notices.
  absl::Duration poll_interval = absl::Milliseconds(200);
  // Notices being sent at once (each by its own thread).
  int concurrency = 4;
  // POSTs in flight to one receiver's host (scheme, host and port) at most: a slow or hanging
  // receiver holds this many threads and no more, however many URLs it has. A notice whose endpoint
  // is at its limit waits up to endpoint_wait for a slot (a receiver that answers frees one within
  // that); failing that, it is not posted there now and stays in the outbox, due again after
  // endpoint_busy_delay (not counted as an attempt).
  int per_endpoint = 2;
  absl::Duration endpoint_wait = absl::Milliseconds(200);
  absl::Duration endpoint_busy_delay = absl::Seconds(2);
  // The CloudEvents `source` of every notice.
  std::string source = "urn:rein:router";
};

// Thread-safe. Start() runs `concurrency` threads; each claims one due notice at a time
// (NotificationOutbox::ClaimNotifications, held for as long as its POSTs may take), posts it
// to every endpoint WebhookConfig::EndpointsFor names that has not taken it yet, and writes
// the outcome: delivered when every endpoint answered 2xx (or 410, which also disables that
// endpoint until restart), else the next attempt's time. Nothing here runs on the loop's
// threads. The backlog is the outbox, not memory: at most `concurrency` notices are held here,
// and at most `per_endpoint` of them are being posted to any one endpoint, so a slow or
// hanging receiver delays only its own notices (metrics: rein_notifications_in_flight,
// rein_notifications_endpoint_busy_total).
class NotificationSender {
 public:
  NotificationSender(RunStore* runs, NotificationOutbox* outbox, const WebhookConfig* config,
                     WebhookTransport* transport, Clock* clock, NotificationSenderOptions options);
  ~NotificationSender();

  void Start();
  // Stops the threads after the POSTs in flight (each bounded by request_timeout).
  void Stop();

  // Claims at most one due notice and sends it; whether there was one. The threads' step,
  // public for tests.
  absl::StatusOr<bool> SendOne();

  // Refreshes the outbox gauges (rein_notifications_pending, _delivered, _failed).
  void RefreshGauges();

 private:
  void Loop(int index);
  // The delay before attempt `attempts` + 1 (attempts >= 1 failed so far).
  absl::Duration Backoff(int attempts);
  // Takes one of the per_endpoint slots of `host` (scheme://host:port); false when they are
  // all still in use after endpoint_wait.
  bool TakeSlot(const std::string& host);
  void ReleaseSlot(const std::string& host);

  RunStore* const runs_;
  NotificationOutbox* const outbox_;
  const WebhookConfig* const config_;
  WebhookTransport* const transport_;
  Clock* const clock_;
  const NotificationSenderOptions options_;

  absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::set<std::string> gone_ ABSL_GUARDED_BY(mu_);            // endpoints that answered 410
  std::map<std::string, int> in_flight_ ABSL_GUARDED_BY(mu_);  // POSTs per endpoint URL
  int in_flight_total_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::thread> threads_;
};

}  // namespace rein

#endif  // REIN_ROUTER_SERVICE_NOTIFY_NOTIFICATION_SENDER_H_
