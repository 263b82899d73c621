// Tests of WalWriteVfs: one write per commit, and what another connection, the writer itself,
// and a process started after a kill read from the files.
#include "router_service/store/wal_write_vfs.h"

#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace rein {
namespace {

class WalWriteVfsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(WalWriteVfs(), nullptr);
    const char* root = std::getenv("TEST_TMPDIR");
    std::string pattern = absl::StrCat(root != nullptr ? root : "/tmp", "/wal_vfs_XXXXXX");
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    path_ = dir_ + "/test.db";
  }
  void TearDown() override {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

  // A connection to the test's database (created if missing) through `vfs` (nullptr: the
  // default VFS), `uri_query` appended as a URI's query ("psow=0").
  sqlite3* Connect(const char* vfs, const std::string& uri_query = "") {
    sqlite3* db = nullptr;
    const std::string name = absl::StrCat("file:", path_, uri_query.empty() ? "" : "?", uri_query);
    const int rc = sqlite3_open_v2(
        name.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_URI, vfs);
    EXPECT_EQ(rc, SQLITE_OK) << (db != nullptr ? sqlite3_errmsg(db) : "no connection");
    return db;
  }

  static void Exec(sqlite3* db, const std::string& sql) {
    char* error = nullptr;
    const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error);
    ASSERT_EQ(rc, SQLITE_OK) << sql << ": " << (error != nullptr ? error : "");
    sqlite3_free(error);
  }

  // The first column of the first row of `sql` as text ("" when no row).
  static std::string Query(sqlite3* db, const std::string& sql) {
    sqlite3_stmt* stmt = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr), SQLITE_OK)
        << sqlite3_errmsg(db);
    std::string value;
    if (stmt != nullptr && sqlite3_step(stmt) == SQLITE_ROW) {
      const unsigned char* text = sqlite3_column_text(stmt, 0);
      if (text != nullptr) value = reinterpret_cast<const char*>(text);
    }
    sqlite3_finalize(stmt);
    return value;
  }

  // Sets up WAL mode at the router's synchronous=NORMAL (no sync at a commit, so nothing but
  // the commit frame makes this VFS write) and the table the tests write.
  void CreateTable(sqlite3* db) {
    Exec(db, "PRAGMA journal_mode=WAL");
    Exec(db, "PRAGMA synchronous=NORMAL");
    Exec(db, "PRAGMA wal_autocheckpoint=0");
    Exec(db, "CREATE TABLE IF NOT EXISTS t (k INTEGER PRIMARY KEY, v BLOB, n TEXT)");
    Exec(db, "CREATE INDEX IF NOT EXISTS t_by_n ON t (n)");
    // The connection has written in WAL mode, so its WAL is open: link it (false for a
    // connection on SQLite's own VFS, which gathers nothing anyway).
    WalWriteVfsAttach(db);
  }

  // One transaction writing rows [first, first + count) of `bytes` each.
  static void Insert(sqlite3* db, int first, int count, int bytes) {
    Exec(db, absl::StrCat("WITH RECURSIVE r(i) AS (SELECT ", first, " UNION ALL SELECT i + 1 ",
                          "FROM r WHERE i < ", first + count - 1, ") INSERT INTO t SELECT i, ",
                          "randomblob(", bytes, "), 'n' || i FROM r"));
  }

  // `commits` transactions through `writer` of 1 to 7 rows of 300 bytes to 4 KB each; after each
  // returns, `reader` (SQLite's own VFS, which reads the WAL from the file) finds all its rows.
  // Returns the rows written.
  static int WriteAndReadBack(sqlite3* writer, sqlite3* reader, int commits) {
    int rows_written = 0;
    for (int i = 0; i < commits; ++i) {
      const int rows = 1 + i % 7;
      Insert(writer, i * 10, rows, 300 + 97 * (i % 40));
      rows_written += rows;
      EXPECT_EQ(Query(reader, absl::StrCat("SELECT count(*) FROM t WHERE k >= ", i * 10)),
                std::to_string(rows))
          << "commit " << i;
      EXPECT_EQ(Query(reader, absl::StrCat("SELECT n FROM t WHERE k = ", i * 10 + rows - 1)),
                absl::StrCat("n", i * 10 + rows - 1))
          << "commit " << i;
    }
    return rows_written;
  }

  // Forks a writer process: a connection to the test's database through WalWriteVfs() (WAL mode,
  // synchronous=NORMAL, table t, its WAL linked) on which it runs `body`, which reports to the
  // parent through the file descriptor it is given and is killed rather than returning. Returns
  // the child's pid and sets `*reports` to the read end of that pipe.
  pid_t StartWriter(int* reports, const std::function<void(sqlite3* db, int report_fd)>& body) {
    int fds[2];
    if (pipe(fds) != 0) return -1;
    const pid_t child = fork();
    if (child != 0) {
      close(fds[1]);
      *reports = fds[0];
      return child;
    }
    close(fds[0]);
    sqlite3* db = nullptr;
    if (sqlite3_open_v2(path_.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
                        WalWriteVfs()) != SQLITE_OK) {
      _exit(2);
    }
    const char* setup =
        "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
        "CREATE TABLE IF NOT EXISTS t (k INTEGER PRIMARY KEY, v BLOB, n TEXT);";
    if (sqlite3_exec(db, setup, nullptr, nullptr, nullptr) != SQLITE_OK) _exit(3);
    if (!WalWriteVfsAttach(db)) _exit(4);
    body(db, fds[1]);
    _exit(5);
  }

  // SIGKILLs a writer and waits for it; whether that signal is what ended it.
  static bool KillWriter(pid_t child) {
    int status = 0;
    return kill(child, SIGKILL) == 0 && waitpid(child, &status, 0) == child &&
           WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
  }

  std::string dir_;
  std::string path_;
};

