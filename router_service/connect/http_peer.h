// The address of whoever makes a call on the Router's gRPC service. A call the HTTP port
// forwards comes over the server's in-process channel, whose peer names no client; the
// gateway sends the HTTP client's address along in metadata, sealed with a secret that only
// this process knows, and the service believes it only on a call with no network peer that
// carries the secret: over the network the metadata is anyone's to write, and is ignored.
#ifndef REIN_ROUTER_SERVICE_CONNECT_HTTP_PEER_H_
#define REIN_ROUTER_SERVICE_CONNECT_HTTP_PEER_H_

#include <string>

#include "absl/strings/string_view.h"
#include "grpcpp/grpcpp.h"

namespace rein::connect {

// The metadata key the gateway sets.
inline constexpr char kHttpPeerMetadata[] = "rein-http-peer";

// The HTTP client's address in gRPC's peer form ("ipv4:1.2.3.4:5678", "ipv6:[::1]:5678").
std::string HttpPeer(absl::string_view ip, int port);

// Sends `peer` (HttpPeer's form, printable) along with an in-process call.
void AddHttpPeer(const std::string& peer, grpc::ClientContext* context);

// The caller's address: the HTTP client's for a call the HTTP port forwarded in process,
// else gRPC's peer of the call.
std::string CallerPeer(const grpc::ServerContextBase& context);

}  // namespace rein::connect

#endif  // REIN_ROUTER_SERVICE_CONNECT_HTTP_PEER_H_
