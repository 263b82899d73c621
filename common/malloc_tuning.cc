// glibc malloc's per-thread cache, sized for a gRPC service (see malloc_tuning.h).
#include "common/malloc_tuning.h"

#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace rein {
namespace {

// Set only between the two starts: the marker, and GLIBC_TUNABLES as the operator had it.
constexpr char kMarker[] = "REIN_MALLOC_TUNED";
constexpr char kOriginal[] = "REIN_GLIBC_TUNABLES_BEFORE";
constexpr char kTunables[] = "GLIBC_TUNABLES";

// Puts GLIBC_TUNABLES back as the operator had it and removes the markers.
void RestoreEnvironment() {
  if (const char* original = getenv(kOriginal)) {
    setenv(kTunables, original, 1);
  } else {
    unsetenv(kTunables);
  }
  unsetenv(kOriginal);
  unsetenv(kMarker);
}

}  // namespace

void TuneMallocOrReexec(char** argv) {
  if (getenv(kMarker) != nullptr) {  // the second start
    RestoreEnvironment();
    // Started as /proc/self/exe, the process is named "exe" (top, ps -e, pgrep): name it
    // after the binary again (the kernel keeps 15 bytes of it).
    if (argv != nullptr && argv[0] != nullptr) {
      const char* slash = strrchr(argv[0], '/');
      prctl(PR_SET_NAME, slash != nullptr ? slash + 1 : argv[0], 0, 0, 0);
    }
    return;
  }
  const char* before = getenv(kTunables);
  if (before != nullptr && strstr(before, "glibc.malloc.tcache_count=") != nullptr) return;
  std::string tunables = "glibc.malloc.tcache_count=" + std::to_string(kMallocTcacheCount);
  if (before != nullptr) {
    setenv(kOriginal, before, 1);  // restored as it was, even if set but empty
    if (before[0] != '\0') tunables = std::string(before) + ":" + tunables;
  }
  setenv(kMarker, "1", 1);
  setenv(kTunables, tunables.c_str(), 1);
  execv("/proc/self/exe", argv);
  const int error = errno;
  RestoreEnvironment();
  fprintf(stderr,
          "could not start again with glibc.malloc.tcache_count=%d (exec /proc/self/exe: %s); "
          "going on with glibc's default thread cache\n",
          kMallocTcacheCount, strerror(error));
}

}  // namespace rein
