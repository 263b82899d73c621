// TLS for the three services and their clients: credentials from PEM files reloaded on change.
#ifndef REIN_COMMON_TLS_H_
#define REIN_COMMON_TLS_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
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

// Server credentials: plaintext when `files` is empty; else TLS with the files reloaded every
// kTlsReloadSeconds. With `require_client_cert` a client must present a certificate signed by
// files.ca (and not expired) or the handshake fails.
std::shared_ptr<grpc::ServerCredentials> MakeServerCredentials(const TlsFiles& files,
                                                               bool require_client_cert);

// Channel credentials: plaintext when `files` is empty; else TLS that trusts files.ca only,
// presents files.cert/files.key when given, and checks that the server's certificate carries
// the name the channel is created for (see AddTlsTargetName).
std::shared_ptr<grpc::ChannelCredentials> MakeChannelCredentials(const TlsFiles& files);

// Makes a TLS channel check `name` (a DNS name or IP address in the server's certificate)
// instead of the host of its target. Empty = the target's host.
void AddTlsTargetName(const std::string& name, grpc::ChannelArguments* args);

}  // namespace rein

#endif  // REIN_COMMON_TLS_H_
