// Start-up rules on who may reach a service's port.
#include "common/listen_policy.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace rein {

bool IsLoopbackListen(absl::string_view listen) {
  if (absl::StartsWith(listen, "unix:")) return true;
  absl::string_view host = listen;
  if (size_t colon = listen.rfind(':'); colon != absl::string_view::npos) {
    host = listen.substr(0, colon);
  }
  if (host == "localhost" || host == "[::1]" || host == "::1") return true;
  return absl::StartsWith(host, "127.");
}

bool ServesUnauthenticated(const ListenPolicy& policy) {
  return !policy.callers_authenticated && !IsLoopbackListen(policy.listen);
}

absl::Status CheckListenPolicy(const ListenPolicy& policy) {
  if (IsLoopbackListen(policy.listen)) return absl::OkStatus();
  if (!policy.callers_authenticated && !policy.allow_unauthenticated) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--listen=", policy.listen, " is not loopback and callers are not authenticated: give ",
        policy.authenticate_with,
        ", or --allow_unauthenticated to let anyone who reaches the port ",
        policy.unauthenticated_means));
  }
  if (policy.bearer_tokens && !policy.tls && !policy.allow_plaintext_tokens) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--listen=", policy.listen,
        " is not loopback and serves bearer tokens without TLS (anyone on the path could read "
        "and replay them): give --tls_cert, --tls_key and --tls_ca, or "
        "--allow_plaintext_tokens"));
  }
  return absl::OkStatus();
}

}  // namespace rein
