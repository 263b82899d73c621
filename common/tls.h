// TLS for the three services and their clients: credentials from PEM files reloaded on change.
#ifndef REIN_COMMON_TLS_H_
#define REIN_COMMON_TLS_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "grpcpp/grpcpp.h"

namespace rein {

// How often certificate files are read again: a changed certificate, key or CA is used by new
// handshakes at most this long after it lands on disk. Connections already open keep theirs.
inline constexpr unsigned int kTlsReloadSeconds = 5;

// The PEM files of --tls_cert, --tls_key and --tls_ca. All empty = plaintext.
struct TlsFiles {
  std::string cert;  // this process's certificate chain
  std::string key;   // its private key
  std::string ca;    // the CA that signs the peers' certificates

  bool enabled() const { return !cert.empty() || !key.empty() || !ca.empty(); }
};

// Checks the files a service needs before it starts: a service needs all three (a client such
// as reinctl may give only the CA, or all three); each must be readable PEM, and the key must
// belong to the certificate. The error names the flag and the file.
absl::Status CheckServerTlsFiles(const TlsFiles& files);
absl::Status CheckClientTlsFiles(const TlsFiles& files);

// The name the router's certificate carries (a DNS subjectAltName): the identity the executor
// and the planner accept by default.
inline constexpr char kRouterIdentity[] = "rein-router";

// Parses --allowed_clients: comma-separated DNS names (letters, digits, '-', '.'; a leading
// "*." allowed as in a certificate's wildcard name, matched literally). Empty entries and an
// empty list are INVALID_ARGUMENT naming the flag.
absl::StatusOr<std::vector<std::string>> ParseAllowedClients(absl::string_view value);

// Whether a client whose certificate carries the DNS names `presented` may call a service that
// accepts `allowed` (case-insensitive, exact). PERMISSION_DENIED naming both lists otherwise.
absl::Status CheckClientIdentity(const std::vector<std::string>& presented,
                                 const std::vector<std::string>& allowed);

// Server credentials: plaintext when `files` is empty; else TLS with the files reloaded every
// kTlsReloadSeconds. With `require_client_cert` a client must present a certificate signed by
// files.ca (and not expired) or the handshake fails. With `allowed_clients` too, every call
// (except grpc.health.v1, so that probes need no router certificate) from a certificate that
// carries none of those DNS names is refused with CheckClientIdentity's PERMISSION_DENIED and
// counted in rein_tls_clients_refused_total.
std::shared_ptr<grpc::ServerCredentials> MakeServerCredentials(
    const TlsFiles& files, bool require_client_cert,
    const std::vector<std::string>& allowed_clients = {});

// The port of a service that only the router calls (the executor, the planner), from its flags.
struct RouterOnlyPort {
  std::string listen;                  // --listen
  TlsFiles files;                      // --tls_cert, --tls_key, --tls_ca
  std::string allowed_clients;         // --allowed_clients, as given
  bool allow_unauthenticated = false;  // --allow_unauthenticated
  std::string unauthenticated_means;   // what anyone reaching a plaintext port could do
};

// Checks the TLS files, --allowed_clients and the listen policy (common/listen_policy.h) and
// returns the port's credentials: mTLS with the allowlist, or plaintext (then logged loudly
// when the address is not loopback). The error names the flag; nothing was started.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeRouterOnlyCredentials(
    const RouterOnlyPort& port);

// Channel credentials: plaintext when `files` is empty; else TLS that trusts files.ca only,
// presents files.cert/files.key when given, and checks that the server's certificate carries
// the name the channel is created for (see AddTlsTargetName).
std::shared_ptr<grpc::ChannelCredentials> MakeChannelCredentials(const TlsFiles& files);

// Makes a TLS channel check `name` (a DNS name or IP address in the server's certificate)
// instead of the host of its target. Empty = the target's host.
void AddTlsTargetName(const std::string& name, grpc::ChannelArguments* args);

}  // namespace rein

#endif  // REIN_COMMON_TLS_H_
