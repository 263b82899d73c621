// glibc malloc's per-thread cache, sized for a gRPC service.
#ifndef REIN_COMMON_MALLOC_TUNING_H_
#define REIN_COMMON_MALLOC_TUNING_H_

namespace rein {

// Chunks of each size class (up to 1,032 bytes) one thread's cache may hold; glibc's default is
// 7. A router transition frees and allocates dozens of small blocks of one size (protobuf
// fields, gRPC metadata), so with 7 most of them go through the shared bins and their locks.
// 128 took 4-11% off the router's CPU per iteration at 100 and 1,000 runs and cost 1.5 MiB
// after the abuse benchmark (bench/ANALYSIS.md, "Fourth round").
inline constexpr int kMallocTcacheCount = 128;

// glibc reads the cache size only from the GLIBC_TUNABLES environment variable, when the
// process starts. Called first thing in main (before any thread): when GLIBC_TUNABLES does not
// name glibc.malloc.tcache_count, this adds glibc.malloc.tcache_count=kMallocTcacheCount to it
// and executes the same binary again (/proc/self/exe, same argv and pid). The second start puts
// GLIBC_TUNABLES back as it was (unset, or the operator's value), so nothing the service starts
// (tools, sandboxes, MCP servers) inherits the setting, and names the process after argv[0]'s
// file name again (as top, ps -e and pgrep show it; the exec alone would name it "exe"). An
// operator's own glibc.malloc.tcache_count is kept as it is (glibc.malloc.tcache_count=7 restores
// glibc's default). If the second exec fails, the service goes on with glibc's default and says so
// on stderr.
void TuneMallocOrReexec(char** argv);

}  // namespace rein

#endif  // REIN_COMMON_MALLOC_TUNING_H_
