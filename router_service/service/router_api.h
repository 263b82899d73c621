// RouterApi: the Router's public calls and their checks (roles, namespaces, quotas), for the
// gRPC adapter and any other transport to call alike.
#ifndef REIN_ROUTER_SERVICE_SERVICE_ROUTER_API_H_
#define REIN_ROUTER_SERVICE_SERVICE_ROUTER_API_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "rein/v1/router.pb.h"
#include "router_service/auth.h"
#include "router_service/run_engine.h"
#include "router_service/service/quotas.h"

namespace rein {

// Who calls: the principal of a bearer token (router_service/auth.h), or, without tokens,
// anyone (every role, every namespace: a router without a token file behaves as before
// namespaces).
struct Caller {
  std::string principal;  // "" without tokens
  uint32_t roles = kRoleViewer | kRoleOperator | kRoleReviewer | kRoleAdmin;
  std::string namespace_name = "default";

  static Caller Of(const Principal& p) { return Caller{p.name, p.roles, p.namespace_name}; }
  // `admin` spans every namespace.
  bool spans_namespaces() const { return (roles & kRoleAdmin) != 0; }
};

// The public calls. Each checks, in this order: the caller's roles for the method
// (PERMISSION_DENIED), the request's fields (INVALID_ARGUMENT naming the field), and that the
// run is the caller's namespace's: another namespace's run is NOT_FOUND with the very message
// of an unknown id, after the same store read, so a caller learns nothing of runs outside its
// namespace. A start takes the caller's namespace (an admin's may name another in
// spec.namespace), is idempotent on request_id within it (a retry gets the first run, quota or
// not), and is admitted by the namespace's quotas (RESOURCE_EXHAUSTED naming the quota). Forks
// stay in their source's namespace and are admitted as starts there.
// A run in a reply has its spec.notify URLs cut to their origins (RedactNotify), whoever asks.
// Thread-safe; RunEngine does the work.
class RouterApi {
 public:
  // `quotas` may be null (no quotas). Neither is owned.
  RouterApi(RunEngine* engine, QuotaBook* quotas) : engine_(engine), quotas_(quotas) {}

  absl::StatusOr<rein::v1::Run> StartRun(const Caller& caller,
                                         const rein::v1::StartRunRequest& request,
                                         absl::Time deadline = absl::InfiniteFuture());
  absl::StatusOr<rein::v1::Run> GetRun(const Caller& caller, const std::string& run_id);
  absl::StatusOr<RunPage> ListRuns(const Caller& caller, const rein::v1::ListRunsRequest& request);
  absl::StatusOr<rein::v1::Run> CancelRun(const Caller& caller,
                                          const rein::v1::CancelRunRequest& request,
                                          absl::Time deadline = absl::InfiniteFuture());
  absl::StatusOr<rein::v1::Run> ResumeRun(const Caller& caller,
                                          const rein::v1::ResumeRunRequest& request,
                                          absl::Time deadline = absl::InfiniteFuture());
  absl::StatusOr<rein::v1::Run> ForkRun(const Caller& caller,
                                        const rein::v1::ForkRunRequest& request,
                                        absl::Time deadline = absl::InfiniteFuture());
  // ExportRun's pages: the run's snapshots above `after_version`, at most `limit`.
  absl::StatusOr<std::vector<Snapshot>> ExportRun(const Caller& caller, const std::string& run_id,
                                                  int64_t after_version, int limit);
  // WatchRun's admission: the run's namespace ("default" for one from before namespaces), for
  // the stream to stamp on its events (StampEvent), once the caller may watch it.
  absl::StatusOr<std::string> WatchRun(const Caller& caller,
                                       const rein::v1::WatchRunRequest& request);
  absl::StatusOr<rein::v1::QuotaReport> GetQuota(const Caller& caller,
                                                 const rein::v1::GetQuotaRequest& request);
  // The webhook outbox's notices of the runs of the caller's namespace (an admin: the one
  // named, or every one), newest first; no endpoint URL or secret in the reply.
  absl::StatusOr<rein::v1::ListNotificationsResponse> ListNotifications(
      const Caller& caller, const rein::v1::ListNotificationsRequest& request);

  // The stream's events carry their run's namespace.
  static void StampEvent(const std::string& namespace_name, rein::v1::RunEvent* event) {
    event->set_namespace_(namespace_name);
  }

  RunEngine* engine() { return engine_; }

 private:
  // The run, if the caller may see it; NOT_FOUND as for an unknown id otherwise.
  absl::StatusOr<rein::v1::Run> VisibleRun(const Caller& caller, const std::string& run_id);
  // A start or fork refused by a quota: the run already made under `request_id` in `ns`, if
  // any (a retry gets its first answer), else the refusal.
  absl::StatusOr<rein::v1::Run> FirstOrRefusal(const std::string& ns, const std::string& request_id,
                                               const absl::Status& refusal);
  // The namespace a call names (empty: the caller's own); PERMISSION_DENIED for another one
  // unless the caller is an admin.
  absl::StatusOr<std::string> NamedNamespace(const Caller& caller, const std::string& named,
                                             const char* field);

  RunEngine* const engine_;
  QuotaBook* const quotas_;
};

}  // namespace rein

#endif  // REIN_ROUTER_SERVICE_SERVICE_ROUTER_API_H_
