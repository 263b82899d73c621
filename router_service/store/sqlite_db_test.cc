// Tests of SqliteDb: opening, the statement cache, bindings, transactions and error codes.
#include "router_service/store/sqlite_db.h"

#include <sqlite3.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rein {
namespace {

using ::testing::HasSubstr;

class SqliteDbTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* root = std::getenv("TEST_TMPDIR");
    std::string pattern = absl::StrCat(root != nullptr ? root : "/tmp", "/sqlite_db_XXXXXX");
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    path_ = dir_ + "/test.db";
    absl::StatusOr<std::unique_ptr<SqliteDb>> db = SqliteDb::Open(path_, /*create=*/true);
    ASSERT_TRUE(db.ok()) << db.status();
    db_ = std::move(*db);
    ASSERT_TRUE(db_->Exec("CREATE TABLE t (k TEXT PRIMARY KEY, n INTEGER, b BLOB)").ok());
  }
  void TearDown() override {
    db_.reset();
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

  // The number of rows in t.
  int64_t Count() {
    absl::StatusOr<SqliteDb::Statement> stmt = db_->Prepare("SELECT count(*) FROM t");
    EXPECT_TRUE(stmt.ok()) << stmt.status();
    if (!stmt.ok() || stmt->Step() != SQLITE_ROW) return -1;
    return stmt->ColumnInt(0);
  }

  absl::Status Insert(const std::string& key, int64_t n) {
    absl::StatusOr<SqliteDb::Statement> stmt =
        db_->Prepare("INSERT INTO t (k, n, b) VALUES (?, ?, ?)");
    if (!stmt.ok()) return stmt.status();
    stmt->BindText(1, key);
    stmt->BindInt(2, n);
    stmt->BindBlob(3, std::string("a\0b", 3));
    const int rc = stmt->Step();
    if (rc != SQLITE_DONE) return db_->Error(rc, "inserting");
    return absl::OkStatus();
  }

  std::string dir_;
  std::string path_;
  std::unique_ptr<SqliteDb> db_;
};

TEST_F(SqliteDbTest, BoundValuesReadBackThroughCachedStatements) {
  ASSERT_TRUE(Insert("one", 1).ok());
  ASSERT_TRUE(Insert("two", int64_t{1} << 40).ok());  // the same statement again, reset
  absl::StatusOr<SqliteDb::Statement> stmt = db_->Prepare("SELECT n, b FROM t WHERE k = ?");
  ASSERT_TRUE(stmt.ok()) << stmt.status();
  stmt->BindText(1, "two");
  ASSERT_EQ(stmt->Step(), SQLITE_ROW);
  EXPECT_EQ(stmt->ColumnInt(0), int64_t{1} << 40);
  EXPECT_EQ(stmt->ColumnBytes(1), std::string("a\0b", 3));
  EXPECT_EQ(stmt->Step(), SQLITE_DONE);
}

TEST_F(SqliteDbTest, TransactionDestroyedWithoutCommitRollsBack) {
  {
    absl::StatusOr<SqliteDb::Transaction> tx = SqliteDb::Transaction::Begin(db_.get(), true);
    ASSERT_TRUE(tx.ok()) << tx.status();
    ASSERT_TRUE(Insert("one", 1).ok());
    EXPECT_FALSE(db_->autocommit());
  }
  EXPECT_TRUE(db_->autocommit());
  EXPECT_EQ(Count(), 0);
}

TEST_F(SqliteDbTest, CommittedTransactionIsKept) {
  {
    absl::StatusOr<SqliteDb::Transaction> tx = SqliteDb::Transaction::Begin(db_.get(), true);
    ASSERT_TRUE(tx.ok()) << tx.status();
    ASSERT_TRUE(Insert("one", 1).ok());
    ASSERT_TRUE(tx->Commit().ok());
  }
  EXPECT_EQ(Count(), 1);
}

TEST_F(SqliteDbTest, ConstraintViolationIsReportedByStepWithItsExtendedCode) {
  ASSERT_TRUE(Insert("one", 1).ok());
  absl::Status again = Insert("one", 2);
  EXPECT_EQ(again.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(again.message(), HasSubstr(path_));
  EXPECT_THAT(again.message(), HasSubstr("inserting"));
}

TEST_F(SqliteDbTest, BadSqlIsAnErrorNamingTheStatement) {
  absl::StatusOr<SqliteDb::Statement> stmt = db_->Prepare("SELECT nothing FROM nowhere");
  EXPECT_EQ(stmt.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(stmt.status().message(), HasSubstr("SELECT nothing FROM nowhere"));
}

TEST_F(SqliteDbTest, SecondWriterWaitsThenIsUnavailable) {
  absl::StatusOr<std::unique_ptr<SqliteDb>> other = SqliteDb::Open(path_, /*create=*/false);
  ASSERT_TRUE(other.ok()) << other.status();
  ASSERT_TRUE((*other)->SetBusyTimeout(absl::Milliseconds(10)).ok());
  absl::StatusOr<SqliteDb::Transaction> tx = SqliteDb::Transaction::Begin(db_.get(), true);
  ASSERT_TRUE(tx.ok()) << tx.status();
  absl::StatusOr<SqliteDb::Transaction> blocked = SqliteDb::Transaction::Begin(other->get(), true);
  EXPECT_EQ(blocked.status().code(), absl::StatusCode::kUnavailable);
}

TEST_F(SqliteDbTest, ExecScriptRunsSeveralStatements) {
  ASSERT_TRUE(db_->ExecScript("INSERT INTO t (k) VALUES ('a'); INSERT INTO t (k) VALUES ('b');",
                              "two inserts")
                  .ok());
  EXPECT_EQ(Count(), 2);
  absl::Status bad = db_->ExecScript("INSERT INTO nowhere VALUES (1);", "a bad insert");
  EXPECT_THAT(bad.message(), HasSubstr("a bad insert"));
}

TEST(SqliteDbOpenTest, MissingDirectoryIsFailedPreconditionNamingPath) {
  const std::string path = "/no/such/dir/test.db";
  absl::StatusOr<std::unique_ptr<SqliteDb>> db = SqliteDb::Open(path, /*create=*/true);
  EXPECT_EQ(db.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(db.status().message(), HasSubstr(path));
}

TEST(SqliteDbOpenTest, CodesFollowAbseilGuidance) {
  EXPECT_EQ(CodeForSqlite(SQLITE_BUSY), absl::StatusCode::kUnavailable);
  EXPECT_EQ(CodeForSqlite(SQLITE_BUSY_SNAPSHOT), absl::StatusCode::kUnavailable);
  EXPECT_EQ(CodeForSqlite(SQLITE_IOERR_FSYNC), absl::StatusCode::kUnavailable);
  EXPECT_EQ(CodeForSqlite(SQLITE_CORRUPT), absl::StatusCode::kDataLoss);
  EXPECT_EQ(CodeForSqlite(SQLITE_NOTADB), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(CodeForSqlite(SQLITE_READONLY), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(CodeForSqlite(SQLITE_FULL), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(CodeForSqlite(SQLITE_CONSTRAINT_PRIMARYKEY), absl::StatusCode::kInternal);
}

}  // namespace
}  // namespace rein
