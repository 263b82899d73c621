// Test helper: what runs on the host, seen through /proc.
#ifndef REIN_EXECUTOR_SERVICE_TESTING_HOST_PROCESSES_H_
#define REIN_EXECUTOR_SERVICE_TESTING_HOST_PROCESSES_H_

#include <string>

namespace rein::testing {

// True when a process on the host has `needle` in its command line.
bool HostProcessWithCmdline(const std::string& needle);

}  // namespace rein::testing

#endif  // REIN_EXECUTOR_SERVICE_TESTING_HOST_PROCESSES_H_
