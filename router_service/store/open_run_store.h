// OpenRunStore: the one place that turns a `--store` URI into a RunStore implementation.
#ifndef REIN_ROUTER_SERVICE_STORE_OPEN_RUN_STORE_H_
#define REIN_ROUTER_SERVICE_STORE_OPEN_RUN_STORE_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "router_service/store/router_store.h"

namespace rein {

// How to open the store a URI names; each field applies to its kind of store only.
struct RunStoreOptions {
  // SQLite's synchronous mode as --sqlite_synchronous spells it: "NORMAL" (a commit survives a
  // killed process) or "FULL" (it survives power loss too). Checked only for sqlite:PATH.
  std::string sqlite_synchronous = "NORMAL";
  // The SQLite connection's page cache in MiB (--sqlite_cache_mib, 1..4096; outside that,
  // INVALID_ARGUMENT naming the flag). Checked only for sqlite:PATH.
  int sqlite_cache_mib = 2;
};

// Holds the lock file of a SQLite store (PATH.lock, flock'ed) until destroyed.
class StoreLock {
 public:
  explicit StoreLock(int fd) : fd_(fd) {}
  ~StoreLock();
  StoreLock(const StoreLock&) = delete;
  StoreLock& operator=(const StoreLock&) = delete;

 private:
  const int fd_;
};

// A store opened from a URI, with what must live as long as it.
struct OpenedRunStore {
  // Declared before `store` so that it is released after the store is closed.
  std::unique_ptr<StoreLock> lock;
  std::unique_ptr<RouterStore> store;
  // Safe to log: "sqlite:PATH" or "postgres:host:port/database" (never a password).
  std::string description;
};

// Opens the store that `uri` (the `--store` flag) names:
//  - `sqlite:PATH`: a SqliteRunStore on the file PATH; a sqlite_synchronous other than NORMAL
//    or FULL is INVALID_ARGUMENT naming --sqlite_synchronous. One router per SQLite store:
//    PATH.lock is locked (flock) for as long as the returned value lives; when another process (or
//    another OpenedRunStore in this one) holds it, FAILED_PRECONDITION naming the lock file.
//  - `postgres://user:password@host:port/database` or `postgresql://...`: a PostgresRunStore.
//    Several routers may share it (run leases, RunStore's "Leases").
// Any other URI, the empty one included, is INVALID_ARGUMENT naming `--store` and the forms
// above. A store that cannot be opened keeps its own code, its message prefixed "--store: ".
// Messages never hold a password.
absl::StatusOr<OpenedRunStore> OpenRunStore(const std::string& uri, const RunStoreOptions& options);

}  // namespace rein

#endif  // REIN_ROUTER_SERVICE_STORE_OPEN_RUN_STORE_H_
