// The address of whoever makes a call on the Router's gRPC service.
#include "router_service/connect/http_peer.h"

#include <cstdint>

#include "absl/random/random.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace rein::connect {
namespace {

// 128 random bits, drawn once per process; never written anywhere.
const std::string& ProcessSecret() {
  static const std::string* secret = [] {
    absl::BitGen random;
    return new std::string(
        absl::StrCat(absl::Hex(absl::Uniform<uint64_t>(random), absl::kZeroPad16),
                     absl::Hex(absl::Uniform<uint64_t>(random), absl::kZeroPad16)));
  }();
  return *secret;
}

// Whether gRPC's peer is a network address (an in-process call's is not).
bool FromNetwork(absl::string_view peer) {
  return absl::StartsWith(peer, "ipv4:") || absl::StartsWith(peer, "ipv6:") ||
         absl::StartsWith(peer, "unix:") || absl::StartsWith(peer, "unix-abstract:") ||
         absl::StartsWith(peer, "vsock:");
}

}  // namespace

std::string HttpPeer(absl::string_view ip, int port) {
  if (absl::StrContains(ip, ':')) return absl::StrCat("ipv6:[", ip, "]:", port);
  return absl::StrCat("ipv4:", ip, ":", port);
}

void AddHttpPeer(const std::string& peer, grpc::ClientContext* context) {
  context->AddMetadata(kHttpPeerMetadata, absl::StrCat(ProcessSecret(), " ", peer));
}

std::string CallerPeer(const grpc::ServerContextBase& context) {
  std::string peer = context.peer();
  if (FromNetwork(peer)) return peer;
  const auto& metadata = context.client_metadata();
  auto it = metadata.find(kHttpPeerMetadata);
  if (it == metadata.end()) return peer;
  absl::string_view value(it->second.data(), it->second.size());
  if (!absl::ConsumePrefix(&value, ProcessSecret()) || !absl::ConsumePrefix(&value, " ")) {
    return peer;
  }
  return std::string(value);
}

}  // namespace rein::connect
