// TLS credentials from PEM files (gRPC's FileWatcherCertificateProvider) and start-up checks.
#include "common/tls.h"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/listen_policy.h"
#include "common/log.h"
#include "common/metrics.h"
#include "grpc/grpc_security_constants.h"
#include "grpcpp/security/auth_metadata_processor.h"
#include "grpcpp/security/tls_certificate_provider.h"
#include "grpcpp/security/tls_certificate_verifier.h"
#include "grpcpp/security/tls_credentials_options.h"

namespace rein {
namespace {

absl::Status ReadPem(const std::string& flag, const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::InvalidArgumentError(absl::StrCat(flag, ": cannot read ", path));
  std::ostringstream text;
  text << in.rdbuf();
  *out = text.str();
  if (out->find("-----BEGIN ") == std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(flag, ": ", path, " holds no PEM data"));
  }
  return absl::OkStatus();
}

struct BioDeleter {
  void operator()(BIO* bio) const { BIO_free(bio); }
};
struct X509Deleter {
  void operator()(X509* x) const { X509_free(x); }
};
struct KeyDeleter {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};

std::unique_ptr<BIO, BioDeleter> Bio(const std::string& pem) {
  return std::unique_ptr<BIO, BioDeleter>(
      BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
}

absl::Status CheckCertificate(const std::string& flag, const std::string& path, std::string* pem,
                              std::unique_ptr<X509, X509Deleter>* cert) {
  if (absl::Status s = ReadPem(flag, path, pem); !s.ok()) return s;
  auto bio = Bio(*pem);
  cert->reset(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
  if (*cert == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(flag, ": ", path, " holds no PEM certificate"));
  }
  return absl::OkStatus();
}

absl::Status CheckKeyPair(const TlsFiles& files) {
  std::string cert_pem, key_pem;
  std::unique_ptr<X509, X509Deleter> cert;
  if (absl::Status s = CheckCertificate("--tls_cert", files.cert, &cert_pem, &cert); !s.ok()) {
    return s;
  }
  if (absl::Status s = ReadPem("--tls_key", files.key, &key_pem); !s.ok()) return s;
  auto bio = Bio(key_pem);
  std::unique_ptr<EVP_PKEY, KeyDeleter> key(
      PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
  if (key == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("--tls_key: ", files.key, " holds no unencrypted PEM private key"));
  }
  if (X509_check_private_key(cert.get(), key.get()) != 1) {
    return absl::InvalidArgumentError(absl::StrCat("--tls_key: ", files.key,
                                                   " is not the key of the certificate in ",
                                                   "--tls_cert ", files.cert));
  }
  return absl::OkStatus();
}

absl::Status CheckCa(const TlsFiles& files) {
  std::string pem;
  std::unique_ptr<X509, X509Deleter> cert;
  return CheckCertificate("--tls_ca", files.ca, &pem, &cert);
}

std::shared_ptr<grpc::experimental::FileWatcherCertificateProvider> Provider(
    const TlsFiles& files) {
  return std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
      files.key, files.cert, files.ca, kTlsReloadSeconds);
}

// Refuses calls whose client certificate carries none of the allowed DNS names. Runs on the
// call's own thread (no blocking work), after the handshake verified the chain.
class AllowedClientsProcessor final : public grpc::AuthMetadataProcessor {
 public:
  explicit AllowedClientsProcessor(std::vector<std::string> allowed)
      : allowed_(std::move(allowed)) {}

  bool IsBlocking() const override { return false; }

  grpc::Status Process(const InputMetadata& metadata, grpc::AuthContext* context,
                       OutputMetadata* /*consumed*/, OutputMetadata* /*response*/) override {
    // Health answers SERVING or not and nothing else: probes (a kubelet's exec of rein-health
    // with the pod's own certificate) pass without the router's identity.
    if (auto path = metadata.find(":path");
        path != metadata.end() &&
        absl::StartsWith(absl::string_view(path->second.data(), path->second.size()),
                         "/grpc.health.v1.Health/")) {
      return grpc::Status::OK;
    }
    std::vector<std::string> presented;
    if (context != nullptr) {
      for (const grpc::string_ref& name :
           context->FindPropertyValues(GRPC_PEER_DNS_PROPERTY_NAME)) {
        presented.emplace_back(name.data(), name.size());
      }
    }
    absl::Status status = CheckClientIdentity(presented, allowed_);
    if (status.ok()) return grpc::Status::OK;
    Metrics::Global().Add("rein_tls_clients_refused_total", 1);
    return grpc::Status(grpc::StatusCode::PERMISSION_DENIED, std::string(status.message()));
  }

 private:
  const std::vector<std::string> allowed_;
};

bool IsDnsName(absl::string_view name) {
  absl::ConsumePrefix(&name, "*.");
  if (name.empty() || name.size() > 253 || name.front() == '.' || name.back() == '.') return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.';
  });
}

}  // namespace

