// The Connect protocol in front of the Router's gRPC service.
#include "router_service/connect/connect_gateway.h"

#include <memory>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/grpc_status.h"
#include "google/protobuf/message.h"
#include "google/protobuf/util/json_util.h"
#include "rein/v1/router.pb.h"
#include "router_service/connect/connect_protocol.h"
#include "router_service/connect/http_peer.h"

namespace rein::connect {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::Message;
using google::protobuf::MethodDescriptor;

constexpr char kJsonType[] = "application/json";

std::unique_ptr<Message> NewMessage(const Descriptor& type) {
  return std::unique_ptr<Message>(
      google::protobuf::MessageFactory::generated_factory()->GetPrototype(&type)->New());
}

// A request's message, from JSON (protobuf's JSON mapping) or binary, in binary.
absl::StatusOr<std::string> RequestBinary(const Descriptor& type, bool json,
                                          const std::string& payload) {
  std::unique_ptr<Message> message = NewMessage(type);
  if (json) {
    google::protobuf::util::JsonParseOptions options;
    options.ignore_unknown_fields = false;
    auto parsed = google::protobuf::util::JsonStringToMessage(payload, message.get(), options);
    if (!parsed.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("request body: not a ", type.full_name(),
                       " in protobuf's JSON mapping: ", std::string(parsed.message())));
    }
  } else if (!message->ParseFromString(payload)) {
    return absl::InvalidArgumentError(
        absl::StrCat("request body: not a binary ", type.full_name()));
  }
  return message->SerializeAsString();
}

std::string BufferBytes(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  std::string out;
  if (!buffer.Dump(&slices).ok()) return out;
  for (const grpc::Slice& slice : slices) {
    out.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
  }
  return out;
}

// A reply's message, in the request's codec.
absl::StatusOr<std::string> ReplyPayload(const Descriptor& type, bool json,
                                         const grpc::ByteBuffer& buffer) {
  std::string bytes = BufferBytes(buffer);
  if (!json) return bytes;
  std::unique_ptr<Message> message = NewMessage(type);
  if (!message->ParseFromString(bytes)) {
    return absl::InternalError(absl::StrCat("reply: not a binary ", type.full_name()));
  }
  std::string out;
  auto printed = google::protobuf::util::MessageToJsonString(*message, &out, {});
  if (!printed.ok()) {
    return absl::InternalError(absl::StrCat("reply: ", std::string(printed.message())));
  }
  return out;
}

// Only printable ASCII may go into gRPC metadata.
bool Printable(absl::string_view text) {
  for (char c : text) {
    if (c < 0x20 || c > 0x7e) return false;
  }
  return true;
}

std::string MethodNames(const google::protobuf::ServiceDescriptor& service) {
  std::vector<std::string> names;
  for (int i = 0; i < service.method_count(); ++i) names.push_back(service.method(i)->name());
  return absl::StrJoin(names, ", ");
}

void ReplyError(ConnectResponder* responder, int http_status, const absl::Status& status) {
  responder->Reply(http_status, kJsonType, ErrorJson(status));
}

void ReplyError(ConnectResponder* responder, const absl::Status& status) {
  ReplyError(responder, HttpStatusOf(status.code()), status);
}

// Ends a stream (begun or not) with its end-of-stream message.
void EndStream(ConnectResponder* responder, const ContentType& type, bool begun,
               const absl::Status& status) {
  if (!begun && !responder->BeginStream(ContentTypeName(type))) return;
  responder->WriteStream(Envelope(kEnvelopeEndStream, EndStreamJson(status)));
}

}  // namespace

ConnectGateway::ConnectGateway(std::shared_ptr<grpc::Channel> channel,
                               ConnectGatewayOptions options)
    : channel_(std::move(channel)),
      stub_(channel_),
      options_(std::move(options)),
      // Naming a message of router.proto links its descriptors in.
      service_(rein::v1::StartRunRequest::descriptor()->file()->pool()->FindServiceByName(
          options_.service)) {}

