// NotificationSender: claim, sign, POST, record; retries with backoff and jitter.
#include "router_service/notify/notification_sender.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/random/random.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/log.h"
#include "common/metrics.h"
#include "router_service/notify/cloud_event.h"
#include "router_service/notify/signature.h"
#include "router_service/notify/webhook_url.h"

namespace rein {
namespace {

// What POSTs share slots: one receiver's host (scheme://host:port), so that many URLs on one
// hanging host hold no more threads than one URL there.
std::string SlotKey(const std::string& url) {
  absl::StatusOr<WebhookUrl> parsed = ParseWebhookUrl(url);
  if (!parsed.ok()) return WebhookOrigin(url);
  return absl::StrCat(parsed->scheme, "://", parsed->host, ":", parsed->port);
}

}  // namespace

NotificationSender::NotificationSender(RunStore* runs, NotificationOutbox* outbox,
                                       const WebhookConfig* config, WebhookTransport* transport,
                                       Clock* clock, NotificationSenderOptions options)
    : runs_(runs),
      outbox_(outbox),
      config_(config),
      transport_(transport),
      clock_(clock),
      options_(std::move(options)) {}

NotificationSender::~NotificationSender() { Stop(); }

void NotificationSender::Start() {
  for (int i = 0; i < std::max(1, options_.concurrency); ++i) {
    threads_.emplace_back([this, i] { Loop(i); });
  }
}

void NotificationSender::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  for (std::thread& t : threads_) t.join();
  threads_.clear();
}

void NotificationSender::Loop(int index) {
  absl::Time next_gauges = absl::InfinitePast();
  while (true) {
    if (index == 0 && clock_->Now() >= next_gauges) {
      RefreshGauges();
      next_gauges = clock_->Now() + absl::Seconds(5);
    }
    absl::StatusOr<bool> sent = SendOne();
    if (!sent.ok()) {
      LogWarning("webhook outbox unavailable", {{"error", std::string(sent.status().message())}});
    }
    absl::MutexLock lock(&mu_);
    if (stop_) return;
    if (sent.ok() && *sent) continue;  // more may be due
    clock_->AwaitWithDeadline(&mu_, absl::Condition(&stop_),
                              clock_->Now() + options_.poll_interval);
    if (stop_) return;
  }
}

void NotificationSender::RefreshGauges() {
  absl::StatusOr<NotificationCounts> counts = outbox_->CountNotifications();
  if (!counts.ok()) return;
  Metrics::Global().Set("rein_notifications_pending", static_cast<double>(counts->pending));
  Metrics::Global().Set("rein_notifications_delivered", static_cast<double>(counts->delivered));
  Metrics::Global().Set("rein_notifications_failed", static_cast<double>(counts->failed));
}

absl::Duration NotificationSender::Backoff(int attempts) {
  absl::Duration delay = options_.initial_backoff;
  for (int i = 1; i < attempts && delay < options_.max_backoff; ++i) delay *= 2;
  delay = std::min(delay, options_.max_backoff);
  absl::MutexLock lock(&mu_);
  static absl::BitGen* const gen = new absl::BitGen();
  return delay * absl::Uniform(*gen, 0.5, 1.0);
}

bool NotificationSender::TakeSlot(const std::string& host) {
  const int limit = std::max(1, options_.per_endpoint);
  absl::MutexLock lock(&mu_);
  const auto free = [this, &host, limit]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto it = in_flight_.find(host);
    return it == in_flight_.end() || it->second < limit;
  };
  if (!free() && !clock_->AwaitWithDeadline(&mu_, absl::Condition(&free),
                                            clock_->Now() + options_.endpoint_wait)) {
    return false;
  }
  ++in_flight_[host];
  Metrics::Global().Set("rein_notifications_in_flight", ++in_flight_total_);
  return true;
}

void NotificationSender::ReleaseSlot(const std::string& host) {
  absl::MutexLock lock(&mu_);
  if (--in_flight_[host] <= 0) in_flight_.erase(host);
  Metrics::Global().Set("rein_notifications_in_flight", --in_flight_total_);
}

