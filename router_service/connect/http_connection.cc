// One connection of the router's HTTP port below HTTP.
#include "router_service/connect/http_connection.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/log.h"

namespace rein::connect {
namespace {

std::string OpenSslError() {
  const unsigned long code = ERR_get_error();
  ERR_clear_error();
  if (code == 0) return "unknown error";
  char text[256];
  ERR_error_string_n(code, text, sizeof(text));
  return text;
}

void AddressOf(const sockaddr_storage& address, std::string& ip, int& port) {
  char text[INET6_ADDRSTRLEN] = {};
  if (address.ss_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(&address);
    inet_ntop(AF_INET, &v4->sin_addr, text, sizeof(text));
    port = ntohs(v4->sin_port);
  } else if (address.ss_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&address);
    inet_ntop(AF_INET6, &v6->sin6_addr, text, sizeof(text));
    port = ntohs(v6->sin6_port);
  }
  ip = text;
}

}  // namespace

absl::StatusOr<SslCtxPtr> MakeServerSslCtx(const HttpTlsFiles& files) {
  SslCtxPtr ctx(SSL_CTX_new(TLS_server_method()), &SSL_CTX_free);
  if (ctx == nullptr) return absl::InternalError("TLS: " + OpenSslError());
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
  SSL_CTX_set_options(ctx.get(), SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
  // Clients resume sessions (Node's agent does): without a context, a resumption with client
  // certificates fails the handshake with an internal_error alert.
  static constexpr unsigned char kSessionContext[] = "rein-http";
  SSL_CTX_set_session_id_context(ctx.get(), kSessionContext, sizeof(kSessionContext) - 1);
  if (SSL_CTX_use_certificate_chain_file(ctx.get(), files.cert.c_str()) != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--tls_cert ", files.cert, ": not a PEM certificate: ", OpenSslError()));
  }
  if (SSL_CTX_use_PrivateKey_file(ctx.get(), files.key.c_str(), SSL_FILETYPE_PEM) != 1 ||
      SSL_CTX_check_private_key(ctx.get()) != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--tls_key ", files.key, ": not the PEM key of --tls_cert: ", OpenSslError()));
  }
  if (!files.client_ca.empty()) {
    STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(files.client_ca.c_str());
    if (names == nullptr ||
        SSL_CTX_load_verify_locations(ctx.get(), files.client_ca.c_str(), nullptr) != 1) {
      if (names != nullptr) sk_X509_NAME_pop_free(names, X509_NAME_free);
      return absl::InvalidArgumentError(
          absl::StrCat("client CA ", files.client_ca, ": not a PEM certificate: ", OpenSslError()));
    }
    SSL_CTX_set_client_CA_list(ctx.get(), names);
    SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  }
  return ctx;
}

absl::StatusOr<std::unique_ptr<TlsContext>> TlsContext::Load(HttpTlsFiles files,
                                                             absl::Duration reload_every) {
  std::unique_ptr<TlsContext> context(new TlsContext(std::move(files), reload_every));
  absl::StatusOr<SslCtxPtr> ctx = MakeServerSslCtx(context->files_);
  if (!ctx.ok()) return ctx.status();
  absl::MutexLock lock(&context->mu_);
  context->ctx_ = *std::move(ctx);
  context->stamp_ = context->Stamp();
  context->checked_ = absl::Now();
  return context;
}

std::string TlsContext::Stamp() const {
  std::string stamp;
  for (const std::string* path : {&files_.cert, &files_.key, &files_.client_ca}) {
    struct stat info = {};
    if (path->empty() || stat(path->c_str(), &info) != 0) {
      absl::StrAppend(&stamp, "-;");
      continue;
    }
    absl::StrAppend(&stamp, info.st_size, ":", info.st_mtim.tv_sec, ".", info.st_mtim.tv_nsec, ":",
                    info.st_ino, ";");
  }
  return stamp;
}

SslCtxPtr TlsContext::Current() {
  absl::MutexLock lock(&mu_);
  const absl::Time now = absl::Now();
  if (now - checked_ < reload_every_) return ctx_;
  checked_ = now;
  std::string stamp = Stamp();
  if (stamp == stamp_) return ctx_;
  stamp_ = std::move(stamp);
  absl::StatusOr<SslCtxPtr> ctx = MakeServerSslCtx(files_);
  if (!ctx.ok()) {
    LogWarning("HTTP port: TLS files changed but do not load; serving with the previous ones",
               {{"error", ctx.status().message()}});
    return ctx_;
  }
  ctx_ = *std::move(ctx);
  LogInfo("HTTP port: TLS files reloaded");
  return ctx_;
}

ConnectionStream::ConnectionStream(int fd, SSL* ssl, absl::Duration io_timeout)
    : fd_(fd), ssl_(ssl), io_timeout_(io_timeout) {
  if (ssl_ != nullptr) SSL_set_fd(ssl_, fd_);
}

ConnectionStream::~ConnectionStream() {
  if (ssl_ == nullptr) return;
  SSL_shutdown(ssl_);  // a close_notify; the peer's is not waited for
  SSL_free(ssl_);
}

bool ConnectionStream::Handshake() {
  if (ssl_ == nullptr) return true;
  // The socket's timeouts bound each read and write of the handshake.
  if (SSL_accept(ssl_) == 1) return true;
  ERR_clear_error();
  return false;
}

bool ConnectionStream::WaitForRequest(absl::Duration idle) {
  if (begin_ < end_ || (ssl_ != nullptr && SSL_pending(ssl_) > 0)) return true;
  pollfd p = {fd_, POLLIN, 0};
  int n;
  do {
    n = poll(&p, 1, static_cast<int>(absl::ToInt64Milliseconds(idle)));
  } while (n < 0 && errno == EINTR);
  return n > 0 && (p.revents & POLLIN) != 0;
}

bool ConnectionStream::is_readable() const {
  if (begin_ < end_ || (ssl_ != nullptr && SSL_pending(ssl_) > 0)) return true;
  pollfd p = {fd_, POLLIN, 0};
  return poll(&p, 1, static_cast<int>(absl::ToInt64Milliseconds(io_timeout_))) > 0;
}

bool ConnectionStream::is_writable() const {
  pollfd p = {fd_, POLLOUT, 0};
  return poll(&p, 1, static_cast<int>(absl::ToInt64Milliseconds(io_timeout_))) > 0 &&
         (p.revents & (POLLERR | POLLHUP)) == 0;
}

bool ConnectionStream::Fill() {
  begin_ = end_ = 0;
  // Each read waits at most the timeout, and never past the request's deadline.
  const absl::Duration left = deadline_ - absl::Now();
  if (left <= absl::ZeroDuration()) return false;
  const timeval wait =
      absl::ToTimeval(std::max(std::min(left, io_timeout_), absl::Milliseconds(1)));
  setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof(wait));
  while (true) {
    if (absl::Now() >= deadline_) return false;
    ssize_t n;
    if (ssl_ != nullptr) {
      n = SSL_read(ssl_, buffer_, sizeof(buffer_));
      if (n <= 0) {
        ERR_clear_error();
        return false;
      }
    } else {
      n = recv(fd_, buffer_, sizeof(buffer_), 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;  // closed, or SO_RCVTIMEO passed
    }
    end_ = static_cast<size_t>(n);
    return true;
  }
}

ssize_t ConnectionStream::read(char* ptr, size_t size) {
  if (budget_ == 0) return -1;
  if (begin_ == end_ && !Fill()) return -1;
  const size_t n = std::min({size, end_ - begin_, budget_});
  std::memcpy(ptr, buffer_ + begin_, n);
  begin_ += n;
  budget_ -= n;
  return static_cast<ssize_t>(n);
}

ssize_t ConnectionStream::write(const char* ptr, size_t size) {
  size_t done = 0;
  while (done < size) {
    ssize_t n;
    if (ssl_ != nullptr) {
      n = SSL_write(ssl_, ptr + done, static_cast<int>(std::min<size_t>(size - done, 1 << 20)));
      if (n <= 0) {
        ERR_clear_error();
        return -1;
      }
    } else {
      n = send(fd_, ptr + done, size - done, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return -1;  // gone, or SO_SNDTIMEO passed
    }
    done += static_cast<size_t>(n);
  }
  return static_cast<ssize_t>(done);
}

void ConnectionStream::get_remote_ip_and_port(std::string& ip, int& port) const {
  sockaddr_storage address = {};
  socklen_t length = sizeof(address);
  if (getpeername(fd_, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
    AddressOf(address, ip, port);
  }
}

void ConnectionStream::get_local_ip_and_port(std::string& ip, int& port) const {
  sockaddr_storage address = {};
  socklen_t length = sizeof(address);
  if (getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
    AddressOf(address, ip, port);
  }
}

}  // namespace rein::connect