absl::StatusOr<ConnectGateway::Checked> ConnectGateway::Check(const ConnectRequest& request,
                                                              int* http_status) const {
  *http_status = 0;  // the code's own
  if (service_ == nullptr) {
    return absl::InternalError(absl::StrCat("service ", options_.service, " is not linked in"));
  }
  const MethodDescriptor* method = service_->FindMethodByName(request.method);
  if (method == nullptr) {
    // connect-go answers an unknown route with 404; the body says why.
    *http_status = 404;
    return absl::UnimplementedError(absl::StrCat("unknown method ", options_.service, "/",
                                                 request.method.substr(0, 100),
                                                 "; the methods are ", MethodNames(*service_)));
  }
  if (method->client_streaming()) {
    return absl::UnimplementedError(absl::StrCat(method->full_name(),
                                                 " streams requests, which the "
                                                 "Connect port does not serve; use the gRPC port"));
  }
  if (request.protocol_version != nullptr && absl::string_view(request.protocol_version) != "1") {
    return absl::InvalidArgumentError(absl::StrCat(
        "Connect-Protocol-Version: \"", request.protocol_version, "\" is not served; use 1"));
  }
  absl::StatusOr<ContentType> type = ParseContentType(request.content_type);
  if (!type.ok()) {
    *http_status = 415;
    return type.status();
  }
  if (type->streaming != method->server_streaming()) {
    *http_status = 415;
    return absl::InvalidArgumentError(absl::StrCat(
        "Content-Type: ", request.content_type.substr(0, 100), " does not fit ", method->name(),
        ", a ",
        method->server_streaming() ? "server-streaming method: use application/connect+json or "
                                     "application/connect+proto, the request in one envelope"
                                   : "unary method: use application/json or application/proto"));
  }
  absl::StatusOr<std::optional<absl::Duration>> timeout = ParseTimeout(request.timeout_ms);
  if (!timeout.ok()) return timeout.status();
  if (request.authorization != nullptr && !Printable(request.authorization)) {
    return absl::UnauthenticatedError(
        "Authorization: not printable ASCII; send \"Bearer <token>\"");
  }
  return Checked{method, *type, *timeout};
}

std::string ConnectGateway::StreamContentType(const ConnectRequest& request) const {
  int http_status;
  absl::StatusOr<Checked> checked = Check(request, &http_status);
  if (!checked.ok() || !checked->type.streaming) return "";
  return ContentTypeName(checked->type);
}

void ConnectGateway::Handle(const ConnectRequest& request, ConnectResponder* responder) {
  int http_status;
  absl::StatusOr<Checked> checked = Check(request, &http_status);
  if (!checked.ok()) {
    if (http_status != 0) return ReplyError(responder, http_status, checked.status());
    return ReplyError(responder, checked.status());
  }
  const MethodDescriptor* method = checked->method;
  const ContentType* type = &checked->type;

  grpc::ClientContext context;
  if (request.authorization != nullptr) {
    context.AddMetadata("authorization", request.authorization);
  }
  // Believed by the service on in-process calls only (http_peer.h).
  if (!request.peer.empty() && Printable(request.peer)) AddHttpPeer(request.peer, &context);
  std::optional<absl::Duration> deadline = checked->timeout;
  if (type->streaming && (!deadline || *deadline > options_.max_stream_duration)) {
    deadline = options_.max_stream_duration;
  }
  if (deadline) context.set_deadline(absl::ToChronoTime(absl::Now() + *deadline));

  const bool json = type->codec == Codec::kJson;
  std::string payload = request.body;
  if (type->streaming) {
    absl::StatusOr<std::string> single = SingleEnvelopePayload(request.body);
    if (!single.ok()) return EndStream(responder, *type, false, single.status());
    payload = *std::move(single);
  }
  absl::StatusOr<std::string> binary = RequestBinary(*method->input_type(), json, payload);
  if (!binary.ok()) {
    if (type->streaming) return EndStream(responder, *type, false, binary.status());
    return ReplyError(responder, binary.status());
  }
  if (type->streaming) {
    // A client is its credential, or without one its address.
    const std::string client = request.authorization != nullptr
                                   ? absl::StrCat("authorization:", request.authorization)
                                   : absl::StrCat("peer:", request.peer);
    return HandleStream(*method, json, *binary, client, &context, responder);
  }
  HandleUnary(*method, json, *binary, &context, responder);
}

void ConnectGateway::HandleUnary(const MethodDescriptor& method, bool json,
                                 const std::string& payload, grpc::ClientContext* context,
                                 ConnectResponder* responder) {
  std::unique_ptr<grpc::ByteBuffer> reply;
  grpc::Status status = Invoke(context, absl::StrCat("/", options_.service, "/", method.name()),
                               payload, [&](const grpc::ByteBuffer& message) {
                                 reply = std::make_unique<grpc::ByteBuffer>(message);
                                 return true;
                               });
  if (!status.ok()) return ReplyError(responder, FromGrpcStatus(status));
  if (reply == nullptr) {
    return ReplyError(responder,
                      absl::InternalError(absl::StrCat(method.name(), " replied no message")));
  }
  absl::StatusOr<std::string> body = ReplyPayload(*method.output_type(), json, *reply);
  if (!body.ok()) return ReplyError(responder, body.status());
  responder->Reply(200, json ? kJsonType : "application/proto", *body);
}

