// glibc malloc's tunables as the environment sets them (see malloc_tuning.h).
#include "common/malloc_tuning.h"

#include <cstdlib>
#include <string>

#include "common/log.h"

namespace rein {

std::string MallocTunablesInEffect(const char* glibc_tunables) {
  if (glibc_tunables == nullptr || glibc_tunables[0] == '\0') return "(unset: glibc's defaults)";
  return glibc_tunables;
}

void LogMallocTunables() {
  LogInfo("malloc tunables", {{"GLIBC_TUNABLES", MallocTunablesInEffect(getenv("GLIBC_TUNABLES"))},
                              {"recommended", kServiceMallocTunables}});
}

}  // namespace rein
