// TLS credentials from PEM files (gRPC's FileWatcherCertificateProvider) and start-up checks.
#include "common/tls.h"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
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

}  // namespace

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

std::shared_ptr<grpc::ServerCredentials> MakeServerCredentials(const TlsFiles& files,
                                                               bool require_client_cert) {
  if (!files.enabled()) return grpc::InsecureServerCredentials();
  grpc::experimental::TlsServerCredentialsOptions options(Provider(files));
  options.watch_identity_key_cert_pairs();
  options.watch_root_certs();
  options.set_cert_request_type(require_client_cert
                                    ? GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY
                                    : GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  return grpc::experimental::TlsServerCredentials(options);
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