absl::Status ConnectGateway::TakeStream(const std::string& client) {
  absl::MutexLock lock(&clients_mu_);
  if (streams_.load() >= options_.max_streams) {
    return absl::ResourceExhaustedError(absl::StrCat("the HTTP port serves at most ",
                                                     options_.max_streams,
                                                     " streams at once; close one, or use the "
                                                     "gRPC port"));
  }
  int& held = client_streams_[client];
  if (held >= options_.max_streams_per_client) {
    return absl::ResourceExhaustedError(
        absl::StrCat("this client holds ", held,
                     " streams of the HTTP port, the most one client may; close one"));
  }
  ++held;
  streams_.fetch_add(1);
  return absl::OkStatus();
}

void ConnectGateway::ReleaseStream(const std::string& client) {
  absl::MutexLock lock(&clients_mu_);
  streams_.fetch_sub(1);
  auto it = client_streams_.find(client);
  if (it != client_streams_.end() && --it->second <= 0) client_streams_.erase(it);
}

void ConnectGateway::HandleStream(const MethodDescriptor& method, bool json,
                                  const std::string& payload, const std::string& client,
                                  grpc::ClientContext* context, ConnectResponder* responder) {
  const ContentType type{json ? Codec::kJson : Codec::kProto, true};
  if (absl::Status taken = TakeStream(client); !taken.ok()) {
    return EndStream(responder, type, false, taken);
  }
  // The reply's headers go out at once, before the first message: a client learns that its
  // stream is open (a watch of a paused run may send nothing for hours). An error still ends
  // the stream in its end-of-stream message, as Connect has it for streams.
  if (!responder->BeginStream(ContentTypeName(type))) {
    ReleaseStream(client);
    return;
  }
  bool gone = false;
  absl::Status broken;
  grpc::Status status = Invoke(
      context, absl::StrCat("/", options_.service, "/", method.name()), payload,
      [&](const grpc::ByteBuffer& message) {
        absl::StatusOr<std::string> out = ReplyPayload(*method.output_type(), json, message);
        if (!out.ok()) {
          broken = out.status();
          return false;
        }
        if (!responder->WriteStream(Envelope(0, *out))) return !(gone = true);
        return true;
      },
      responder);
  ReleaseStream(client);
  if (gone) return;
  absl::Status end = broken.ok() ? FromGrpcStatus(status) : broken;
  if (end.code() == absl::StatusCode::kDeadlineExceeded) {
    end = absl::DeadlineExceededError(
        absl::StrCat(end.message(), " (Connect-Timeout-Ms, or the HTTP port's longest stream, ",
                     absl::FormatDuration(options_.max_stream_duration),
                     "); call again from the last seq to go on"));
  }
  EndStream(responder, type, /*begun=*/true, end);
}

grpc::Status ConnectGateway::Invoke(grpc::ClientContext* context, const std::string& path,
                                    const std::string& request,
                                    const std::function<bool(const grpc::ByteBuffer&)>& on_message,
                                    ConnectResponder* responder) {
  grpc::CompletionQueue queue;
  // One operation at a time is in flight; this waits for it, asking meanwhile whether the
  // client is gone (then the call is cancelled, and the operation ends not ok).
  bool cancelled = false;
  const auto done = [&]() {
    void* tag = nullptr;
    bool ok = false;
    while (true) {
      if (responder == nullptr || cancelled) return queue.Next(&tag, &ok) && ok;
      const auto next =
          queue.AsyncNext(&tag, &ok, absl::ToChronoTime(absl::Now() + options_.gone_check));
      if (next == grpc::CompletionQueue::GOT_EVENT) return ok;
      if (next == grpc::CompletionQueue::SHUTDOWN) return false;
      if (responder->ClientGone()) {
        cancelled = true;
        context->TryCancel();
      }
    }
  };
  void* const tag = reinterpret_cast<void*>(1);
  std::unique_ptr<grpc::GenericClientAsyncReaderWriter> call =
      stub_.PrepareCall(context, path, &queue);
  call->StartCall(tag);
  grpc::Slice slice(request);
  grpc::ByteBuffer buffer(&slice, 1);
  if (done()) {
    call->WriteLast(buffer, grpc::WriteOptions(), tag);
    if (done()) {
      while (true) {
        grpc::ByteBuffer reply;
        call->Read(&reply, tag);
        if (!done()) break;
        if (!on_message(reply)) {
          context->TryCancel();
          break;
        }
      }
    }
  }
  grpc::Status status;
  call->Finish(&status, tag);
  done();
  queue.Shutdown();
  void* ignored_tag;
  bool ignored_ok;
  while (queue.Next(&ignored_tag, &ignored_ok)) {
  }
  return status;
}

}  // namespace rein::connect
