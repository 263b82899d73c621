// rein-health: exits 0 when a gRPC target reports SERVING on grpc.health.v1 (used by ./dev up).
#include <iostream>
#include <string>

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
  if (argc < 2 || argc > 3) {
    std::cerr << "usage: rein-health TARGET [SERVICE]\n";
    return 2;
  }
  auto channel = grpc::CreateChannel(argv[1], grpc::InsecureChannelCredentials());
  grpc::GenericStub stub(channel);
  std::string request = EncodeRequest(argc == 3 ? argv[2] : "");
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
    std::cerr << argv[1] << ": " << status.error_message() << "\n";
    return 1;
  }
  std::vector<grpc::Slice> slices;
  (void)reply.Dump(&slices);
  std::string body;
  for (const auto& s : slices) body.append(reinterpret_cast<const char*>(s.begin()), s.size());
  // HealthCheckResponse{status = 1 (SERVING)} is the bytes 08 01.
  bool serving = body.size() == 2 && body[0] == 0x08 && body[1] == 0x01;
  std::cout << argv[1] << (serving ? " SERVING\n" : " NOT_SERVING\n");
  return serving ? 0 : 1;
}
