// Test helper: what runs on the host.
#include "executor_service/testing/host_processes.h"

#include <dirent.h>

#include <fstream>
#include <sstream>

namespace rein::testing {

bool HostProcessWithCmdline(const std::string& needle) {
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return false;
  bool found = false;
  while (struct dirent* entry = readdir(proc)) {
    if (entry->d_name[0] < '0' || entry->d_name[0] > '9') continue;
    std::ifstream in(std::string("/proc/") + entry->d_name + "/cmdline", std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    if (text.str().find(needle) != std::string::npos) found = true;
  }
  closedir(proc);
  return found;
}

}  // namespace rein::testing
