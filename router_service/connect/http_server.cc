// The router's HTTP port, on cpp-httplib.
#include "router_service/connect/http_server.h"

#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "router_service/connect/connect_protocol.h"
#include "router_service/connect/host_check.h"
#include "router_service/connect/http_peer.h"

namespace rein::connect {
namespace {

constexpr char kPrefix[] = "/rein.v1.Router/";
// What a request's line and headers may take (a browser's are a few KiB).
constexpr size_t kMaxHeadBytes = 64 << 10;
// Requests on one keep-alive connection before it is closed, so that its thread turns over.
constexpr int kMaxRequestsPerConnection = 1000;

// What a handler decides about its connection: it runs on the connection's own thread.
struct ConnectionState {
  bool close = false;  // the request's body was left unread: no next request on it
  int fd = -1;         // the connection's socket
};
thread_local ConnectionState* current_connection = nullptr;

void CloseAfterReply() {
  if (current_connection != nullptr) current_connection->close = true;
}

// A header's value, null when absent; it lives as long as the request.
const char* HeaderOf(const httplib::Request& request, const char* name) {
  auto it = request.headers.find(name);
  return it == request.headers.end() ? nullptr : it->second.c_str();
}

void Send(httplib::Response& response, int status, const std::string& content_type,
          const std::string& body) {
  response.status = status;
  response.set_header("X-Content-Type-Options", "nosniff");
  response.set_content(body, content_type);
}

void SendError(httplib::Response& response, const absl::Status& status) {
  Send(response, HttpStatusOf(status.code()), "application/json", ErrorJson(status));
}

// A whole reply, set on the response that cpp-httplib writes after the handler.
class WholeResponder final : public ConnectResponder {
 public:
  explicit WholeResponder(httplib::Response& response) : response_(response) {}
  void Reply(int http_status, const std::string& content_type, const std::string& body) override {
    Send(response_, http_status, content_type, body);
  }
  // StreamContentType said this request is answered whole.
  bool BeginStream(const std::string&) override { return false; }
  bool WriteStream(const std::string&) override { return false; }

 private:
  httplib::Response& response_;
};

// A stream, written as HTTP chunks once the 200 and its headers are out.
class StreamResponder final : public ConnectResponder {
 public:
  explicit StreamResponder(httplib::DataSink& sink)
      : sink_(sink), fd_(current_connection != nullptr ? current_connection->fd : -1) {}
  // StreamContentType said this request is answered by a stream only.
  void Reply(int, const std::string&, const std::string&) override {}
  bool BeginStream(const std::string&) override { return true; }
  bool WriteStream(const std::string& bytes) override {
    return sink_.write(bytes.data(), bytes.size());
  }
  // The peer closed (FIN or reset): a stream's client sends nothing after its request, so
  // this is never data being missed.
  bool ClientGone() override {
    if (fd_ < 0) return false;
    pollfd p = {fd_, POLLRDHUP, 0};
    return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
  }

 private:
  httplib::DataSink& sink_;
  const int fd_;
};

// A fixed pool of `threads`: a connection is served by one of them from its first byte to
// its close. While all are busy the accepting thread waits, so that further connections stay
// in the kernel's accept queue rather than holding memory here.
class ConnectionPool final : public httplib::TaskQueue {
 public:
  explicit ConnectionPool(int threads) {
    for (int i = 0; i < threads; ++i) workers_.emplace_back([this] { Work(); });
  }
  void enqueue(std::function<void()> fn) override {
    std::unique_lock<std::mutex> lock(mu_);
    free_.wait(lock, [&] { return shutdown_ || idle_ > static_cast<int>(jobs_.size()); });
    jobs_.push_back(std::move(fn));
    ready_.notify_one();
  }
  void shutdown() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      shutdown_ = true;
    }
    ready_.notify_all();
    free_.notify_all();
    for (std::thread& worker : workers_) worker.join();
  }

 private:
  void Work() {
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      ++idle_;
      free_.notify_one();
      ready_.wait(lock, [&] { return shutdown_ || !jobs_.empty(); });
      --idle_;
      if (jobs_.empty()) return;  // shut down with nothing left
      std::function<void()> job = std::move(jobs_.front());
      jobs_.pop_front();
      lock.unlock();
      job();
      lock.lock();
    }
  }

  std::mutex mu_;
  std::condition_variable ready_;  // a job waits
  std::condition_variable free_;   // a worker is idle
  std::deque<std::function<void()>> jobs_;
  int idle_ = 0;
  bool shutdown_ = false;
  std::vector<std::thread> workers_;
};

