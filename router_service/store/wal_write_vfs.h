// WalWriteVfs: an SQLite VFS that writes each transaction's WAL frames with one system call.
#ifndef REIN_ROUTER_SERVICE_STORE_WAL_WRITE_VFS_H_
#define REIN_ROUTER_SERVICE_STORE_WAL_WRITE_VFS_H_

#include <cstdint>

namespace rein {

// The name of a VFS ("rein-wal", registered on the first call, not as the default) that hands
// everything to SQLite's default VFS except the writes to a WAL file. SQLite writes each WAL
// frame with two calls (its 24-byte header, then its page: 8 to 20 `pwrite`s for one of the
// router's commits); this VFS gathers a transaction's writes in a buffer of 124 KiB while each
// starts where the last ended, and writes them with one call (one per 124 KiB for a larger one) as
// soon as the commit frame (the frame whose header carries the database's size) is complete, so the
// commit is in the file before SQLite publishes it to other connections, exactly as without this
// VFS. Whatever is gathered is also written before any other operation on that file (read, sync,
// truncate, size, file control, close) and before a write elsewhere in it, so the order of the
// writes never changes and this connection always reads back what it wrote. A failed write fails
// the SQLite call that made it (the commit, or the read or sync), never silently.
//
// nullptr when the VFS could not be registered (no default VFS); callers then use the default.
// Thread-safe; every connection of the process may use it.
const char* WalWriteVfs();

// Counts, for this process, of WAL writes SQLite asked this VFS for and of the writes it made
// to the file for them. For tests.
struct WalWriteCounts {
  uint64_t requested = 0;
  uint64_t written = 0;
};
WalWriteCounts WalWriteCountsForTesting();

}  // namespace rein

#endif  // REIN_ROUTER_SERVICE_STORE_WAL_WRITE_VFS_H_
