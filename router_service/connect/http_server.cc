// The router's HTTP port, on civetweb.
#include "router_service/connect/http_server.h"

#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "civetweb.h"
#include "router_service/connect/connect_protocol.h"

namespace rein::connect {
namespace {

constexpr char kPrefix[] = "/rein.v1.Router/";

using Headers = std::vector<std::pair<const char*, const char*>>;

const Headers kClose = {{"Connection", "close"}};

void Send(mg_connection* connection, int status, const std::string& content_type,
          const std::string& body, const Headers& headers = {}) {
  mg_response_header_start(connection, status);
  mg_response_header_add(connection, "Content-Type", content_type.c_str(), -1);
  mg_response_header_add(connection, "Content-Length", std::to_string(body.size()).c_str(), -1);
  mg_response_header_add(connection, "X-Content-Type-Options", "nosniff", -1);
  for (const auto& [name, value] : headers) mg_response_header_add(connection, name, value, -1);
  mg_response_header_send(connection);
  mg_write(connection, body.data(), body.size());
}

void SendError(mg_connection* connection, const absl::Status& status, const Headers& headers = {}) {
  Send(connection, HttpStatusOf(status.code()), "application/json", ErrorJson(status), headers);
}

// The Connect reply of one request, on its civetweb connection.
class CivetResponder final : public ConnectResponder {
 public:
  explicit CivetResponder(mg_connection* connection) : connection_(connection) {}
  // Ends a chunked stream with its last, empty chunk (civetweb leaves that to the handler).
  ~CivetResponder() override {
    if (streaming_) mg_send_chunk(connection_, "", 0);
  }
  void Reply(int http_status, const std::string& content_type, const std::string& body) override {
    Send(connection_, http_status, content_type, body);
  }
  bool BeginStream(const std::string& content_type) override {
    streaming_ = true;
    return mg_send_http_ok(connection_, content_type.c_str(), -1) >= 0;
  }
  bool WriteStream(const std::string& bytes) override {
    return mg_send_chunk(connection_, bytes.data(), static_cast<unsigned>(bytes.size())) > 0;
  }

