// How reinctl reaches the router: TLS files and the bearer token (docs/SECURITY.md).
#ifndef REIN_CLI_CONNECTION_H_
#define REIN_CLI_CONNECTION_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/tls.h"
#include "grpcpp/grpcpp.h"

namespace rein::cli {

struct ConnectionFlags {
  TlsFiles tls;            // --tls_ca, and --tls_cert/--tls_key for --require_client_cert routers
  std::string token_file;  // --token_file: a file holding the token (else $REIN_TOKEN)
};

// Takes --tls_ca, --tls_cert, --tls_key and --token_file (`--flag=V` or `--flag V`, anywhere)
// out of `args`, leaving the rest for ParseArgs. INVALID_ARGUMENT names a flag without a value
// or a TLS file that cannot be used.
absl::StatusOr<ConnectionFlags> ExtractConnectionFlags(std::vector<std::string>* args);

// The token: the first line of --token_file (surrounding whitespace dropped), else
// `env_token` ($REIN_TOKEN; may be null); "" = none.
absl::StatusOr<std::string> LoadToken(const ConnectionFlags& flags, const char* env_token);

// A channel to the router over TLS when flags.tls is set, that sends
// `authorization: Bearer <token>` on every call when `token` is not empty.
std::shared_ptr<grpc::Channel> MakeRouterChannel(const std::string& target,
                                                 const ConnectionFlags& flags,
                                                 const std::string& token);

}  // namespace rein::cli

#endif  // REIN_CLI_CONNECTION_H_
