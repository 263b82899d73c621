// One connection of the router's HTTP port below HTTP: the socket, plain or TLS (OpenSSL 3),
// with a bound on the bytes one request may read, and the TLS context (certificate, key and,
// with client certificates, the CA that signs them) reread when its files change, as the gRPC
// port does (common/tls.h).
#ifndef REIN_ROUTER_SERVICE_CONNECT_HTTP_CONNECTION_H_
#define REIN_ROUTER_SERVICE_CONNECT_HTTP_CONNECTION_H_

#include <openssl/ssl.h>
#include <sys/types.h>

#include <cstddef>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "httplib.h"

namespace rein::connect {

// The TLS files of the HTTP port: empty cert = plain HTTP.
struct HttpTlsFiles {
  std::string cert;       // PEM certificate chain (--tls_cert)
  std::string key;        // its private key (--tls_key)
  std::string client_ca;  // PEM CA of clients' certificates; empty = none asked for
  bool enabled() const { return !cert.empty(); }
};

using SslCtxPtr = std::shared_ptr<SSL_CTX>;

// A server SSL_CTX from the files (TLS 1.2 or later). With files.client_ca a client must
// present a certificate that CA signed (and not expired), or the handshake fails. The error
// names the file.
absl::StatusOr<SslCtxPtr> MakeServerSslCtx(const HttpTlsFiles& files);

// The current SSL_CTX, built again from the files at most every `reload_every` when one of
// them changed; a change that does not load keeps the last good context (and is logged).
// Connections already open keep theirs. Thread-safe.
class TlsContext {
 public:
  static absl::StatusOr<std::unique_ptr<TlsContext>> Load(HttpTlsFiles files,
                                                          absl::Duration reload_every);
  SslCtxPtr Current();

 private:
  TlsContext(HttpTlsFiles files, absl::Duration reload_every)
      : files_(std::move(files)), reload_every_(reload_every) {}
  std::string Stamp() const;  // the files' sizes and modification times

  const HttpTlsFiles files_;
  const absl::Duration reload_every_;
  absl::Mutex mu_;
  SslCtxPtr ctx_ ABSL_GUARDED_BY(mu_);
  std::string stamp_ ABSL_GUARDED_BY(mu_);
  absl::Time checked_ ABSL_GUARDED_BY(mu_);
};

// A connection's bytes for cpp-httplib: a blocking socket whose reads and writes time out
// (SO_RCVTIMEO, SO_SNDTIMEO), under TLS when `ssl` is given (owned; shut down when destroyed).
// Reads are buffered; past the budget set by StartRequest a read fails, so that no request
// (its line, headers and body) makes the server read more than that.
class ConnectionStream final : public httplib::Stream {
 public:
  ConnectionStream(int fd, SSL* ssl, absl::Duration io_timeout);
  ~ConnectionStream() override;

  // Accepts the TLS handshake (no-op in plain HTTP); false when it fails or times out.
  bool Handshake();
  // Whether a next request's first byte arrives within `idle` (keep-alive).
  bool WaitForRequest(absl::Duration idle);
  // A new request may read at most `budget` bytes, all of them before `deadline`: a client
  // that sends a byte now and then, each read within the timeout, is cut off there.
  void StartRequest(size_t budget, absl::Time deadline) {
    budget_ = budget;
    deadline_ = deadline;
  }
  SSL* ssl() const { return ssl_; }

  bool is_readable() const override;
  bool is_writable() const override;
  ssize_t read(char* ptr, size_t size) override;
  ssize_t write(const char* ptr, size_t size) override;
  void get_remote_ip_and_port(std::string& ip, int& port) const override;
  void get_local_ip_and_port(std::string& ip, int& port) const override;
  socket_t socket() const override { return fd_; }

 private:
  bool Fill();  // reads more into buffer_; false on error, end or timeout

  const int fd_;
  SSL* const ssl_;
  const absl::Duration io_timeout_;
  char buffer_[16384];
  size_t begin_ = 0;
  size_t end_ = 0;
  size_t budget_ = 0;
  absl::Time deadline_ = absl::InfiniteFuture();
};

}  // namespace rein::connect

#endif  // REIN_ROUTER_SERVICE_CONNECT_HTTP_CONNECTION_H_
