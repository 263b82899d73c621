// How many WatchRun streams one principal may hold open at once.
#ifndef REIN_ROUTER_SERVICE_STREAM_QUOTA_H_
#define REIN_ROUTER_SERVICE_STREAM_QUOTA_H_

#include <map>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace rein {

// Counts open streams per principal ("" without auth: every caller shares it) and refuses one
// past the cap, so that one caller cannot hold every stream the router can serve.
// Thread-safe; must outlive its tickets.
class StreamQuota {
 public:
  // Held for as long as the stream is open; the slot is given back when it is destroyed.
  class Ticket {
   public:
    ~Ticket();
    Ticket(const Ticket&) = delete;
    Ticket& operator=(const Ticket&) = delete;

   private:
    friend class StreamQuota;
    Ticket(StreamQuota* quota, std::string principal)
        : quota_(quota), principal_(std::move(principal)) {}
    StreamQuota* const quota_;
    const std::string principal_;
  };

  // `max_per_principal` <= 0: no cap.
  explicit StreamQuota(int max_per_principal) : max_(max_per_principal) {}

  // A slot for one more stream of `principal`, or RESOURCE_EXHAUSTED naming the cap and its
  // flag (--max_watch_streams_per_principal).
  absl::StatusOr<std::unique_ptr<Ticket>> Acquire(const std::string& principal);

  // Streams `principal` holds open now.
  int open(const std::string& principal);

 private:
  void Release(const std::string& principal);

  const int max_;
  absl::Mutex mu_;
  std::map<std::string, int> open_ ABSL_GUARDED_BY(mu_);
};

}  // namespace rein

#endif  // REIN_ROUTER_SERVICE_STREAM_QUOTA_H_