absl::StatusOr<std::vector<std::string>> ParseAllowedClients(absl::string_view value) {
  std::vector<std::string> names;
  for (absl::string_view name : absl::StrSplit(value, ',')) {
    name = absl::StripAsciiWhitespace(name);
    if (name.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--allowed_clients: an empty name in \"", value.substr(0, 200),
                       "\" (comma-separated DNS names, e.g. ", kRouterIdentity, ")"));
    }
    if (!IsDnsName(name)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--allowed_clients: \"", name.substr(0, 64), "\" is not a DNS name"));
    }
    names.push_back(absl::AsciiStrToLower(name));
  }
  return names;
}

absl::Status CheckClientIdentity(const std::vector<std::string>& presented,
                                 const std::vector<std::string>& allowed) {
  for (const std::string& name : presented) {
    for (const std::string& want : allowed) {
      if (absl::EqualsIgnoreCase(name, want)) return absl::OkStatus();
    }
  }
  // Names come from a certificate the CA signed; still, bound what goes back.
  std::string shown = presented.empty() ? "none" : absl::StrJoin(presented, ", ");
  if (shown.size() > 200) shown = absl::StrCat(shown.substr(0, 200), "...");
  return absl::PermissionDeniedError(
      absl::StrCat("the client certificate's identity (DNS names: ", shown,
                   ") is not allowed: this service accepts only ", absl::StrJoin(allowed, ", "),
                   " (--allowed_clients)"));
}

absl::Status CheckServerTlsFiles(const TlsFiles& files) {
  if (!files.enabled()) return absl::OkStatus();
  for (const auto& [flag, path] :
       {std::pair{"--tls_cert", files.cert}, std::pair{"--tls_key", files.key},
        std::pair{"--tls_ca", files.ca}}) {
    if (path.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(flag,
                       ": required with the other TLS flags (--tls_cert, --tls_key, "
                       "--tls_ca go together)"));
    }
  }
  if (absl::Status s = CheckKeyPair(files); !s.ok()) return s;
  return CheckCa(files);
}

absl::Status CheckClientTlsFiles(const TlsFiles& files) {
  if (!files.enabled()) return absl::OkStatus();
  if (files.ca.empty()) return absl::InvalidArgumentError("--tls_ca: required for TLS");
  if (files.cert.empty() != files.key.empty()) {
    return absl::InvalidArgumentError("--tls_cert and --tls_key: give both or neither");
  }
  if (!files.cert.empty()) {
    if (absl::Status s = CheckKeyPair(files); !s.ok()) return s;
  }
  return CheckCa(files);
}

std::shared_ptr<grpc::ServerCredentials> MakeServerCredentials(
    const TlsFiles& files, bool require_client_cert,
    const std::vector<std::string>& allowed_clients) {
  if (!files.enabled()) return grpc::InsecureServerCredentials();
  grpc::experimental::TlsServerCredentialsOptions options(Provider(files));
  options.watch_identity_key_cert_pairs();
  options.watch_root_certs();
  options.set_cert_request_type(require_client_cert
                                    ? GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY
                                    : GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  std::shared_ptr<grpc::ServerCredentials> credentials =
      grpc::experimental::TlsServerCredentials(options);
  if (require_client_cert && !allowed_clients.empty()) {
    credentials->SetAuthMetadataProcessor(
        std::make_shared<AllowedClientsProcessor>(allowed_clients));
  }
  return credentials;
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeRouterOnlyCredentials(
    const RouterOnlyPort& port) {
  if (absl::Status status = CheckServerTlsFiles(port.files); !status.ok()) return status;
  absl::StatusOr<std::vector<std::string>> allowed = ParseAllowedClients(port.allowed_clients);
  if (!allowed.ok()) return allowed.status();
  ListenPolicy policy;
  policy.listen = port.listen;
  policy.tls = policy.callers_authenticated = port.files.enabled();
  policy.allow_unauthenticated = port.allow_unauthenticated;
  policy.unauthenticated_means = port.unauthenticated_means;
  if (absl::Status status = CheckListenPolicy(policy); !status.ok()) return status;
  if (ServesUnauthenticated(policy)) {
    LogError(absl::StrCat("SERVING WITHOUT AUTHENTICATION on a non-loopback address "
                          "(--allow_unauthenticated): anyone who reaches the port may ",
                          port.unauthenticated_means),
             {{"listen", port.listen}});
  }
  return MakeServerCredentials(port.files, /*require_client_cert=*/true, *allowed);
}

std::shared_ptr<grpc::ChannelCredentials> MakeChannelCredentials(const TlsFiles& files) {
  if (!files.enabled()) return grpc::InsecureChannelCredentials();
  grpc::experimental::TlsChannelCredentialsOptions options;
  options.set_certificate_provider(Provider(files));
  options.watch_root_certs();
  if (!files.cert.empty()) options.watch_identity_key_cert_pairs();
  options.set_verify_server_certs(true);
  // The chain is checked against files.ca; this adds the check of the server's name.
  options.set_certificate_verifier(
      std::make_shared<grpc::experimental::HostNameCertificateVerifier>());
  return grpc::experimental::TlsCredentials(options);
}

void AddTlsTargetName(const std::string& name, grpc::ChannelArguments* args) {
  if (!name.empty()) args->SetSslTargetNameOverride(name);
}

}  // namespace rein
