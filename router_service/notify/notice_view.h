// What the public API shows of an outbox notice (rein.v1.Notice): no endpoint URL, since a
// chat incoming-webhook URL is itself a secret.
#ifndef REIN_ROUTER_SERVICE_NOTIFY_NOTICE_VIEW_H_
#define REIN_ROUTER_SERVICE_NOTIFY_NOTICE_VIEW_H_

#include <optional>

#include "absl/status/statusor.h"
#include "rein/v1/router.pb.h"
#include "router_service/store/notification_outbox.h"

namespace rein {

// The notice as ListNotifications answers it: id, run, seq, CloudEvents type, status,
// attempts, commit time, next attempt (pending only), last error (endpoints by origin, as the
// sender writes it) and how many endpoints took it.
rein::v1::Notice NoticeView(const Notification& notice);

// The store's status for a request's filter: nullopt for NOTICE_STATUS_UNSPECIFIED (any);
// INVALID_ARGUMENT naming `field` for a value that is not a NoticeStatus.
absl::StatusOr<std::optional<NotificationStatus>> NoticeStatusFilter(rein::v1::NoticeStatus status,
                                                                     const char* field);

}  // namespace rein

#endif  // REIN_ROUTER_SERVICE_NOTIFY_NOTICE_VIEW_H_
