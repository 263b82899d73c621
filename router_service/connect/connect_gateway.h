// The Connect protocol in front of the Router's gRPC service: one HTTP request in, one call on
// the gRPC service out (over a channel, usually the server's in-process one), the reply back in
// Connect's shape. The gRPC service does the rest (tokens, roles, limits, audit), so a call
// refused on one port is refused on the other.
#ifndef REIN_ROUTER_SERVICE_CONNECT_CONNECT_GATEWAY_H_
#define REIN_ROUTER_SERVICE_CONNECT_CONNECT_GATEWAY_H_

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "google/protobuf/descriptor.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "router_service/connect/connect_protocol.h"

namespace rein::connect {

// One Connect request as the HTTP server read it.
struct ConnectRequest {
  std::string method;                      // the part after "/rein.v1.Router/"
  std::string content_type;                // Content-Type
  const char* timeout_ms = nullptr;        // Connect-Timeout-Ms, null when absent
  const char* protocol_version = nullptr;  // Connect-Protocol-Version, null when absent
  const char* authorization = nullptr;     // Authorization, null when absent
  std::string peer;  // the client's address (http_peer.h's HttpPeer), "" when unknown
  std::string body;
};

// Where the reply goes (the HTTP connection). Called on the request's thread only.
class ConnectResponder {
 public:
  virtual ~ConnectResponder() = default;
  // A whole reply: a unary result or any error outside a stream.
  virtual void Reply(int http_status, const std::string& content_type, const std::string& body) = 0;
  // Starts a streaming reply (HTTP 200, chunked); false when the client is gone.
  virtual bool BeginStream(const std::string& content_type) = 0;
  // Sends part of a stream; false when the client is gone.
  virtual bool WriteStream(const std::string& bytes) = 0;
  // Whether the client has closed its connection, without writing: asked while a stream waits
  // for its next message, so that a client gone away gives its slot back. Never blocks.
  virtual bool ClientGone() { return false; }
};

struct ConnectGatewayOptions {
  // The fully qualified name of the service served ("rein.v1.Router").
  std::string service = "rein.v1.Router";
  // A stream ends with deadline_exceeded after this long, whatever Connect-Timeout-Ms says,
  // so that a client that went away unnoticed (an idle watch writes nothing) holds its
  // thread no longer; clients watch again from the last seq.
  absl::Duration max_stream_duration = absl::Minutes(30);
  // Streams open at once; past it a streaming call is resource_exhausted, so that streams
  // cannot take every thread of the HTTP server from unary calls.
  int max_streams = 24;
  // Streams one client (one Authorization header, or without one, one address) may hold at
  // once; past it its streaming calls are resource_exhausted, so that one viewer cannot take
  // every slot from the others.
  int max_streams_per_client = 6;
  // How often a waiting stream asks whether its client is gone (ConnectResponder::ClientGone).
  absl::Duration gone_check = absl::Seconds(1);
};

// Thread-safe: any number of requests at once, each on its own thread.
class ConnectGateway {
 public:
  // `channel` reaches a server that serves `options.service`.
  ConnectGateway(std::shared_ptr<grpc::Channel> channel, ConnectGatewayOptions options);

  // Serves one request, blocking until its reply (or stream) is done.
  void Handle(const ConnectRequest& request, ConnectResponder* responder);

  // The Content-Type of the stream Handle answers `request` with, when it is a
  // server-streaming call that passes the checks made before any call: its reply is then an
  // HTTP 200 stream whatever happens next (BeginStream and WriteStream only, never Reply), so
  // an HTTP server may send its headers first. "" when Handle answers with Reply.
  std::string StreamContentType(const ConnectRequest& request) const;

  // Streams open now.
  int open_streams() const { return streams_.load(); }

 private:
  // What the checks made before any call found.
  struct Checked {
    const google::protobuf::MethodDescriptor* method;
    ContentType type;
    std::optional<absl::Duration> timeout;  // Connect-Timeout-Ms
  };
  // The request's method, content type and headers checked; on an error `http_status` is the
  // reply's status, or 0 for the code's own.
  absl::StatusOr<Checked> Check(const ConnectRequest& request, int* http_status) const;
  // Calls `path` with one request message; every reply message goes to `on_message` (false:
  // the client is gone, the call is cancelled). With `responder`, the call is cancelled too
  // once its ClientGone says so, asked every options_.gone_check while waiting.
  grpc::Status Invoke(grpc::ClientContext* context, const std::string& path,
                      const std::string& request,
                      const std::function<bool(const grpc::ByteBuffer&)>& on_message,
                      ConnectResponder* responder = nullptr);
  // Takes a stream slot for `client`; RESOURCE_EXHAUSTED saying which cap (nothing taken)
  // past one. ReleaseStream gives it back.
  absl::Status TakeStream(const std::string& client);
  void ReleaseStream(const std::string& client);
  void HandleUnary(const google::protobuf::MethodDescriptor& method, bool json,
                   const std::string& payload, grpc::ClientContext* context,
                   ConnectResponder* responder);
  // `client` names who holds the stream (max_streams_per_client).
  void HandleStream(const google::protobuf::MethodDescriptor& method, bool json,
                    const std::string& payload, const std::string& client,
                    grpc::ClientContext* context, ConnectResponder* responder);

  std::shared_ptr<grpc::Channel> channel_;
  grpc::GenericStub stub_;
  const ConnectGatewayOptions options_;
  const google::protobuf::ServiceDescriptor* service_;
  std::atomic<int> streams_{0};
  absl::Mutex clients_mu_;
  absl::flat_hash_map<std::string, int> client_streams_ ABSL_GUARDED_BY(clients_mu_);
};

}  // namespace rein::connect

#endif  // REIN_ROUTER_SERVICE_CONNECT_CONNECT_GATEWAY_H_
