// rein.v1.Notice from an outbox row.
#include "router_service/notify/notice_view.h"

#include <optional>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/proto_time.h"
#include "router_service/notify/cloud_event.h"

namespace rein {
namespace {

rein::v1::NoticeStatus ToProto(NotificationStatus status) {
  switch (status) {
    case NotificationStatus::kPending: return rein::v1::NOTICE_PENDING;
    case NotificationStatus::kDelivered: return rein::v1::NOTICE_DELIVERED;
    case NotificationStatus::kFailed: return rein::v1::NOTICE_FAILED;
  }
  return rein::v1::NOTICE_STATUS_UNSPECIFIED;
}

}  // namespace

rein::v1::Notice NoticeView(const Notification& notice) {
  rein::v1::Notice view;
  view.set_notice_id(notice.notice_id);
  view.set_run_id(notice.run_id);
  view.set_seq(notice.seq);
  view.set_type(NoticeType(notice));
  view.set_status(ToProto(notice.status));
  view.set_attempts(notice.attempts);
  *view.mutable_committed() = ToProtoTime(notice.committed);
  if (notice.status == NotificationStatus::kPending) {
    *view.mutable_next_attempt() = ToProtoTime(notice.next_attempt);
  }
  view.set_last_error(notice.last_error);
  view.set_endpoints_taken(static_cast<int32_t>(notice.delivered_to.size()));
  return view;
}

absl::StatusOr<std::optional<NotificationStatus>> NoticeStatusFilter(rein::v1::NoticeStatus status,
                                                                     const char* field) {
  switch (status) {
    case rein::v1::NOTICE_STATUS_UNSPECIFIED: return std::nullopt;
    case rein::v1::NOTICE_PENDING: return NotificationStatus::kPending;
    case rein::v1::NOTICE_DELIVERED: return NotificationStatus::kDelivered;
    case rein::v1::NOTICE_FAILED: return NotificationStatus::kFailed;
    default: break;
  }
  return absl::InvalidArgumentError(
      absl::StrCat(field, ": unknown notice status ", static_cast<int>(status)));
}

}  // namespace rein
