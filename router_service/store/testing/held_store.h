// HeldStore: a RouterStore in front of another whose writes a test can hold, and counts.
#ifndef REIN_ROUTER_SERVICE_STORE_TESTING_HELD_STORE_H_
#define REIN_ROUTER_SERVICE_STORE_TESTING_HELD_STORE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "router_service/store/router_store.h"

namespace rein::testing {

// Passes every call to `inner` (not owned). Each write (CreateRun, Commit, CommitOwned and
// each request of a CommitBatch) is counted, and waits while the test holds the store: Hold,
// then AwaitHeld(n) until n writes wait, then Release. Thread-safe.
class HeldStore final : public RouterStore {
 public:
  explicit HeldStore(RouterStore* inner) : inner_(inner) {}

  void Hold() {
    absl::MutexLock lock(&mu_);
    held_ = true;
  }
  void Release() {
    absl::MutexLock lock(&mu_);
    held_ = false;
  }
  // Waits until `n` writes are waiting in the held store.
  void AwaitHeld(int n) {
    absl::MutexLock lock(&mu_);
    auto reached = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return waiting_ >= n; };
    mu_.Await(absl::Condition(&reached));
  }
  // Writes that reached this store so far.
  int64_t writes() {
    absl::MutexLock lock(&mu_);
    return writes_;
  }

  absl::StatusOr<CreateResult> CreateRun(const rein::v1::Run& run,
                                         std::vector<rein::v1::RunEvent> events) override {
    Write(1);
    return inner_->CreateRun(run, std::move(events));
  }
  absl::StatusOr<std::vector<rein::v1::RunEvent>> Commit(const std::string& run_id,
                                                         int64_t expected_version,
                                                         const rein::v1::RunState& new_state,
                                                         std::vector<rein::v1::RunEvent> events,
                                                         const std::optional<Snapshot>& snapshot,
                                                         absl::Time now) override {
    Write(1);
    return inner_->Commit(run_id, expected_version, new_state, std::move(events), snapshot, now);
  }
  absl::StatusOr<std::vector<rein::v1::RunEvent>> CommitOwned(
      const std::string& run_id, int64_t lease_epoch, int64_t expected_version,
      const rein::v1::RunState& new_state, std::vector<rein::v1::RunEvent> events,
      const std::optional<Snapshot>& snapshot, absl::Time now) override {
    Write(1);
    return inner_->CommitOwned(run_id, lease_epoch, expected_version, new_state, std::move(events),
                               snapshot, now);
  }
  std::vector<absl::StatusOr<std::vector<rein::v1::RunEvent>>> CommitBatch(
      std::vector<CommitRequest>& requests) override {
    Write(static_cast<int64_t>(requests.size()));
    return inner_->CommitBatch(requests);
  }

  // GetRun and FindRunByRequestId calls that reached this store so far.
  int64_t run_reads() {
    absl::MutexLock lock(&mu_);
    return run_reads_;
  }
  absl::StatusOr<rein::v1::Run> GetRun(const std::string& run_id) override {
    {
      absl::MutexLock lock(&mu_);
      ++run_reads_;
    }
    return inner_->GetRun(run_id);
  }
  absl::StatusOr<rein::v1::Run> FindRunByRequestId(const std::string& namespace_name,
                                                   const std::string& request_id) override {
    {
      absl::MutexLock lock(&mu_);
      ++run_reads_;
    }
    return inner_->FindRunByRequestId(namespace_name, request_id);
  }
  absl::StatusOr<std::vector<rein::v1::RunEvent>> ReadEvents(const std::string& run_id,
                                                             int64_t after_seq,
                                                             int limit) override {
    return inner_->ReadEvents(run_id, after_seq, limit);
  }
  absl::StatusOr<RunPage> ListRuns(const RunFilter& filter, int page_size,
                                   const std::string& page_token) override {
    return inner_->ListRuns(filter, page_size, page_token);
  }
  absl::StatusOr<std::vector<Snapshot>> ListSnapshotsAfter(const std::string& run_id,
                                                           int64_t after_version,
                                                           int limit) override {
    return inner_->ListSnapshotsAfter(run_id, after_version, limit);
  }
  absl::StatusOr<std::vector<std::string>> ListUnfinishedRunIds() override {
    return inner_->ListUnfinishedRunIds();
  }
  absl::StatusOr<NamespaceUsage> GetNamespaceUsage(const std::string& namespace_name,
                                                   absl::Time since) override {
    return inner_->GetNamespaceUsage(namespace_name, since);
  }
  absl::StatusOr<std::vector<Notification>> ClaimNotifications(absl::Time now,
                                                               absl::Time hold_until,
                                                               int limit) override {
    return inner_->ClaimNotifications(now, hold_until, limit);
  }
  absl::Status UpdateNotification(const NotificationUpdate& update) override {
    return inner_->UpdateNotification(update);
  }
  absl::StatusOr<std::vector<Notification>> ListNotifications(NotificationStatus status, bool any,
                                                              const std::string& namespace_name,
                                                              int limit) override {
    return inner_->ListNotifications(status, any, namespace_name, limit);
  }
  absl::StatusOr<NotificationCounts> CountNotifications() override {
    return inner_->CountNotifications();
  }
  bool Shared() const override { return inner_->Shared(); }
  absl::Status JoinFleet(const std::string& router_id, absl::Duration ttl) override {
    return inner_->JoinFleet(router_id, ttl);
  }
  absl::Status RenewLease() override { return inner_->RenewLease(); }
  absl::Status LeaveFleet() override { return inner_->LeaveFleet(); }
  absl::StatusOr<std::vector<rein::v1::Run>> ClaimRuns(bool include_mine) override {
    return inner_->ClaimRuns(include_mine);
  }
  absl::StatusOr<std::map<std::string, int64_t>> OwnedRunVersions() override {
    return inner_->OwnedRunVersions();
  }
  void SubscribeCommits(std::function<void(const CommitNotice&)> on_commit) override {
    inner_->SubscribeCommits(std::move(on_commit));
  }

 private:
  void Write(int64_t n) {
    absl::MutexLock lock(&mu_);
    writes_ += n;
    ++waiting_;
    auto open = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !held_; };
    mu_.Await(absl::Condition(&open));
    --waiting_;
  }

  RouterStore* const inner_;
  absl::Mutex mu_;
  bool held_ ABSL_GUARDED_BY(mu_) = false;
  int waiting_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t writes_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t run_reads_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace rein::testing

#endif  // REIN_ROUTER_SERVICE_STORE_TESTING_HELD_STORE_H_
