// NotificationOutbox: the notices a commit that pauses or ends a run leaves for the webhook
// sender, written in that commit's transaction (docs/WEBHOOKS.md).
#ifndef REIN_ROUTER_SERVICE_STORE_NOTIFICATION_OUTBOX_H_
#define REIN_ROUTER_SERVICE_STORE_NOTIFICATION_OUTBOX_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "rein/v1/types.pb.h"

namespace rein {

enum class NotificationStatus {
  kPending = 0,    // not yet taken by every endpoint; retried
  kDelivered = 1,  // every endpoint took it (or refused it for good with 410)
  kFailed = 2,     // given up: the retry period ran out
};

// One notice of the outbox. Its id is "<run_id>.<seq>" (the run and the seq of its `paused` or
// `finished` event): the same for every attempt, in every process, so a receiver deduplicates
// by it (it is the webhook-id).
struct Notification {
  std::string notice_id;
  std::string run_id;
  int64_t seq = 0;
  rein::v1::RunEvent event;  // the `paused` or `finished` event as committed (run_id, seq set)
  rein::v1::RunState state;  // the state that commit stored
  absl::Time committed;      // the commit's `now`
  NotificationStatus status = NotificationStatus::kPending;
  int32_t attempts = 0;
  absl::Time next_attempt;
  std::string last_error;
  std::vector<std::string> delivered_to;  // the endpoints (URLs) that took it
  std::string owner;                      // the router that delivers it ("" = none yet)
  int64_t lease_epoch = 0;                // the fencing token of that owner
};

// What UpdateNotification writes after an attempt.
struct NotificationUpdate {
  std::string notice_id;
  int64_t lease_epoch = 0;  // as claimed
  NotificationStatus status = NotificationStatus::kPending;
  int32_t attempts = 0;
  absl::Time next_attempt;
  std::string last_error;
  std::vector<std::string> delivered_to;
};

struct NotificationCounts {
  int64_t pending = 0;
  int64_t delivered = 0;
  int64_t failed = 0;
};

// The outbox of a store, tested once for both implementations by
// notification_outbox_conformance.cc.
//
// What writes a notice: RunStore::Commit, CommitOwned and each request of CommitBatch insert, in
// the commit's own transaction, one pending notice per `paused` or `finished` event among the
// commit's events (due at once, attempts 0, owned by this store's router at epoch 1, or by no
// router before JoinFleet). So a committed pause or end always has its notice, and a commit
// that fails leaves none. CreateRun writes none.
//
// Owners (several routers on one store): a notice is delivered by one router at a time, like a
// run: ClaimNotifications returns this router's own notices and takes over (owner = this
// router, lease_epoch + 1) the ones whose owner's lease has expired or that have no owner;
// UpdateNotification writes only while this router owns the notice at the epoch it claimed,
// else ABORTED "lease lost ..." with reason::kLeaseLost. A store with one user (SQLite) keeps
// this trivially: its router owns every notice at epoch 1.
//
// Thread-safe.
class NotificationOutbox {
 public:
  virtual ~NotificationOutbox() = default;

  // Pending notices with next_attempt <= now that this router may deliver (above), oldest
  // first, at most `limit` (> 0); each one's next_attempt is moved to `hold_until` in the same
  // transaction, so that a later call does not return it again while it is being sent (and a
  // router that dies while sending leaves it due again at hold_until). In a fleet, only while
  // this router's lease is valid (else none). `now` and `hold_until` are INVALID_ARGUMENT when
  // out of google.protobuf.Timestamp's range.
  virtual absl::StatusOr<std::vector<Notification>> ClaimNotifications(absl::Time now,
                                                                       absl::Time hold_until,
                                                                       int limit) = 0;

  // Writes an attempt's outcome (status, attempts, next_attempt, last_error, delivered_to).
  // NOT_FOUND for an unknown notice_id; ABORTED with reason::kLeaseLost when this router does
  // not own it at update.lease_epoch (nothing written).
  virtual absl::Status UpdateNotification(const NotificationUpdate& update) = 0;

  // The notices with `status` (every status when `any`) of the runs of namespace
  // `namespace_name` ("" = every namespace; `default` holds the runs from before namespaces),
  // newest first, at most `limit` (> 0).
  virtual absl::StatusOr<std::vector<Notification>> ListNotifications(
      NotificationStatus status, bool any, const std::string& namespace_name, int limit) = 0;

  virtual absl::StatusOr<NotificationCounts> CountNotifications() = 0;
};

// Whether a commit of `event` leaves a notice (above).
inline bool IsNotifyingEvent(const rein::v1::RunEvent& event) {
  return event.has_paused() || event.has_finished();
}

}  // namespace rein

#endif  // REIN_ROUTER_SERVICE_STORE_NOTIFICATION_OUTBOX_H_
