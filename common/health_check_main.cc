// rein-health: exits 0 when a gRPC target reports SERVING on grpc.health.v1 (used by ./dev up).
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "common/tls.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/support/byte_buffer.h"

namespace {

// grpc.health.v1.HealthCheckRequest{service} encoded by hand: field 1, length-delimited.
std::string EncodeRequest(const std::string& service) {
  std::string out;
  if (service.empty()) return out;
  out.push_back(0x0a);
  size_t n = service.size();
  while (n >= 0x80) {
    out.push_back(static_cast<char>((n & 0x7f) | 0x80));
    n >>= 7;
  }
  out.push_back(static_cast<char>(n));
  return out + service;
}

}  // namespace

int main(int argc, char** argv) {
  rein::TlsFiles tls;
  std::string tls_name;  // the name the server's certificate must carry; default the target's
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (absl::StartsWith(arg, "--tls_ca=")) {
      tls.ca = arg.substr(9);
    } else if (absl::StartsWith(arg, "--tls_cert=")) {
      tls.cert = arg.substr(11);
    } else if (absl::StartsWith(arg, "--tls_key=")) {
      tls.key = arg.substr(10);
    } else if (absl::StartsWith(arg, "--tls_name=")) {
      tls_name = arg.substr(11);
    } else {
      args.push_back(arg);
    }
  }
  if (args.empty() || args.size() > 2) {
    std::cerr << "usage: rein-health [--tls_ca=PEM [--tls_cert=PEM --tls_key=PEM] "
                 "[--tls_name=NAME]] TARGET [SERVICE]\n";
    return 2;
  }
  if (absl::Status checked = rein::CheckClientTlsFiles(tls); !checked.ok()) {
    std::cerr << "rein-health: " << checked.message() << "\n";
    return 2;
  }
  const std::string target = args[0];
  grpc::ChannelArguments channel_args;
  rein::AddTlsTargetName(tls_name, &channel_args);
  auto channel = grpc::CreateCustomChannel(target, rein::MakeChannelCredentials(tls), channel_args);
  grpc::GenericStub stub(channel);
  std::string request = EncodeRequest(args.size() == 2 ? args[1] : "");
  grpc::Slice slice(request);
  grpc::ByteBuffer send(&slice, 1);
  grpc::ByteBuffer reply;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
  grpc::CompletionQueue cq;
  auto call = stub.PrepareUnaryCall(&context, "/grpc.health.v1.Health/Check", send, &cq);
  call->StartCall();
  grpc::Status status;
  call->Finish(&reply, &status, reinterpret_cast<void*>(1));
  void* tag;
  bool ok;
  cq.Next(&tag, &ok);
  if (!status.ok()) {
    std::cerr << target << ": " << status.error_message() << "\n";
    return 1;
  }
  std::vector<grpc::Slice> slices;
  (void)reply.Dump(&slices);
  std::string body;
  for (const auto& s : slices) body.append(reinterpret_cast<const char*>(s.begin()), s.size());
  // HealthCheckResponse{status = 1 (SERVING)} is the bytes 08 01.
  bool serving = body.size() == 2 && body[0] == 0x08 && body[1] == 0x01;
  std::cout << target << (serving ? " SERVING\n" : " NOT_SERVING\n");
  return serving ? 0 : 1;
}
