// Test helper: a small network of test hosts, each a network namespace with one address on a
// bridge, for tests of rein spread over several machines. Needs root (CAP_NET_ADMIN).
#ifndef REIN_TESTS_NETNS_HOSTS_H_
#define REIN_TESTS_NETNS_HOSTS_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace rein::testing {

// The namespaces are named "rein-<tag>-<host>", the bridge lives in a namespace of its own
// ("rein-<tag>-switch"), and the test process reaches the hosts through one veth whose end in
// the test's namespace holds <subnet>.1. Nothing else of the machine's network is touched:
// every address is in a /24 that belongs to these hosts only, and the destructor removes every
// namespace and link it made (so does a new network with the same tag, after a crashed test).
class HostNetwork {
 public:
  // `tag`: at most 6 characters [a-z0-9]; `subnet`: the first three octets, e.g. "10.231.7".
  static absl::StatusOr<std::unique_ptr<HostNetwork>> Create(const std::string& tag,
                                                             const std::string& subnet);
  ~HostNetwork();
  HostNetwork(const HostNetwork&) = delete;
  HostNetwork& operator=(const HostNetwork&) = delete;

  // Adds a host with address <subnet>.<octet> (2..254) and returns that address.
  absl::StatusOr<std::string> AddHost(const std::string& name, int octet);
  // Takes the host's only link down (a cut cable: every peer, the store included, is gone)
  // or up again.
  absl::Status SetLinkUp(const std::string& name, bool up);
  // `argv` run inside the host's namespace (`ip netns exec NS argv...`; ip execs the command,
  // so a signal sent to the child's pid reaches the command itself).
  std::vector<std::string> InHost(const std::string& name,
                                  const std::vector<std::string>& argv) const;
  const std::string& subnet() const { return subnet_; }

 private:
  HostNetwork(std::string tag, std::string subnet)
      : tag_(std::move(tag)), subnet_(std::move(subnet)) {}
  std::string Namespace(const std::string& host) const;
  absl::Status Setup();
  void Teardown();

  std::string tag_;
  std::string subnet_;
  std::map<std::string, std::string> links_;  // host -> its interface name inside its namespace
};

// Runs `argv` to the end; OK when it exits 0, else INTERNAL with its output.
absl::Status RunCommand(const std::vector<std::string>& argv);

}  // namespace rein::testing

#endif  // REIN_TESTS_NETNS_HOSTS_H_