// Closes after the client has seen the reply: closing with unread bytes (a refused body)
// would reset the connection, and the client could lose the reply that says why. Reads what
// is left for at most a second and 1 MiB.
void LingeringClose(int sock) {
  shutdown(sock, SHUT_WR);
  timeval wait = {0, 200 * 1000};
  setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof(wait));
  char sink[16384];
  size_t left = 1 << 20;
  const absl::Time until = absl::Now() + absl::Seconds(1);
  while (left > 0 && absl::Now() < until) {
    const ssize_t n = recv(sock, sink, sizeof(sink), 0);
    if (n <= 0) break;
    left -= std::min(left, static_cast<size_t>(n));
  }
  close(sock);
}

}  // namespace

// cpp-httplib's server with the connection loop (plain or TLS, bounded reads) of our own.
class HttpServerCore final : public httplib::Server {
 public:
  HttpServerCore(HttpServerOptions options, ConnectGateway* gateway,
                 std::unique_ptr<TlsContext> tls)
      : options_(std::move(options)),
        gateway_(gateway),
        tls_(std::move(tls)),
        hosts_(options_.listen, options_.allowed_hosts, tls_ != nullptr) {
    new_task_queue = [this] { return new ConnectionPool(options_.threads); };
    const auto seconds = [](absl::Duration d) {
      return std::chrono::microseconds(absl::ToInt64Microseconds(d));
    };
    // cpp-httplib sets these on each accepted socket (SO_RCVTIMEO, SO_SNDTIMEO), which is
    // what bounds every read and write of ConnectionStream.
    set_read_timeout(seconds(options_.io_timeout));
    set_write_timeout(seconds(options_.io_timeout));
    // Only what the Keep-Alive reply header says; the connection loop below applies them.
    set_keep_alive_max_count(kMaxRequestsPerConnection);
    set_keep_alive_timeout(std::max<time_t>(1, absl::ToInt64Seconds(options_.keep_alive)));
    // Headers and body go in two writes: without this, Nagle and delayed ACKs hold each
    // reply ~40 ms.
    set_tcp_nodelay(true);
    set_pre_routing_handler([this](const httplib::Request& request, httplib::Response& response) {
      return PreRoute(request, response);
    });
    const std::string pattern = R"(/rein\.v1\.Router/.*)";
    Post(pattern,
         [this](const httplib::Request& request, httplib::Response& response,
                const httplib::ContentReader& reader) { ServeConnect(request, response, reader); });
  }

 public:
  // Wakes every connection's thread from its read or write, so that a stop does not wait for
  // idle or stalled clients.
  void CloseConnections() {
    std::lock_guard<std::mutex> lock(open_mu_);
    for (int fd : open_) shutdown(fd, SHUT_RDWR);
  }

 private:
  bool process_and_close_socket(socket_t sock) override;
  HandlerResponse PreRoute(const httplib::Request& request, httplib::Response& response);
  void ServeConnect(const httplib::Request& request, httplib::Response& response,
                    const httplib::ContentReader& reader);

  const HttpServerOptions options_;
  ConnectGateway* const gateway_;
  const std::unique_ptr<TlsContext> tls_;
  const HostCheck hosts_;
  std::mutex open_mu_;
  std::set<int> open_;  // the connections' sockets, until closed
};

bool HttpServerCore::process_and_close_socket(socket_t sock) {
  {
    std::lock_guard<std::mutex> lock(open_mu_);
    open_.insert(sock);
  }
  SSL* ssl = nullptr;
  SslCtxPtr ctx;  // held while the connection is open
  if (tls_ != nullptr) {
    ctx = tls_->Current();
    ssl = SSL_new(ctx.get());
  }
  bool ok = false;
  if (tls_ == nullptr || ssl != nullptr) {
    ConnectionStream stream(sock, ssl, options_.io_timeout);
    ConnectionState state;
    state.fd = sock;
    current_connection = &state;
    if (stream.Handshake()) {
      for (int left = kMaxRequestsPerConnection;
           left > 0 && svr_sock_ != INVALID_SOCKET && stream.WaitForRequest(options_.keep_alive);
           --left) {
        stream.StartRequest(kMaxHeadBytes + options_.max_body_bytes,
                            absl::Now() + options_.request_timeout);
        bool closed = false;
        ok = process_request(stream, left == 1, closed, nullptr);
        if (!ok || closed || state.close) break;
      }
    }
    current_connection = nullptr;
  }
  {
    std::lock_guard<std::mutex> lock(open_mu_);
    open_.erase(sock);
  }
  LingeringClose(sock);
  return ok;
}

