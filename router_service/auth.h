// Who may call the public Router API: bearer tokens from a file, mapped to a principal and roles.
#ifndef REIN_ROUTER_SERVICE_AUTH_H_
#define REIN_ROUTER_SERVICE_AUTH_H_

#include <cstdint>
#include <map>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"

namespace rein {

// Roles, as bits of Principal::roles.
enum Role : uint32_t {
  kRoleViewer = 1,    // GetRun, ListRuns, WatchRun, ExportRun
  kRoleOperator = 2,  // viewer's calls plus StartRun, CancelRun, ForkRun, ListNotifications
  kRoleReviewer = 4,  // viewer's calls plus ResumeRun
  kRoleAdmin = 8,     // every call, in every namespace
};

struct Principal {
  std::string name;
  uint32_t roles = 0;
  // The namespace the principal acts in (docs/NAMESPACES.md); `admin` spans them all.
  std::string namespace_name = "default";
};

// The token file: one line per token,
// `sha256:<64 hex digits> <principal> <role>[,<role>...] [namespace=<ns>]`, blank lines and `#`
// comments allowed; the namespace defaults to `default`. Maps the lower-case hex SHA-256 of a
// token to its principal. Errors name the line and the problem (never the whole hash).
absl::StatusOr<std::map<std::string, Principal>> ParseTokenFile(absl::string_view content);

// Lower-case hex SHA-256 of `data`.
std::string Sha256Hex(absl::string_view data);

// The roles that may call `method` (a Router method name such as "StartRun"); 0 for a method
// not in the table, which nobody may call.
uint32_t RolesAllowedFor(absl::string_view method);

struct AuthOptions {
  std::string tokens_file;                            // --auth_tokens_file
  absl::Duration reload_check = absl::Seconds(2);     // how often the file's stat is checked
  int max_failures_per_window = 20;                   // per credential, then refused
  absl::Duration failure_window = absl::Seconds(60);  // the rate limit's window
};

// Authenticates and authorizes calls against the token file, which is read again when it
// changes (checked at most every reload_check, on calls): a removed line revokes its token.
// A file that fails to parse on reload is logged and the last good table stays. Failed
// attempts are counted in rein_router_auth_failures_total{reason} and rate limited by what
// failed, not by where it came from: an unknown token by its hash, a missing or malformed
// authorization header by the peer host. A credential with max_failures_per_window failures in
// failure_window gets RESOURCE_EXHAUSTED until the window ends; a valid token never fails, so
// it is never limited, whatever else came from its address (behind a proxy, every client
// shares one). A reloaded file starts every window afresh. Thread-safe.
class Authenticator {
 public:
  Authenticator(AuthOptions options, Clock* clock);

  // Reads the file the first time; the error (line and problem) refuses start.
  absl::Status Load();

  // The principal allowed to call `method` with the `authorization` metadata value
  // ("Bearer <token>", "" when absent) from `peer` (gRPC's peer string, e.g.
  // "ipv4:10.0.0.7:41234"). UNAUTHENTICATED without a known token, PERMISSION_DENIED outside
  // the principal's roles; the messages say nothing about why a token is unknown.
  absl::StatusOr<Principal> Authorize(absl::string_view method, absl::string_view authorization,
                                      absl::string_view peer);

  // Authorize without the role check: the principal of the token in `authorization`, whose
  // roles the caller checks (RouterApi does, per method). The same failures, counting and
  // rate limit as Authorize.
  absl::StatusOr<Principal> Authenticate(absl::string_view authorization, absl::string_view peer);

  // Whether the token in `authorization` is still in the file (read again if it changed) for
  // the principal `as` (the one the call was admitted as: the same name, roles and namespace),
  // for a long call checking that its caller was not revoked or moved meanwhile. Not counted
  // toward the rate limit.
  bool StillValid(absl::string_view authorization, const Principal& as);

 private:
  struct Window {
    absl::Time start;
    int failures = 0;
  };
  void MaybeReloadLocked(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status Fail(absl::Status status, const std::string& credential, const char* reason,
                    absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const AuthOptions options_;
  Clock* const clock_;
  absl::Mutex mu_;
  std::map<std::string, Principal> tokens_ ABSL_GUARDED_BY(mu_);
  std::string file_stamp_ ABSL_GUARDED_BY(mu_);  // inode, size, mtime of the loaded file
  absl::Time last_check_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  // By credential: "token:<16 hex of its SHA-256>" or "none:<peer host>".
  std::map<std::string, Window> failures_ ABSL_GUARDED_BY(mu_);
};

}  // namespace rein

#endif  // REIN_ROUTER_SERVICE_AUTH_H_
