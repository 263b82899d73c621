// The `notifications` table: the webhook outbox's notices as ListNotifications answers them.
#ifndef REIN_CLI_NOTICE_TABLE_H_
#define REIN_CLI_NOTICE_TABLE_H_

#include <string>

#include "absl/time/time.h"
#include "rein/v1/router.pb.h"

namespace rein::cli {

// One row per notice, newest first: its id (the webhook-id), type (paused, finished, failed,
// cancelled), status, attempts, commit time, next attempt (pending ones), last error (cut to
// one line). A line saying so when there are none.
std::string NoticeTable(const v1::ListNotificationsResponse& response, v1::NoticeStatus filter,
                        absl::TimeZone zone);

}  // namespace rein::cli

#endif  // REIN_CLI_NOTICE_TABLE_H_
