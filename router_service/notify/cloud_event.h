// The body of a notice: a CloudEvents 1.0 event in JSON (structured mode), made from the
// outbox's row and the run (docs/WEBHOOKS.md).
#ifndef REIN_ROUTER_SERVICE_NOTIFY_CLOUD_EVENT_H_
#define REIN_ROUTER_SERVICE_NOTIFY_CLOUD_EVENT_H_

#include <string>

#include "absl/strings/string_view.h"
#include "rein/v1/types.pb.h"
#include "router_service/store/notification_outbox.h"

namespace rein {

// The media type of the body.
inline constexpr char kCloudEventsJson[] = "application/cloudevents+json";

// The notice's CloudEvents type: dev.rein.run.paused for a `paused` event, else
// dev.rein.run.finished, .failed or .cancelled by the outcome's status.
std::string NoticeType(const Notification& notice);

// What of the run the body shows besides the notice: its spec (goal, labels) and who started
// it (the principal of its first event; "" when unknown).
struct NoticeRun {
  rein::v1::RunSpec spec;
  std::string principal;
};

// The JSON body: specversion 1.0, id (the notice id), source (`source`), type, subject (the run
// id), time (the event's), datacontenttype application/json, and data (docs/WEBHOOKS.md):
// run_id, goal, stage, labels, owner, usage and cost_usd, pause{reason, point, detail,
// question, pending_call} or outcome{status, reason, message}, and console_url when
// `console_url` is set. The same inputs give the same bytes (keys sorted), so every attempt of
// a notice sends one body.
std::string CloudEventJson(const Notification& notice, const NoticeRun& run,
                           absl::string_view source, absl::string_view console_url);

}  // namespace rein

#endif  // REIN_ROUTER_SERVICE_NOTIFY_CLOUD_EVENT_H_