httplib::Server::HandlerResponse HttpServerCore::PreRoute(const httplib::Request& request,
                                                          httplib::Response& response) {
  const std::string& path = request.path;
  const std::string& verb = request.method;
  // Before anything else: a rebound name or another site gets no answer but why.
  if (absl::Status host = hosts_.CheckHost(HeaderOf(request, "Host")); !host.ok()) {
    CloseAfterReply();
    Send(response, 421, "application/json", ErrorJson(host));
    return HandlerResponse::Handled;
  }
  if (absl::StartsWith(path, kPrefix)) {
    if (absl::Status origin =
            hosts_.CheckOrigin(HeaderOf(request, "Host"), HeaderOf(request, "Origin"));
        !origin.ok()) {
      CloseAfterReply();
      Send(response, 403, "application/json", ErrorJson(origin));
      return HandlerResponse::Handled;
    }
    if (verb != "POST") {
      CloseAfterReply();
      SendError(response,
                absl::UnimplementedError(absl::StrCat(verb.substr(0, 16), " ", path.substr(0, 100),
                                                      ": the Connect port takes POST only")));
      response.status = 405;
      response.set_header("Allow", "POST");
      return HandlerResponse::Handled;
    }
    for (const char* name : {"Content-Encoding", "Connect-Content-Encoding"}) {
      const char* encoding = HeaderOf(request, name);
      if (encoding != nullptr && absl::string_view(encoding) != "identity") {
        CloseAfterReply();
        SendError(response, absl::UnimplementedError(absl::StrCat(
                                name, ": \"", absl::string_view(encoding).substr(0, 40),
                                "\" is not accepted; send the body uncompressed")));
        return HandlerResponse::Handled;
      }
    }
    const char* length = HeaderOf(request, "Content-Length");
    uint64_t size = 0;
    if (length != nullptr && absl::SimpleAtoi(length, &size) && size > options_.max_body_bytes) {
      CloseAfterReply();
      SendError(response, absl::ResourceExhaustedError(absl::StrCat(
                              "request body: ", size, " bytes, more than the HTTP port's limit of ",
                              options_.max_body_bytes, " bytes")));
      return HandlerResponse::Handled;
    }
    if (absl::StartsWith(absl::AsciiStrToLower(request.get_header_value("Content-Type")),
                         "multipart/")) {
      // cpp-httplib would parse the body as form data; no Connect call takes that.
      CloseAfterReply();
      Send(response, 415, "application/json",
           ErrorJson(absl::InvalidArgumentError("Content-Type: multipart is not served; use "
                                                "application/json or application/proto")));
      return HandlerResponse::Handled;
    }
    return HandlerResponse::Unhandled;  // ServeConnect
  }
  // A body nobody reads would be taken for the next request.
  if (HeaderOf(request, "Content-Length") != nullptr ||
      HeaderOf(request, "Transfer-Encoding") != nullptr) {
    CloseAfterReply();
  }
  if (options_.files != nullptr && verb == "GET") {
    auto file = options_.files->find(path == "/" ? "/index.html" : path);
    if (file != options_.files->end()) {
      // The console loads nothing from elsewhere and may not be framed.
      Send(response, 200, file->second.content_type, file->second.body);
      response.set_header("Content-Security-Policy",
                          "default-src 'self'; frame-ancestors 'none'; base-uri 'none'");
      response.set_header("Referrer-Policy", "no-referrer");
      return HandlerResponse::Handled;
    }
  }
  Send(response, 404, "text/plain; charset=utf-8",
       absl::StrCat("not found: ", path.substr(0, 200), "\nthe Router API is at POST ", kPrefix,
                    "<Method> (docs/HTTP_API.md)\n"));
  return HandlerResponse::Handled;
}

