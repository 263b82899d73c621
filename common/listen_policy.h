// Who may reach a service's port: the start-up rules every service applies to its --listen.
#ifndef REIN_COMMON_LISTEN_POLICY_H_
#define REIN_COMMON_LISTEN_POLICY_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace rein {

// Whether a HOST:PORT address is reachable only from this machine: 127.0.0.0/8, localhost,
// [::1], or a unix: socket.
bool IsLoopbackListen(absl::string_view listen);

// What a service's flags say about its port, for CheckListenPolicy.
struct ListenPolicy {
  std::string listen;                   // --listen
  bool callers_authenticated = false;   // every call proves who it is (client certificates or
                                        // bearer tokens)
  bool allow_unauthenticated = false;   // --allow_unauthenticated
  bool tls = false;                     // the port serves TLS
  bool bearer_tokens = false;           // calls carry bearer tokens (the router's tokens file)
  bool allow_plaintext_tokens = false;  // --allow_plaintext_tokens
  // For the refusal's message: the flags that authenticate callers, and what anyone who
  // reaches the port could do without them (e.g. "run tools in any workspace").
  std::string authenticate_with = "--tls_cert, --tls_key and --tls_ca (mutual TLS)";
  std::string unauthenticated_means = "call every RPC";
};

// The start-up rules, shared by the three services:
//  - a non-loopback --listen whose callers are not authenticated is refused unless
//    --allow_unauthenticated (then the caller should log that it serves anyone);
//  - bearer tokens on a non-loopback --listen without TLS are refused unless
//    --allow_plaintext_tokens (anyone on the path could read and replay them).
// INVALID_ARGUMENT naming the address, the rule and the flags that satisfy it.
absl::Status CheckListenPolicy(const ListenPolicy& policy);

// Whether the service starts serving anyone on a non-loopback address (CheckListenPolicy passed
// only because of --allow_unauthenticated): the caller logs it loudly.
bool ServesUnauthenticated(const ListenPolicy& policy);

}  // namespace rein

#endif  // REIN_COMMON_LISTEN_POLICY_H_