TEST_F(WalWriteVfsTest, ACommitOfManyFramesIsOneWriteToTheWal) {
  sqlite3* db = Connect(WalWriteVfs());
  CreateTable(db);
  const WalWriteCounts before = WalWriteCountsForTesting();
  Insert(db, 1, 20, 1000);  // 20 KB of rows and their index entries: several pages
  const WalWriteCounts after = WalWriteCountsForTesting();
  // SQLite asked for a header and a page per frame...
  EXPECT_GE(after.requested - before.requested, 8u);
  // ...and the file got them in one write.
  EXPECT_EQ(after.written - before.written, 1u);
  sqlite3_close(db);
}

TEST_F(WalWriteVfsTest, EachCommitIsInTheFileWhenItReturns) {
  sqlite3* writer = Connect(WalWriteVfs());
  CreateTable(writer);
  // Another connection, through SQLite's own VFS: it reads the WAL from the file.
  sqlite3* reader = Connect(nullptr);
  WriteAndReadBack(writer, reader, 200);
  EXPECT_EQ(Query(reader, "PRAGMA integrity_check"), "ok");
  sqlite3_close(reader);
  sqlite3_close(writer);
}

TEST_F(WalWriteVfsTest, PagesSpilledInATransactionAreReadBackAndARollbackLeavesNoTrace) {
  sqlite3* writer = Connect(WalWriteVfs());
  CreateTable(writer);
  Insert(writer, 0, 10, 100);
  // A cache of a few pages: a large transaction writes pages to the WAL before its commit and
  // reads them back.
  Exec(writer, "PRAGMA cache_size=2");
  Exec(writer, "BEGIN");
  Insert(writer, 1000, 300, 2000);
  EXPECT_EQ(Query(writer, "SELECT count(*) FROM t"), "310");
  EXPECT_EQ(Query(writer, "SELECT n FROM t WHERE k = 1150"), "n1150");
  Exec(writer, "ROLLBACK");
  EXPECT_EQ(Query(writer, "SELECT count(*) FROM t"), "10");

  Exec(writer, "BEGIN");
  Insert(writer, 2000, 300, 2000);
  Exec(writer, "COMMIT");
  Insert(writer, 5000, 3, 100);
  sqlite3* reader = Connect(nullptr);
  EXPECT_EQ(Query(reader, "SELECT count(*) FROM t"), "313");
  EXPECT_EQ(Query(reader, "SELECT n FROM t WHERE k = 2299"), "n2299");
  EXPECT_EQ(Query(reader, "PRAGMA integrity_check"), "ok");
  sqlite3_close(reader);
  sqlite3_close(writer);
}

