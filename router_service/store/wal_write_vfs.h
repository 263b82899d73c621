// WalWriteVfs: an SQLite VFS that writes each transaction's WAL frames with one system call.
#ifndef REIN_ROUTER_SERVICE_STORE_WAL_WRITE_VFS_H_
#define REIN_ROUTER_SERVICE_STORE_WAL_WRITE_VFS_H_

#include <cstdint>

struct sqlite3;

namespace rein {

// The name of a VFS ("rein-wal", registered on the first call, not as the default) that hands
// everything to SQLite's default VFS except the writes to a WAL file. SQLite writes each WAL
// frame with two calls (its 24-byte header, then its page: about 8 `pwrite`s for one commit
// of a lone run, 4.2 frames); this VFS gathers the bytes a transaction appends to the WAL in a
// buffer of 124 KiB and writes them with one call (one per 124 KiB for a larger one) as soon as the
// commit frame is complete, so a failed write fails the commit, and in any case before SQLite
// publishes a frame to other connections and before the connection takes or gives up a WAL lock
// (see wal_write_vfs.cc). Whatever is gathered is also written before any other operation on that
// file (read, sync, truncate, size, file control, close) and before a write anywhere else in it,
// so the order of the writes never changes and the connection reads back what it wrote.
//
// nullptr when the VFS could not be registered (no default VFS); callers then use the default.
// Thread-safe; every connection of the process may use it.
const char* WalWriteVfs();

// Links `db`'s database file and its WAL file (a connection opened with WalWriteVfs() that has
// read the database in WAL mode, so that SQLite has opened its WAL): until then, and for a WAL
// SQLite opens again later, the WAL's writes go straight to the file. False when `db` is not on
// this VFS or not in WAL mode. Call it with the connection not in use by another thread.
bool WalWriteVfsAttach(sqlite3* db);

// Counts, for this process, of WAL writes SQLite asked this VFS for and of the writes it made
// to the file for them. For tests.
struct WalWriteCounts {
  uint64_t requested = 0;
  uint64_t written = 0;
};
WalWriteCounts WalWriteCountsForTesting();

}  // namespace rein

#endif  // REIN_ROUTER_SERVICE_STORE_WAL_WRITE_VFS_H_