 private:
  mg_connection* connection_;
  bool streaming_ = false;
};

// The request's body, or resource_exhausted past `limit` bytes.
absl::StatusOr<std::string> ReadBody(mg_connection* connection, size_t limit) {
  const mg_request_info* info = mg_get_request_info(connection);
  const auto too_large = [&](long long size) {
    return absl::ResourceExhaustedError(
        absl::StrCat("request body: ", size < 0 ? "more than " : "", size < 0 ? limit : size,
                     " bytes, more than the HTTP port's limit of ", limit, " bytes"));
  };
  if (info->content_length > static_cast<long long>(limit)) {
    return too_large(info->content_length);
  }
  std::string body;
  char chunk[16384];
  while (true) {
    const int n = mg_read(connection, chunk, sizeof(chunk));
    if (n < 0) return absl::InvalidArgumentError("request body: could not be read");
    if (n == 0) break;
    body.append(chunk, n);
    if (body.size() > limit) return too_large(-1);
  }
  return body;
}

}  // namespace

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(HttpServerOptions options,
                                                              ConnectGateway* gateway) {
  static std::once_flag library_once;
  std::call_once(library_once, [] { mg_init_library(0); });
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
  std::unique_ptr<HttpServer> server(new HttpServer(std::move(options), gateway));
  const HttpServerOptions& o = server->options_;
  const std::string ports = o.listen;
  const std::string threads = std::to_string(o.threads);
  const std::string io_ms = std::to_string(absl::ToInt64Milliseconds(o.io_timeout));
  const std::string keep_ms = std::to_string(absl::ToInt64Milliseconds(o.keep_alive));
  std::vector<const char*> config = {"listening_ports", ports.c_str(), "num_threads",
                                     threads.c_str(), "request_timeout_ms", io_ms.c_str(),
                                     "enable_keep_alive", "yes", "keep_alive_timeout_ms",
                                     keep_ms.c_str(), "enable_auth_domain_check", "no",
                                     // Headers and body go in two writes: without this, Nagle
                                     // and delayed ACKs hold each reply ~40 ms.
                                     "tcp_nodelay", "1"};
  config.push_back(nullptr);
  mg_callbacks callbacks = {};
  callbacks.begin_request = &HttpServer::OnRequest;
  mg_init_data init = {};
  init.callbacks = &callbacks;
  init.user_data = server.get();
  init.configuration_options = config.data();
  char error_text[256] = {};
  mg_error_data error = {};
  error.text = error_text;
  error.text_buffer_size = sizeof(error_text);
  server->context_ = mg_start2(&init, &error);
  if (server->context_ == nullptr) {
    return absl::UnavailableError(
        absl::StrCat("--http_listen=", o.listen, ": cannot serve: ", error_text));
  }
  mg_server_port bound[4] = {};
  if (mg_get_server_ports(server->context_, 4, bound) < 1) {
    return absl::InternalError("--http_listen: no port bound");
  }
  server->port_ = bound[0].port;
  return server;
}

HttpServer::~HttpServer() {
  if (context_ != nullptr) mg_stop(context_);
}

int HttpServer::OnRequest(mg_connection* connection) {
  auto* server = static_cast<HttpServer*>(mg_get_user_data(mg_get_context(connection)));
  server->Serve(connection);
  return 1;  // every request is answered here
}

void HttpServer::Serve(mg_connection* connection) {
  const mg_request_info* info = mg_get_request_info(connection);
  const std::string path = info->local_uri != nullptr ? info->local_uri : "";
  const std::string verb = info->request_method != nullptr ? info->request_method : "";
  if (absl::StartsWith(path, kPrefix)) {
    if (verb != "POST") {
      return Send(
          connection, 405, "application/json",
          ErrorJson(absl::UnimplementedError(absl::StrCat(
              verb.substr(0, 16), " ", path.substr(0, 100), ": the Connect port takes POST only"))),
          {{"Allow", "POST"}});
    }
    for (const char* name : {"Content-Encoding", "Connect-Content-Encoding"}) {
      const char* encoding = mg_get_header(connection, name);
      if (encoding != nullptr && absl::string_view(encoding) != "identity") {
        return SendError(connection,
                         absl::UnimplementedError(
                             absl::StrCat(name, ": \"", absl::string_view(encoding).substr(0, 40),
                                          "\" is not accepted; send the body uncompressed")),
                         kClose);
      }
    }
    absl::StatusOr<std::string> body = ReadBody(connection, options_.max_body_bytes);
    if (!body.ok()) return SendError(connection, body.status(), kClose);
    ConnectRequest request;
    request.method = path.substr(sizeof(kPrefix) - 1);
    const char* content_type = mg_get_header(connection, "Content-Type");
    request.content_type = content_type != nullptr ? content_type : "";
    request.timeout_ms = mg_get_header(connection, "Connect-Timeout-Ms");
    request.protocol_version = mg_get_header(connection, "Connect-Protocol-Version");
    request.authorization = mg_get_header(connection, "Authorization");
    request.body = *std::move(body);
    CivetResponder responder(connection);
    gateway_->Handle(request, &responder);
    return;
  }
  if (options_.files != nullptr && verb == "GET") {
    auto file = options_.files->find(path == "/" ? "/index.html" : path);
    if (file != options_.files->end()) {
      // The console loads nothing from elsewhere and may not be framed.
      return Send(connection, 200, file->second.content_type, file->second.body,
                  {{"Content-Security-Policy",
                    "default-src 'self'; frame-ancestors 'none'; base-uri 'none'"},
                   {"Referrer-Policy", "no-referrer"}});
    }
  }
  Send(connection, 404, "text/plain; charset=utf-8",
       absl::StrCat("not found: ", path.substr(0, 200), "\nthe Router API is at POST ", kPrefix,
                    "<Method> (docs/HTTP_API.md)\n"));
}

}  // namespace rein::connect