TEST_F(WalWriteVfsTest, CheckpointsAndARestartedWalKeepEveryCommit) {
  sqlite3* writer = Connect(WalWriteVfs());
  CreateTable(writer);
  sqlite3* reader = Connect(nullptr);
  for (int round = 0; round < 5; ++round) {
    for (int i = 0; i < 20; ++i) Insert(writer, round * 1000 + i * 10, 3, 500);
    // Copies the WAL into the database and starts the WAL over from its beginning.
    Exec(reader, "PRAGMA wal_checkpoint(RESTART)");
    ASSERT_EQ(Query(reader, "SELECT count(*) FROM t"), std::to_string((round + 1) * 60));
  }
  EXPECT_EQ(Query(reader, "PRAGMA integrity_check"), "ok");
  sqlite3_close(reader);
  sqlite3_close(writer);
}

// synchronous=FULL on a disk declared without powersafe overwrite: SQLite pads each commit with
// copies of its commit frame up to a sector boundary and syncs in the middle of the last copy.
TEST_F(WalWriteVfsTest, CommitsPaddedToASectorAreInTheFileWhole) {
  sqlite3* writer = Connect(WalWriteVfs(), "psow=0");
  CreateTable(writer);
  Exec(writer, "PRAGMA synchronous=FULL");
  sqlite3* reader = Connect(nullptr);
  // Commits of one to three frames, 1,200 of them: the padded ends of the commits fall on every
  // place a sector boundary can fall in a frame (a frame of 4,120 bytes moves 24 bytes against
  // the 4,096-byte sectors), including inside a padding frame's 24-byte header, where SQLite
  // splits the header's write around its sync.
  for (int i = 0; i < 1200; ++i) {
    Insert(writer, i, 1, 16 + (i % 3) * 1500);
    ASSERT_EQ(Query(reader, absl::StrCat("SELECT n FROM t WHERE k = ", i)), absl::StrCat("n", i))
        << "commit " << i;
  }
  EXPECT_EQ(Query(reader, "PRAGMA integrity_check"), "ok");
  EXPECT_EQ(Query(reader, "SELECT count(*) FROM t"), "1200");
  sqlite3_close(reader);
  sqlite3_close(writer);
}

// After a transaction whose pages spilled to the WAL rolls back, another connection writes its
// own frames where those were; nothing of the rolled-back transaction may land on them later.
TEST_F(WalWriteVfsTest, ARolledBackSpillNeverOverwritesAnotherConnectionsCommit) {
  sqlite3* first = Connect(WalWriteVfs());
  CreateTable(first);
  sqlite3* second = Connect(WalWriteVfs());
  CreateTable(second);
  Exec(first, "PRAGMA cache_size=2");
  Exec(first, "BEGIN");
  Insert(first, 1000, 40, 2000);  // spills a few pages to the WAL
  Exec(first, "ROLLBACK");
  Insert(second, 5000, 100, 2000);  // frames at and past the offsets the rolled-back ones had
  // The first connection's next operations on its WAL (a read, then its close).
  EXPECT_EQ(Query(first, "SELECT count(*) FROM t WHERE k >= 5000"), "100");
  sqlite3_close(first);
  sqlite3* reader = Connect(nullptr);
  EXPECT_EQ(Query(reader, "PRAGMA integrity_check"), "ok");
  EXPECT_EQ(Query(reader, "SELECT count(*) FROM t"), "100");
  EXPECT_EQ(Query(reader, "SELECT sum(length(v)) FROM t"), "200000");
  EXPECT_EQ(Query(reader, "SELECT n FROM t WHERE k = 5099"), "n5099");
  sqlite3_close(reader);
  sqlite3_close(second);
}

// A connection whose WAL is not linked (WalWriteVfsAttach not called) writes straight through.
TEST_F(WalWriteVfsTest, AWalNotAttachedIsWrittenAsItComes) {
  sqlite3* db = Connect(WalWriteVfs());
  Exec(db, "PRAGMA journal_mode=WAL");
  Exec(db, "PRAGMA synchronous=NORMAL");
  Exec(db, "CREATE TABLE t (k INTEGER PRIMARY KEY, v BLOB, n TEXT)");
  const WalWriteCounts before = WalWriteCountsForTesting();
  Insert(db, 1, 20, 1000);
  const WalWriteCounts after = WalWriteCountsForTesting();
  EXPECT_GE(after.requested - before.requested, 8u);
  EXPECT_EQ(after.written - before.written, after.requested - before.requested);
  sqlite3_close(db);
}

