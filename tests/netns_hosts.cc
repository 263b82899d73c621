#include "tests/netns_hosts.h"

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace rein::testing {
namespace {

constexpr char kIp[] = "/usr/sbin/ip";

// Like RunCommand, for teardown: failures (a link already gone) are expected and ignored.
void RunQuietly(const std::vector<std::string>& argv) { (void)RunCommand(argv); }

}  // namespace

absl::Status RunCommand(const std::vector<std::string>& argv) {
  std::string command;
  for (const std::string& arg : argv) {
    // Arguments here are the test's own (names, addresses): quote them anyway.
    absl::StrAppend(&command, command.empty() ? "" : " ", "'", arg, "'");
  }
  absl::StrAppend(&command, " 2>&1");
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return absl::InternalError(absl::StrCat("cannot run ", command));
  std::string output;
  std::array<char, 512> buffer;
  size_t n = 0;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) output.append(buffer.data(), n);
  const int status = pclose(pipe);
  if (status != 0) {
    return absl::InternalError(absl::StrCat(absl::StrJoin(argv, " "), " failed: ", output));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<HostNetwork>> HostNetwork::Create(const std::string& tag,
                                                                 const std::string& subnet) {
  if (tag.empty() || tag.size() > 6) return absl::InvalidArgumentError("tag: 1..6 characters");
  std::unique_ptr<HostNetwork> network(new HostNetwork(tag, subnet));
  network->Teardown();  // what a crashed earlier test with this tag left behind
  absl::Status status = network->Setup();
  if (!status.ok()) return status;
  return network;
}

HostNetwork::~HostNetwork() { Teardown(); }

std::string HostNetwork::Namespace(const std::string& host) const {
  return absl::StrCat("rein-", tag_, "-", host);
}

absl::Status HostNetwork::Setup() {
  const std::string sw = Namespace("switch");
  const std::string root_link = absl::StrCat("rn", tag_, "r");
  for (const auto& argv : std::vector<std::vector<std::string>>{
           {kIp, "netns", "add", sw},
           {kIp, "-n", sw, "link", "add", "br0", "type", "bridge"},
           {kIp, "-n", sw, "link", "set", "br0", "up"},
           {kIp, "link", "add", root_link, "type", "veth", "peer", "name", root_link + "p"},
           {kIp, "link", "set", root_link + "p", "netns", sw},
           {kIp, "-n", sw, "link", "set", root_link + "p", "master", "br0", "up"},
           {kIp, "addr", "add", subnet_ + ".1/24", "dev", root_link},
           {kIp, "link", "set", root_link, "up"}}) {
    absl::Status status = RunCommand(argv);
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

void HostNetwork::Teardown() {
  // Deleting a namespace destroys the veth ends inside it, and with them their peers.
  for (const auto& [host, link] : links_) RunQuietly({kIp, "netns", "delete", Namespace(host)});
  links_.clear();
  RunQuietly({kIp, "netns", "delete", Namespace("switch")});
  RunQuietly({kIp, "link", "delete", absl::StrCat("rn", tag_, "r")});
  // Hosts of an earlier, crashed run with this tag.
  FILE* pipe = popen("/usr/sbin/ip netns list 2>/dev/null", "r");
  if (pipe == nullptr) return;
  std::array<char, 256> line;
  std::vector<std::string> stale;
  const std::string prefix = absl::StrCat("rein-", tag_, "-");
  while (fgets(line.data(), line.size(), pipe) != nullptr) {
    std::string name(line.data());
    name = name.substr(0, name.find_first_of(" \n"));
    if (name.rfind(prefix, 0) == 0) stale.push_back(name);
  }
  pclose(pipe);
  for (const std::string& name : stale) RunQuietly({kIp, "netns", "delete", name});
}

absl::StatusOr<std::string> HostNetwork::AddHost(const std::string& name, int octet) {
  if (octet < 2 || octet > 254) return absl::InvalidArgumentError("octet: 2..254");
  const std::string ns = Namespace(name);
  const std::string sw = Namespace("switch");
  // Interface names are at most 15 bytes.
  const std::string link = absl::StrCat("rn", tag_, "h", octet);
  const std::string address = absl::StrCat(subnet_, ".", octet);
  for (const auto& argv : std::vector<std::vector<std::string>>{
           {kIp, "netns", "add", ns},
           {kIp, "-n", ns, "link", "set", "lo", "up"},
           {kIp, "link", "add", link, "type", "veth", "peer", "name", link + "p"},
           {kIp, "link", "set", link, "netns", ns},
           {kIp, "link", "set", link + "p", "netns", sw},
           {kIp, "-n", sw, "link", "set", link + "p", "master", "br0", "up"},
           {kIp, "-n", ns, "addr", "add", address + "/24", "dev", link},
           {kIp, "-n", ns, "link", "set", link, "up"}}) {
    absl::Status status = RunCommand(argv);
    if (!status.ok()) return status;
  }
  links_[name] = link;
  return address;
}

absl::Status HostNetwork::SetLinkUp(const std::string& name, bool up) {
  auto it = links_.find(name);
  if (it == links_.end()) return absl::NotFoundError(absl::StrCat("no host ", name));
  return RunCommand({kIp, "-n", Namespace(name), "link", "set", it->second, up ? "up" : "down"});
}

std::vector<std::string> HostNetwork::InHost(const std::string& name,
                                             const std::vector<std::string>& argv) const {
  std::vector<std::string> out = {kIp, "netns", "exec", Namespace(name)};
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

}  // namespace rein::testing
