// HostCheck: which Host and Origin headers the HTTP port answers, against DNS rebinding and
// cross-site requests from browsers.
#ifndef REIN_ROUTER_SERVICE_CONNECT_HOST_CHECK_H_
#define REIN_ROUTER_SERVICE_CONNECT_HOST_CHECK_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace rein::connect {

// A web page whose name its owner re-points at 127.0.0.1 (DNS rebinding) reaches a router on
// loopback as a same-origin page, with its own name in Host; a page of another site reaches it
// cross-origin, with its origin in Origin. So:
// - Host: checked when the port listens on loopback or names are configured
//   (--http_allowed_hosts). Then it must be an IP literal (a rebinding needs a name), localhost
//   (or a name under .localhost), or one of the configured names; else PERMISSION_DENIED
//   (answered 421). Without either, any Host is served, as before.
// - Origin (a browser's request): absent is fine (curl, SDKs); present, it must be this
//   port's own origin, `<scheme>://<Host>` (no CORS is offered); else PERMISSION_DENIED
//   (answered 403).
// Immutable; thread-safe.
class HostCheck {
 public:
  // `listen` is the port's IPv4-HOST:PORT; `allowed_hosts` names (no port), lower case or not;
  // `tls`: the port's scheme is https.
  HostCheck(absl::string_view listen, std::vector<std::string> allowed_hosts, bool tls);

  // OK when a request with these headers (null = absent) may be served; else why not.
  absl::Status CheckHost(const char* host) const;
  absl::Status CheckOrigin(const char* host, const char* origin) const;

 private:
  bool enforce_host_;
  std::vector<std::string> allowed_hosts_;
  std::string scheme_;
};

// --http_allowed_hosts: a comma-separated list of DNS names (letters, digits, '-', '.');
// INVALID_ARGUMENT naming the bad one.
absl::StatusOr<std::vector<std::string>> ParseAllowedHosts(absl::string_view flag);

}  // namespace rein::connect

#endif  // REIN_ROUTER_SERVICE_CONNECT_HOST_CHECK_H_
