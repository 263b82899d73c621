// RouterStore: the router's store in its four roles, as both implementations provide it.
#ifndef REIN_ROUTER_SERVICE_STORE_ROUTER_STORE_H_
#define REIN_ROUTER_SERVICE_STORE_ROUTER_STORE_H_

#include "router_service/store/commit_feed.h"
#include "router_service/store/fleet_store.h"
#include "router_service/store/notification_outbox.h"
#include "router_service/store/run_store.h"

namespace rein {

// One store in the four roles: the runs (RunStore), the leases of the routers sharing it
// (FleetStore), the notices of their commits (CommitFeed) and the webhook outbox
// (NotificationOutbox). SqliteRunStore and
// PostgresRunStore are RouterStores; OpenRunStore returns one. A part of the router that needs
// one role takes a pointer to that interface only.
class RouterStore : public RunStore,
                    public FleetStore,
                    public CommitFeed,
                    public NotificationOutbox {};

}  // namespace rein

#endif  // REIN_ROUTER_SERVICE_STORE_ROUTER_STORE_H_