absl::StatusOr<bool> NotificationSender::SendOne() {
  const absl::Time now = clock_->Now();
  // Held for as long as every endpoint's wait for a slot and POST may take, so that no other
  // thread or router claims the notice while this one still sends it.
  const absl::Duration per_endpoint = options_.endpoint_wait + options_.request_timeout;
  const absl::Time hold = now + per_endpoint * config_->MaxEndpoints() + absl::Seconds(5);
  absl::StatusOr<std::vector<Notification>> claimed =
      outbox_->ClaimNotifications(now, hold, /*limit=*/1);
  if (!claimed.ok()) return claimed.status();
  if (claimed->empty()) return false;
  Notification& notice = (*claimed)[0];
  const std::string type = NoticeType(notice);

  NotificationUpdate update;
  update.notice_id = notice.notice_id;
  update.lease_epoch = notice.lease_epoch;
  update.attempts = notice.attempts;
  update.delivered_to = notice.delivered_to;
  std::vector<std::string> errors;
  int busy = 0;  // endpoints skipped: their POSTs in flight were at per_endpoint
  std::optional<absl::Duration> retry_after;

  absl::StatusOr<rein::v1::Run> run = runs_->GetRun(notice.run_id);
  if (run.ok()) {
    NoticeRun shown{run->spec(), ""};
    absl::StatusOr<std::vector<rein::v1::RunEvent>> first = runs_->ReadEvents(notice.run_id, 0, 1);
    if (first.ok() && !first->empty()) shown.principal = (*first)[0].principal();
    const std::string body = CloudEventJson(notice, shown, options_.source, config_->console_url());
    for (const WebhookEndpoint& endpoint : config_->EndpointsFor(run->spec(), type)) {
      if (std::find(update.delivered_to.begin(), update.delivered_to.end(), endpoint.url) !=
          update.delivered_to.end()) {
        continue;
      }
      bool gone;
      {
        absl::MutexLock lock(&mu_);
        gone = gone_.count(endpoint.url) > 0;
      }
      if (gone) {
        update.delivered_to.push_back(endpoint.url);
        continue;
      }
      // Never past the hold (a clock that jumped, a slow store): the rest waits for the next
      // claim rather than be sent twice.
      if (clock_->Now() + per_endpoint > hold || !TakeSlot(SlotKey(endpoint.url))) {
        ++busy;
        Metrics::Global().Add("rein_notifications_endpoint_busy_total", 1);
        continue;
      }
      update.attempts = notice.attempts + 1;  // a POST was made
      WebhookRequest request;
      request.url = endpoint.url;
      request.timeout = options_.request_timeout;
      request.body = body;
      const int64_t timestamp = absl::ToUnixSeconds(clock_->Now());
      request.headers = {{"Content-Type", kCloudEventsJson},
                         {"webhook-id", notice.notice_id},
                         {"webhook-timestamp", absl::StrCat(timestamp)}};
      if (!endpoint.key.empty()) {
        request.headers.emplace_back(
            "webhook-signature", WebhookSignature(endpoint.key, notice.notice_id, timestamp, body));
      }
      const WebhookReply reply = transport_->Post(request);
      ReleaseSlot(SlotKey(endpoint.url));
      if (reply.status >= 200 && reply.status < 300) {
        update.delivered_to.push_back(endpoint.url);
        Metrics::Global().Add("rein_notifications_delivered_total", 1);
        Metrics::Global().Observe("rein_notification_delivery_seconds",
                                  absl::ToDoubleSeconds(clock_->Now() - notice.committed));
        continue;
      }
      if (reply.status == 410) {
        update.delivered_to.push_back(endpoint.url);
        {
          absl::MutexLock lock(&mu_);
          gone_.insert(endpoint.url);
        }
        LogWarning("webhook endpoint answered 410 Gone: disabled until restart",
                   {{"endpoint", WebhookOrigin(endpoint.url)}});
        continue;
      }
      Metrics::Global().Add("rein_notifications_failed_attempts_total", 1);
      errors.push_back(
          absl::StrCat(WebhookOrigin(endpoint.url), ": ",
                       reply.status != 0 ? absl::StrCat("HTTP ", reply.status) : reply.error));
      if (reply.retry_after.has_value()) {
        retry_after = std::max(retry_after.value_or(absl::ZeroDuration()), *reply.retry_after);
      }
    }
  } else if (absl::IsNotFound(run.status())) {
    update.attempts = notice.attempts + 1;
    errors.push_back(absl::StrCat("the run is gone: ", run.status().message()));
  } else {
    return run.status();  // the claim's hold brings the notice back
  }

  const absl::Time after = clock_->Now();
  const absl::Time give_up = notice.committed + options_.retry_for;
  update.last_error = absl::StrJoin(errors, "; ");
  if (errors.empty() && busy == 0) {
    update.status = NotificationStatus::kDelivered;
    update.next_attempt = after;
  } else if (errors.empty() && after < give_up) {
    // Only busy endpoints are left: due again soon, kept in the outbox meanwhile.
    update.last_error = notice.last_error;
    update.next_attempt = std::min(after + options_.endpoint_busy_delay, give_up);
  } else if (after >= give_up || absl::IsNotFound(run.status())) {
    update.status = NotificationStatus::kFailed;
    update.next_attempt = after;
    if (update.last_error.empty()) {
      update.last_error = notice.last_error.empty()
                              ? "every endpoint left was busy with other notices until then"
                              : notice.last_error;
    }
    LogError("webhook notice given up: not delivered within --webhook_retry_for",
             {{"notice", notice.notice_id},
              {"type", type},
              {"attempts", absl::StrCat(update.attempts)},
              {"retry_for", absl::FormatDuration(options_.retry_for)},
              {"last_error", update.last_error}});
  } else {
    absl::Duration delay = Backoff(update.attempts);
    if (retry_after.has_value())
      delay = std::max(delay, std::min(*retry_after, options_.max_backoff));
    update.next_attempt = std::min(after + delay, give_up);
    LogWarning("webhook notice not delivered; will retry",
               {{"notice", notice.notice_id},
                {"attempts", absl::StrCat(update.attempts)},
                {"next_attempt_in", absl::FormatDuration(update.next_attempt - after)},
                {"error", update.last_error}});
  }
  if (absl::Status written = outbox_->UpdateNotification(update); !written.ok()) {
    LogWarning("webhook notice outcome not recorded",
               {{"notice", notice.notice_id}, {"error", std::string(written.message())}});
  }
  return true;
}

}  // namespace rein
