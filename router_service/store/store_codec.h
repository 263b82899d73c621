// What the RunStore implementations share: timestamps as microseconds, and ListRuns page
// tokens (opaque to clients, checked, and bound to the filter they were made for).
#ifndef REIN_ROUTER_SERVICE_STORE_STORE_CODEC_H_
#define REIN_ROUTER_SERVICE_STORE_STORE_CODEC_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "google/protobuf/timestamp.pb.h"
#include "rein/v1/router.pb.h"
#include "router_service/store/notification_outbox.h"
#include "router_service/store/run_store.h"

namespace rein {

// Microseconds since the epoch; INVALID_ARGUMENT naming `field` outside Timestamp's range.
absl::StatusOr<int64_t> TimestampMicros(const google::protobuf::Timestamp& ts,
                                        absl::string_view field);

// `t` as a Timestamp; INVALID_ARGUMENT naming `field` outside Timestamp's range.
absl::StatusOr<google::protobuf::Timestamp> ToTimestamp(absl::Time t, absl::string_view field);

// A run as both stores keep it: the part written once (`base`: the run without its state and
// updated_at) and the part every commit rewrites (`tail`: a Run holding only those two), so
// that parsing base then merging tail gives the run back.
struct StoredRunParts {
  std::string base;
  std::string tail;
  int64_t created_us = 0;
  int64_t updated_us = 0;
};

// INVALID_ARGUMENT for bad timestamps or a run too large to serialize.
absl::StatusOr<StoredRunParts> SplitRun(const rein::v1::Run& run);

// What a run spent itself, for its namespace's usage: its tokens and cost less what it
// inherited (RunState.inherited_tokens, inherited_cost_usd: its joined children's, a fork's
// source's), which are counted in the runs that spent them.
int64_t OwnTokens(const rein::v1::RunState& state);
double OwnCostUsd(const rein::v1::RunState& state);

// The `tail` of a commit: `state` and `updated_at`.
absl::StatusOr<std::string> StateTail(const rein::v1::RunState& state,
                                      const google::protobuf::Timestamp& updated_at);

// OK when `router_id` is 1..128 bytes of [A-Za-z0-9._:-] (a hostname:pid fits); else
// INVALID_ARGUMENT naming router_id. `ttl` must be positive and at most a day.
absl::Status CheckRouterLease(absl::string_view router_id, absl::Duration ttl);

// Where the next page starts: after the run (created_us, run_id) in newest-first order.
struct Cursor {
  int64_t created_us = 0;
  std::string run_id;
};

// A page token for `cursor` under `filter`.
std::string MakePageToken(const RunFilter& filter, const Cursor& cursor);

// The cursor of a token made by MakePageToken with the same filter; anything else is
// INVALID_ARGUMENT naming page_token.
absl::StatusOr<Cursor> ParsePageToken(const RunFilter& filter, const std::string& token);

// The id of the outbox's notice of event `seq` of run `run_id` (notification_outbox.h).
std::string NoticeId(absl::string_view run_id, int64_t seq);

// Fills n->event and n->state from an outbox row's stored event (without run_id and seq, which
// come from n) and state tail (StateTail); DATA_LOSS naming the notice and `where` (the
// database) when one does not parse.
absl::Status DecodeNotification(absl::string_view event, absl::string_view state_tail,
                                absl::string_view where, Notification* n);

// delivered_to as stored: one endpoint per line.
std::string JoinEndpoints(const std::vector<std::string>& endpoints);
std::vector<std::string> SplitEndpoints(absl::string_view stored);

}  // namespace rein

#endif  // REIN_ROUTER_SERVICE_STORE_STORE_CODEC_H_