// A writer process killed at an arbitrary point: every commit it reported as returned is in
// the database that a new process opens, and the database is whole.
TEST_F(WalWriteVfsTest, AKilledWriterLosesNoCommitThatReturned) {
  for (int attempt = 0; attempt < 3; ++attempt) {
    const int first = attempt * 1000000;
    int reports = -1;
    const pid_t child = StartWriter(&reports, [first](sqlite3* db, int report_fd) {
      for (int k = first;; ++k) {
        const std::string sql = absl::StrCat("INSERT INTO t VALUES (", k, ", randomblob(",
                                             200 + k % 3000, "), 'n", k, "')");
        if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK) _exit(6);
        if (write(report_fd, &k, sizeof(k)) != sizeof(k)) _exit(7);
      }
    });
    ASSERT_GT(child, 0);
    int last = -1, k;
    int reported = 0;
    // Let it commit a few hundred transactions, then kill it while it writes.
    while (reported < 300 + 137 * attempt && read(reports, &k, sizeof(k)) == sizeof(k)) {
      last = k;
      ++reported;
    }
    ASSERT_TRUE(KillWriter(child)) << "the writer ended on its own";
    while (read(reports, &k, sizeof(k)) == sizeof(k)) last = k;
    close(reports);
    ASSERT_GE(last, 0);

    sqlite3* db = Connect(nullptr);
    EXPECT_EQ(Query(db, "PRAGMA integrity_check"), "ok");
    EXPECT_EQ(
        Query(db, absl::StrCat("SELECT count(*) FROM t WHERE k <= ", last, " AND k >= ", first)),
        std::to_string(last - first + 1));
    EXPECT_EQ(Query(db, absl::StrCat("SELECT n FROM t WHERE k = ", last)), absl::StrCat("n", last));
    sqlite3_close(db);
  }
}

// A transaction whose pages spill to the WAL and are then written again: at its commit SQLite
// rewrites the checksums of its frames in place. Killed the moment its COMMIT returned, the
// writer must find the transaction whole when the file is opened again.
TEST_F(WalWriteVfsTest, ACommitWhoseChecksumsWereRewrittenSurvivesAKill) {
  int reports = -1;
  const pid_t child = StartWriter(&reports, [](sqlite3* db, int report_fd) {
    const char* transaction =
        "INSERT INTO t VALUES (0, x'00', 'n0');"
        "PRAGMA cache_size=2; BEGIN;"
        "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r WHERE i < 300)"
        "  INSERT INTO t SELECT i, randomblob(1500), 'n' || i FROM r;"
        "UPDATE t SET n = 'updated' || k WHERE k <= 300;"
        "COMMIT;";
    if (sqlite3_exec(db, transaction, nullptr, nullptr, nullptr) != SQLITE_OK) _exit(6);
    const char committed = 'c';
    if (write(report_fd, &committed, 1) != 1) _exit(7);
    pause();  // killed here, with nothing more done on the connection
  });
  ASSERT_GT(child, 0);
  char committed = 0;
  ASSERT_EQ(read(reports, &committed, 1), 1) << "the writer failed before its commit";
  close(reports);
  ASSERT_TRUE(KillWriter(child));
  sqlite3* db = Connect(nullptr);
  EXPECT_EQ(Query(db, "PRAGMA integrity_check"), "ok");
  EXPECT_EQ(Query(db, "SELECT count(*) FROM t"), "301");
  EXPECT_EQ(Query(db, "SELECT n FROM t WHERE k = 300"), "updated300");
  sqlite3_close(db);
}

TEST_F(WalWriteVfsTest, AFileThatCannotBeOpenedIsCantOpen) {
  sqlite3* db = nullptr;
  const std::string missing = dir_ + "/no/such/dir/test.db";
  EXPECT_EQ(sqlite3_open_v2(missing.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
                            WalWriteVfs()),
            SQLITE_CANTOPEN);
  sqlite3_close(db);
}

}  // namespace
}  // namespace rein
