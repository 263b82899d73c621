// The store conformance suites: the tests every RouterStore implementation must pass unchanged,
// one suite per role: RunStoreConformanceTest (run_store_conformance.cc and
// run_store_list_conformance.cc), FleetStoreConformanceTest (fleet_store_conformance.cc) and
// CommitFeedConformanceTest (commit_feed_conformance.cc) and NotificationOutboxConformanceTest
// (notification_outbox_conformance.cc).
//
// An implementation's test file instantiates each with a factory:
//
//   INSTANTIATE_TEST_SUITE_P(Sqlite, RunStoreConformanceTest,
//                            ::testing::Values(MySqliteFactory()), RunStoreFactoryName);
//   (and the same for FleetStoreConformanceTest and CommitFeedConformanceTest)
#ifndef REIN_ROUTER_SERVICE_STORE_RUN_STORE_CONFORMANCE_H_
#define REIN_ROUTER_SERVICE_STORE_RUN_STORE_CONFORMANCE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "router_service/store/router_store.h"

namespace rein {

// How the suite makes stores. Each test takes a new location, opens a store there, may drop it
// and open the same location again (to check durability), and removes the location at the end.
struct RunStoreFactory {
  // Names the instantiation in test names: letters, digits and '_' only.
  std::string name;
  // A new, empty location (a database file path, a PostgreSQL schema, ...).
  std::function<absl::StatusOr<std::string>()> new_location;
  // Opens the store at `location`, creating its tables when missing.
  std::function<absl::StatusOr<std::unique_ptr<RouterStore>>(const std::string& location)> open;
  // Deletes what `new_location` made; may be empty when there is nothing to clean up.
  std::function<void(const std::string& location)> remove;
  // Overwrites the stored bytes of run `run_id` (its part written once) with bytes that do not
  // parse, from outside the store, as a bug or an operator would. May be empty: the tests of
  // corrupt rows are then skipped.
  std::function<absl::Status(const std::string& location, const std::string& run_id)> corrupt_run;
  // Likewise for the stored bytes of event `seq` of run `run_id`.
  std::function<absl::Status(const std::string& location, const std::string& run_id, int64_t seq)>
      corrupt_event;
};

// For INSTANTIATE_TEST_SUITE_P's name generator.
std::string RunStoreFactoryName(const ::testing::TestParamInfo<RunStoreFactory>& info);

// So gtest prints the parameter by name.
void PrintTo(const RunStoreFactory& factory, std::ostream* os);

// The fixture of the suites: a fresh store per test in `store()`.
class StoreConformanceTest : public ::testing::TestWithParam<RunStoreFactory> {
 protected:
  void SetUp() override;
  void TearDown() override;

  RouterStore& store() { return *store_; }
  // Drops the store and opens the same location again.
  void Reopen();
  // A second store on the same location, beside store() (as a second router would have).
  std::unique_ptr<RouterStore> OpenAnother();
  // The factory's corrupt_run / corrupt_event on this test's location.
  absl::Status CorruptRun(const std::string& run_id);
  absl::Status CorruptEvent(const std::string& run_id, int64_t seq);

 private:
  std::string location_;
  std::unique_ptr<RouterStore> store_;
};

// RunStore's contract (run_store.h): runs, events, snapshots, commits and their batches, pages.
class RunStoreConformanceTest : public StoreConformanceTest {};
// FleetStore's (fleet_store.h): joining, renewing, leaving, claiming, and the fencing of
// RunStore::CommitOwned by the lease epoch.
class FleetStoreConformanceTest : public StoreConformanceTest {};
// CommitFeed's (commit_feed.h): which commits are noticed, and what a notice says.
class CommitFeedConformanceTest : public StoreConformanceTest {};
// NotificationOutbox's (notification_outbox.h): the notices of pauses and ends, their claim,
// hold, update and fencing.
class NotificationOutboxConformanceTest : public StoreConformanceTest {};

}  // namespace rein

#endif  // REIN_ROUTER_SERVICE_STORE_RUN_STORE_CONFORMANCE_H_
