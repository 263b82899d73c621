// glibc malloc's tunables as the environment sets them, logged once when a service starts.
#ifndef REIN_COMMON_MALLOC_TUNING_H_
#define REIN_COMMON_MALLOC_TUNING_H_

#include <string>

namespace rein {

// What the container images (deploy/docker) and ./dev put in GLIBC_TUNABLES for the three
// services. glibc reads it only when a process starts, so it comes from the environment, never
// from the service itself. tcache_count: chunks of each size class (up to 1,032 bytes) one
// thread's cache may hold; glibc's default is 7. A router transition frees and allocates dozens of
// small blocks of one size (protobuf fields, gRPC metadata), so with 7 most of them go through
// the shared bins and their locks. 128 took 4-11% off the router's CPU per iteration at 100 and
// 1,000 runs and cost 1.5 MiB after the abuse benchmark (bench/ANALYSIS.md, "Fourth round").
inline constexpr char kServiceMallocTunables[] = "glibc.malloc.tcache_count=128";

// The malloc tunables in effect in this process: `glibc_tunables` (the value of GLIBC_TUNABLES,
// nullptr when unset) as one log field value, "(unset: glibc's defaults)" when unset or empty.
std::string MallocTunablesInEffect(const char* glibc_tunables);

// Logs (info, "malloc tunables") the GLIBC_TUNABLES this process started with. Called once by
// each service's main after SetLogService.
void LogMallocTunables();

}  // namespace rein

#endif  // REIN_COMMON_MALLOC_TUNING_H_
