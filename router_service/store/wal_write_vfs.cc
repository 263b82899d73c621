// WalWriteVfs: gathers a transaction's WAL writes and writes them with one system call.
//
// What this relies on, from SQLite's WAL format (https://www.sqlite.org/fileformat2.html#walformat)
// and wal.c: a WAL file is a 32-byte header and then frames, each a 24-byte header and one page; a
// frame whose header has a nonzero "database size after commit" (bytes 4 to 7) ends a
// transaction; SQLite writes a frame as its header and then its page, and publishes new frames to
// other connections by writing the WAL index's header in shared memory, with a memory barrier
// (xShmBarrier on the database file) between its two copies, only after every write of the
// transaction has returned; a writer holds the WAL's write lock (xShmLock on the database file)
// from its first frame to the end of its transaction.
//
// So a gathered write is made at the latest (1) when a commit frame is complete (the page written
// after a 24-byte write with a nonzero "size after commit"): the usual case, where a failed write
// fails the commit; (2) at the connection's next xShmBarrier or xShmLock on
// its database file: before any frame it wrote can be published and before another connection
// can write to the WAL, whatever SQLite wrote in between (checksums rewritten at a commit after a
// page spilled twice, the rest of a padding frame split at a sector by synchronous=FULL without
// powersafe overwrite, a transaction rolled back after its pages spilled); (3) before any other
// operation on the WAL file. Only appended bytes are gathered; a write over bytes already written
// in this generation of the WAL (SQLite rewriting a frame in place) goes straight to the file
// after what was gathered.
#include "router_service/store/wal_write_vfs.h"

