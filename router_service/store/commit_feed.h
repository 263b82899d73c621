// CommitFeed: the commits other routers make on a shared store, as the store learns them.
#ifndef REIN_ROUTER_SERVICE_STORE_COMMIT_FEED_H_
#define REIN_ROUTER_SERVICE_STORE_COMMIT_FEED_H_

#include <cstdint>
#include <functional>
#include <string>

namespace rein {

// A commit made through another store on the same location (another router), as the store
// learns it (PostgreSQL: LISTEN/NOTIFY). Sent after the commit, at most once, and possibly not
// at all (a lost connection): whoever waits on one also polls.
struct CommitNotice {
  std::string run_id;
  int64_t last_seq = 0;   // the run's last event seq after the commit
  bool ended = false;     // the commit ended the run
  std::string router_id;  // the router that committed ("" when unknown)
};

// What a router that does not own a run reads to follow it (its watchers, its reviews): the
// notices of other routers' commits. Tested once for both implementations by
// commit_feed_conformance.cc.
class CommitFeed {
 public:
  virtual ~CommitFeed() = default;

  // Calls `on_commit`, on a thread of the store, for commits made through other stores on the
  // same location; never for this store's own. Set once, after FleetStore::JoinFleet and before
  // the store is used by threads. A store with one user never calls it.
  virtual void SubscribeCommits(std::function<void(const CommitNotice&)> on_commit) = 0;
};

}  // namespace rein

#endif  // REIN_ROUTER_SERVICE_STORE_COMMIT_FEED_H_
