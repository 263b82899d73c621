// A test OTLP/HTTP receiver as a process of its own, for tests whose services run on other
// hosts: rein-test-collector --listen=ADDRESS:PORT --dump_dir=DIR. Every request it accepts is
// written to DIR (see OtlpCollector::DumpTo); it runs until SIGTERM or SIGINT.
#include <signal.h>

#include <iostream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "trace/testing/otlp_collector.h"

int main(int argc, char** argv) {
  std::string listen, dump_dir;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (absl::StartsWith(arg, "--listen=")) {
      listen = arg.substr(9);
    } else if (absl::StartsWith(arg, "--dump_dir=")) {
      dump_dir = arg.substr(11);
    } else {
      std::cerr << "unknown argument " << arg << " (--listen=ADDRESS:PORT --dump_dir=DIR)\n";
      return 2;
    }
  }
  const std::pair<std::string, std::string> host_port = absl::StrSplit(listen, ':');
  int port = 0;
  if (host_port.first.empty() || !absl::SimpleAtoi(host_port.second, &port) || port <= 0 ||
      port > 65535 || dump_dir.empty()) {
    std::cerr << "need --listen=ADDRESS:PORT (an IPv4 address and a port) and --dump_dir=DIR\n";
    return 2;
  }
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);  // before any thread: they all inherit it
  rein::trace::testing::OtlpCollector collector;
  collector.DumpTo(dump_dir);
  if (!collector.Start(host_port.first, port)) {
    std::cerr << "cannot listen on " << listen << "\n";
    return 1;
  }
  std::cerr << "collector serving on " << collector.endpoint() << std::endl;
  int signal = 0;
  sigwait(&signals, &signal);
  collector.Stop();
  return 0;
}