void HttpServerCore::ServeConnect(const httplib::Request& request, httplib::Response& response,
                                  const httplib::ContentReader& reader) {
  std::string body;
  bool too_large = false;
  const bool read = reader([&](const char* data, size_t size) {
    if (body.size() + size > options_.max_body_bytes) {
      too_large = true;
      return false;
    }
    body.append(data, size);
    return true;
  });
  if (too_large) {
    CloseAfterReply();
    return SendError(response, absl::ResourceExhaustedError(
                                   absl::StrCat("request body: more than ", options_.max_body_bytes,
                                                " bytes, more than the HTTP port's limit of ",
                                                options_.max_body_bytes, " bytes")));
  }
  if (!read) {
    CloseAfterReply();
    return SendError(response, absl::InvalidArgumentError("request body: could not be read"));
  }
  ConnectRequest call;
  call.method = request.path.substr(sizeof(kPrefix) - 1);
  const char* content_type = HeaderOf(request, "Content-Type");
  call.content_type = content_type != nullptr ? content_type : "";
  call.timeout_ms = HeaderOf(request, "Connect-Timeout-Ms");
  call.protocol_version = HeaderOf(request, "Connect-Protocol-Version");
  call.authorization = HeaderOf(request, "Authorization");
  call.peer = HttpPeer(request.remote_addr, request.remote_port);  // the socket's, no header's
  call.body = std::move(body);
  const std::string stream_type = gateway_->StreamContentType(call);
  if (stream_type.empty()) {
    WholeResponder responder(response);
    return gateway_->Handle(call, &responder);
  }
  // The stream is written after the 200 and its headers, on this same thread; `request`
  // (which the header pointers point into) lives until then.
  response.status = 200;
  response.set_header("X-Content-Type-Options", "nosniff");
  auto served = std::make_shared<bool>(false);
  response.set_chunked_content_provider(
      stream_type, [this, call = std::move(call), served](size_t, httplib::DataSink& sink) {
        // Called again only when the stream's last write failed: the client is gone.
        if (*served) return false;
        *served = true;
        StreamResponder responder(sink);
        gateway_->Handle(call, &responder);
        sink.done();
        return true;
      });
}

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(HttpServerOptions options,
                                                              ConnectGateway* gateway) {
  const size_t colon = options.listen.rfind(':');
  int port = -1;
  if (colon == std::string::npos || colon == 0 ||
      !absl::SimpleAtoi(options.listen.substr(colon + 1), &port) || port < 0 || port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--http_listen: \"", options.listen, "\" is not IPv4-HOST:PORT (e.g. 127.0.0.1:8080)"));
  }
  if (options.threads < 2 || options.threads > 1024) {
    return absl::InvalidArgumentError("--http_threads: must be in [2, 1024]");
  }
  std::unique_ptr<TlsContext> tls;
  if (options.tls.enabled()) {
    absl::StatusOr<std::unique_ptr<TlsContext>> loaded =
        TlsContext::Load(options.tls, options.tls_reload);
    if (!loaded.ok())
      return absl::InvalidArgumentError(absl::StrCat("--http_listen: ", loaded.status().message()));
    tls = *std::move(loaded);
    // OpenSSL writes with write(2): a peer gone mid-reply must be an error, not a signal.
    signal(SIGPIPE, SIG_IGN);
  }
  const std::string listen = options.listen;
  const std::string host = listen.substr(0, colon);
  std::unique_ptr<HttpServer> server(new HttpServer());
  server->core_ = std::make_unique<HttpServerCore>(std::move(options), gateway, std::move(tls));
  if (port == 0) {
    port = server->core_->bind_to_any_port(host);
  } else if (!server->core_->bind_to_port(host, port)) {
    port = -1;
  }
  if (port <= 0) {
    return absl::UnavailableError(
        absl::StrCat("--http_listen=", listen, ": cannot serve: the address cannot be bound"));
  }
  server->port_ = port;
  HttpServerCore* core = server->core_.get();
  auto ended = std::make_shared<std::atomic<bool>>(false);
  server->listener_ = std::thread([core, ended] {
    core->listen_after_bind();
    *ended = true;
  });
  // A stop before the loop runs would not reach it (cpp-httplib's stop needs is_running).
  while (!core->is_running() && !*ended) absl::SleepFor(absl::Milliseconds(1));
  return server;
}

HttpServer::~HttpServer() {
  if (core_ == nullptr) return;
  core_->stop();
  core_->CloseConnections();
  if (listener_.joinable()) listener_.join();
}

}  // namespace rein::connect