#include <sqlite3.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace rein {
namespace {

constexpr int kFrameHeaderBytes = 24;
// The gathering buffer of a WAL file, allocated at its first write and kept until it is closed:
// the most the default VFS writes in one call (its unix write masks a size to 17 bits, see
// seekAndWriteFd), so that what is gathered always goes out in one call. A commit of the router
// is about 17 KB (4.2 frames of a lone run); a larger one (a group of many runs' transitions) is
// written 124 KiB at a time. A buffer grown and given back for each large group instead cost more
// than it saved: at 100 runs its page faults and copies took about 18% of the router's CPU.
constexpr size_t kBufferBytes = 0x1f000;  // 124 KiB

std::atomic<uint64_t> requested_writes{0};
std::atomic<uint64_t> file_writes{0};

// The file SQLite holds: this, then the default VFS's own file in the same allocation.
struct WalFile {
  sqlite3_file base;  // first: SQLite sees a WalFile as its sqlite3_file
  sqlite3_file* real;
  bool wal;
  // The same connection's other file (its WAL for a database file, and the reverse), set by
  // WalWriteVfsAttach; a WAL file gathers nothing until it has one.
  WalFile* partner;
  // WAL files only:
  sqlite3_int64 generation_end;   // where this handle's writes since the last WAL header end
                                  // (-1 before its first: a transaction's first write appends)
  char* buffer;                   // kBufferBytes, or nullptr before the first write
  size_t gathered;                // bytes in `buffer` not yet in the file, contiguous from...
  sqlite3_int64 gathered_offset;  // ...this offset
  bool commit_page_next;          // the last gathered write was a commit frame's header
};

constexpr int kWalFileBytes = (sizeof(WalFile) + 7) & ~7;

WalFile* Cast(sqlite3_file* file) { return reinterpret_cast<WalFile*>(file); }
const sqlite3_io_methods* Real(WalFile* f) { return f->real->pMethods; }
sqlite3_vfs* RealVfs(sqlite3_vfs* vfs) { return static_cast<sqlite3_vfs*>(vfs->pAppData); }

uint32_t BigEndian32(const unsigned char* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

int Flush(WalFile* f) {
  if (f->gathered == 0) return SQLITE_OK;
  const int rc =
      Real(f)->xWrite(f->real, f->buffer, static_cast<int>(f->gathered), f->gathered_offset);
  file_writes.fetch_add(1, std::memory_order_relaxed);
  f->gathered = 0;
  return rc;
}

// Writes what a WAL file gathered; nothing for a database file.
int FlushIfWal(WalFile* f) { return f->wal ? Flush(f) : SQLITE_OK; }

int Close(sqlite3_file* file) {
  WalFile* f = Cast(file);
  int rc = SQLITE_OK;
  if (f->wal) {
    rc = Flush(f);
    free(f->buffer);
    f->buffer = nullptr;
  }
  if (f->partner != nullptr) {
    f->partner->partner = nullptr;
    f->partner = nullptr;
  }
  const int close_rc = Real(f) != nullptr ? Real(f)->xClose(f->real) : SQLITE_OK;
  return rc != SQLITE_OK ? rc : close_rc;
}

int Read(sqlite3_file* file, void* data, int amount, sqlite3_int64 offset) {
  WalFile* f = Cast(file);
  if (const int rc = FlushIfWal(f); rc != SQLITE_OK) return rc;
  return Real(f)->xRead(f->real, data, amount, offset);
}

int WriteThrough(WalFile* f, const void* data, int amount, sqlite3_int64 offset) {
  file_writes.fetch_add(1, std::memory_order_relaxed);
  return Real(f)->xWrite(f->real, data, amount, offset);
}

int Write(sqlite3_file* file, const void* data, int amount, sqlite3_int64 offset) {
  WalFile* f = Cast(file);
  if (!f->wal) return Real(f)->xWrite(f->real, data, amount, offset);
  requested_writes.fetch_add(1, std::memory_order_relaxed);
  if (f->partner == nullptr) return WriteThrough(f, data, amount, offset);
  const sqlite3_int64 end = offset + amount;
  if (offset == 0) f->generation_end = 0;  // a new WAL header: the WAL written from its start

  const sqlite3_int64 gathered_end = f->gathered_offset + static_cast<sqlite3_int64>(f->gathered);
  const bool appends = f->gathered > 0 ? offset == gathered_end
                                       : f->generation_end < 0 || offset == f->generation_end;
  if (f->gathered > 0 && (!appends || f->gathered + static_cast<size_t>(amount) > kBufferBytes)) {
    const int rc = Flush(f);
    if (rc != SQLITE_OK) return rc;
  }
  f->generation_end = std::max(f->generation_end, end);
  if (f->buffer == nullptr && appends) f->buffer = static_cast<char*>(malloc(kBufferBytes));
  if (!appends || f->buffer == nullptr || static_cast<size_t>(amount) > kBufferBytes) {
    // A write over bytes already written (SQLite rewriting a frame), no memory for the buffer,
    // or a write larger than it (never: a frame is at most 64 KiB): straight to the file.
    f->commit_page_next = false;
    return WriteThrough(f, data, amount, offset);
  }
  if (f->gathered == 0) f->gathered_offset = offset;
  memcpy(f->buffer + f->gathered, data, static_cast<size_t>(amount));
  f->gathered += static_cast<size_t>(amount);
  if (f->commit_page_next) {  // the commit frame's page: the transaction is complete
    f->commit_page_next = false;
    return Flush(f);
  }
  f->commit_page_next =
      amount == kFrameHeaderBytes && BigEndian32(static_cast<const unsigned char*>(data) + 4) != 0;
  return SQLITE_OK;
}

// Writes what the WAL file of `db_file`'s connection gathered, before SQLite publishes frames or
// takes or gives up a lock of the WAL. Almost always nothing is left by then (the commit frame
// wrote it); when something is and it cannot be written, no frame may be published without its
// bytes in the file and xShmBarrier cannot fail, so the process stops: a restarted router
// recovers every committed transaction from the WAL, and this one was not committed.
void FlushPartnerOrDie(WalFile* db_file) {
  WalFile* wal = db_file->partner;
  if (wal == nullptr || wal->gathered == 0) return;
  const int rc = Flush(wal);
  if (rc != SQLITE_OK) {
    fprintf(stderr, "rein-wal: a WAL write failed before SQLite could publish it (%s); stopping\n",
            sqlite3_errstr(rc));
    abort();
  }
}

int Truncate(sqlite3_file* file, sqlite3_int64 size) {
  WalFile* f = Cast(file);
  if (const int rc = FlushIfWal(f); rc != SQLITE_OK) return rc;
  return Real(f)->xTruncate(f->real, size);
}

int Sync(sqlite3_file* file, int flags) {
  WalFile* f = Cast(file);
  if (const int rc = FlushIfWal(f); rc != SQLITE_OK) return rc;
  return Real(f)->xSync(f->real, flags);
}

int FileSize(sqlite3_file* file, sqlite3_int64* size) {
  WalFile* f = Cast(file);
  if (const int rc = FlushIfWal(f); rc != SQLITE_OK) return rc;
  return Real(f)->xFileSize(f->real, size);
}

int FileControl(sqlite3_file* file, int op, void* arg) {
  WalFile* f = Cast(file);
  if (const int rc = FlushIfWal(f); rc != SQLITE_OK) return rc;
  return Real(f)->xFileControl(f->real, op, arg);
}

int Lock(sqlite3_file* file, int lock) { return Real(Cast(file))->xLock(Cast(file)->real, lock); }
int Unlock(sqlite3_file* file, int lock) {
  return Real(Cast(file))->xUnlock(Cast(file)->real, lock);
}
int CheckReservedLock(sqlite3_file* file, int* out) {
  return Real(Cast(file))->xCheckReservedLock(Cast(file)->real, out);
}
int SectorSize(sqlite3_file* file) { return Real(Cast(file))->xSectorSize(Cast(file)->real); }
int DeviceCharacteristics(sqlite3_file* file) {
  return Real(Cast(file))->xDeviceCharacteristics(Cast(file)->real);
}
int ShmMap(sqlite3_file* file, int region, int size, int extend, void volatile** out) {
  WalFile* f = Cast(file);
  if (Real(f)->iVersion < 2) return SQLITE_IOERR_SHMMAP;
  return Real(f)->xShmMap(f->real, region, size, extend, out);
}
int ShmLock(sqlite3_file* file, int offset, int n, int flags) {
  WalFile* f = Cast(file);
  FlushPartnerOrDie(f);
  if (Real(f)->iVersion < 2) return SQLITE_IOERR_SHMLOCK;
  return Real(f)->xShmLock(f->real, offset, n, flags);
}
void ShmBarrier(sqlite3_file* file) {
  WalFile* f = Cast(file);
  FlushPartnerOrDie(f);
  if (Real(f)->iVersion >= 2) Real(f)->xShmBarrier(f->real);
}
int ShmUnmap(sqlite3_file* file, int remove) {
  WalFile* f = Cast(file);
  if (Real(f)->iVersion < 2) return SQLITE_OK;
  return Real(f)->xShmUnmap(f->real, remove);
}
int Fetch(sqlite3_file* file, sqlite3_int64 offset, int amount, void** out) {
  WalFile* f = Cast(file);
  *out = nullptr;  // "no mapping": SQLite reads with xRead instead
  if (f->wal || Real(f)->iVersion < 3) return SQLITE_OK;
  return Real(f)->xFetch(f->real, offset, amount, out);
}
int Unfetch(sqlite3_file* file, sqlite3_int64 offset, void* page) {
  WalFile* f = Cast(file);
  if (f->wal || Real(f)->iVersion < 3) return SQLITE_OK;
  return Real(f)->xUnfetch(f->real, offset, page);
}

const sqlite3_io_methods kMethods = {
    /*iVersion=*/3,
    Close,
    Read,
    Write,
    Truncate,
    Sync,
    FileSize,
    Lock,
    Unlock,
    CheckReservedLock,
    FileControl,
    SectorSize,
    DeviceCharacteristics,
    ShmMap,
    ShmLock,
    ShmBarrier,
    ShmUnmap,
    Fetch,
    Unfetch,
};

int Open(sqlite3_vfs* vfs, const char* name, sqlite3_file* file, int flags, int* out_flags) {
  WalFile* f = Cast(file);
  f->base.pMethods = nullptr;
  f->real = reinterpret_cast<sqlite3_file*>(reinterpret_cast<char*>(file) + kWalFileBytes);
  f->wal = (flags & SQLITE_OPEN_WAL) != 0;
  f->partner = nullptr;
  f->generation_end = -1;
  f->buffer = nullptr;
  f->gathered = 0;
  f->gathered_offset = 0;
  f->commit_page_next = false;
  const int rc = RealVfs(vfs)->xOpen(RealVfs(vfs), name, f->real, flags, out_flags);
  if (rc != SQLITE_OK) {
    // SQLite calls xClose on a failed open whose pMethods is set: close the real file, if the
    // default VFS left it open, here.
    if (f->real->pMethods != nullptr) f->real->pMethods->xClose(f->real);
    return rc;
  }
  f->base.pMethods = &kMethods;
  return SQLITE_OK;
}

int Delete(sqlite3_vfs* vfs, const char* name, int sync_dir) {
  return RealVfs(vfs)->xDelete(RealVfs(vfs), name, sync_dir);
}
int Access(sqlite3_vfs* vfs, const char* name, int flags, int* out) {
  return RealVfs(vfs)->xAccess(RealVfs(vfs), name, flags, out);
}
int FullPathname(sqlite3_vfs* vfs, const char* name, int size, char* out) {
  return RealVfs(vfs)->xFullPathname(RealVfs(vfs), name, size, out);
}
void* DlOpen(sqlite3_vfs* vfs, const char* name) {
  return RealVfs(vfs)->xDlOpen(RealVfs(vfs), name);
}
void DlError(sqlite3_vfs* vfs, int size, char* out) {
  RealVfs(vfs)->xDlError(RealVfs(vfs), size, out);
}
void (*DlSym(sqlite3_vfs* vfs, void* handle, const char* symbol))(void) {
  return RealVfs(vfs)->xDlSym(RealVfs(vfs), handle, symbol);
}
void DlClose(sqlite3_vfs* vfs, void* handle) { RealVfs(vfs)->xDlClose(RealVfs(vfs), handle); }
int Randomness(sqlite3_vfs* vfs, int size, char* out) {
  return RealVfs(vfs)->xRandomness(RealVfs(vfs), size, out);
}
int Sleep(sqlite3_vfs* vfs, int micros) { return RealVfs(vfs)->xSleep(RealVfs(vfs), micros); }
int CurrentTime(sqlite3_vfs* vfs, double* out) {
  return RealVfs(vfs)->xCurrentTime(RealVfs(vfs), out);
}
int GetLastError(sqlite3_vfs* vfs, int size, char* out) {
  return RealVfs(vfs)->xGetLastError != nullptr
             ? RealVfs(vfs)->xGetLastError(RealVfs(vfs), size, out)
             : 0;
}
int CurrentTimeInt64(sqlite3_vfs* vfs, sqlite3_int64* out) {
  sqlite3_vfs* real = RealVfs(vfs);
  if (real->iVersion >= 2 && real->xCurrentTimeInt64 != nullptr) {
    return real->xCurrentTimeInt64(real, out);
  }
  double days = 0;
  const int rc = real->xCurrentTime(real, &days);
  *out = static_cast<sqlite3_int64>(days * 86400000.0);
  return rc;
}

}  // namespace

const char* WalWriteVfs() {
  static const char* const name = []() -> const char* {
    sqlite3_vfs* real = sqlite3_vfs_find(nullptr);
    if (real == nullptr) return nullptr;
    static sqlite3_vfs vfs;
    vfs.iVersion = 2;
    vfs.szOsFile = kWalFileBytes + real->szOsFile;
    vfs.mxPathname = real->mxPathname;
    vfs.zName = "rein-wal";
    vfs.pAppData = real;
    vfs.xOpen = Open;
    vfs.xDelete = Delete;
    vfs.xAccess = Access;
    vfs.xFullPathname = FullPathname;
    vfs.xDlOpen = DlOpen;
    vfs.xDlError = DlError;
    vfs.xDlSym = DlSym;
    vfs.xDlClose = DlClose;
    vfs.xRandomness = Randomness;
    vfs.xSleep = Sleep;
    vfs.xCurrentTime = CurrentTime;
    vfs.xGetLastError = GetLastError;
    vfs.xCurrentTimeInt64 = CurrentTimeInt64;
    if (sqlite3_vfs_register(&vfs, /*makeDflt=*/0) != SQLITE_OK) return nullptr;
    return vfs.zName;
  }();
  return name;
}

bool WalWriteVfsAttach(sqlite3* db) {
  sqlite3_file* db_file = nullptr;
  sqlite3_file* wal_file = nullptr;
  if (sqlite3_file_control(db, "main", SQLITE_FCNTL_FILE_POINTER, &db_file) != SQLITE_OK ||
      sqlite3_file_control(db, "main", SQLITE_FCNTL_JOURNAL_POINTER, &wal_file) != SQLITE_OK ||
      db_file == nullptr || wal_file == nullptr || db_file->pMethods != &kMethods ||
      wal_file->pMethods != &kMethods) {
    return false;
  }
  WalFile* d = Cast(db_file);
  WalFile* w = Cast(wal_file);
  if (d->wal || !w->wal) return false;  // not in WAL mode: the journal is a rollback journal
  if (d->partner != nullptr && d->partner != w) d->partner->partner = nullptr;
  d->partner = w;
  w->partner = d;
  return true;
}

WalWriteCounts WalWriteCountsForTesting() {
  WalWriteCounts counts;
  counts.requested = requested_writes.load(std::memory_order_relaxed);
  counts.written = file_writes.load(std::memory_order_relaxed);
  return counts;
}

}  // namespace rein
