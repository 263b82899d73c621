// Tests of the PostgreSQL session layer: parameters, URL checks, error codes, and the pool and
// transactions against a private PostgreSQL server.
#include "router_service/store/pg_session.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "router_service/store/testing/postgres_server.h"

namespace rein {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(PgParamsTest, IntsTravelBigEndianWithTheirType) {
  PgParams params;
  params.Int(0x0102030405060708).Text("run-1").Bytes(std::string("\0\1", 2)).Null(kTextOid);
  ASSERT_EQ(params.size(), 4);
  EXPECT_EQ(params.types()[0], kInt8Oid);
  EXPECT_EQ(params.types()[1], kTextOid);
  EXPECT_EQ(params.types()[2], kByteaOid);
  std::vector<const char*> values;
  std::vector<int> lengths;
  std::vector<int> formats;
  params.Arrays(&values, &lengths, &formats);
  EXPECT_EQ(std::string(values[0], lengths[0]), "\x01\x02\x03\x04\x05\x06\x07\x08");
  EXPECT_EQ(std::string(values[2], lengths[2]), std::string("\0\1", 2));
  EXPECT_EQ(values[3], nullptr);
  EXPECT_THAT(formats, ::testing::Each(1));
}

TEST(RedactPostgresUrlTest, HidesOnlyThePassword) {
  EXPECT_EQ(RedactPostgresUrl("postgres://rein:s3cret@db:5432/runs"),
            "postgres://rein:****@db:5432/runs");
  EXPECT_EQ(RedactPostgresUrl("postgres://rein@db/runs"), "postgres://rein@db/runs");
  EXPECT_EQ(RedactPostgresUrl("postgresql://db:5432/runs?user=a@b"),
            "postgresql://db:5432/runs?user=a@b");
}

TEST(CodeForSqlStateTest, CodesFollowAbseilGuidance) {
  EXPECT_EQ(CodeForSqlState("40001"), absl::StatusCode::kAborted);
  EXPECT_EQ(CodeForSqlState("23505"), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(CodeForSqlState("08006"), absl::StatusCode::kUnavailable);
  EXPECT_EQ(CodeForSqlState("28P01"), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(CodeForSqlState("22021"), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CodeForSqlState("42P01"), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(CodeForSqlState("XX000"), absl::StatusCode::kInternal);
}

TEST(PgPoolCreateTest, BadUrlOrOptionsAreInvalidArgumentWithoutPassword) {
  EXPECT_EQ(PgPool::Create("mysql://db/runs", {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  absl::StatusOr<std::unique_ptr<PgPool>> bad_port =
      PgPool::Create("postgres://rein:s3cret@db:99999/runs", {});
  EXPECT_EQ(bad_port.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad_port.status().message(), HasSubstr("port \"99999\""));
  EXPECT_THAT(bad_port.status().message(), Not(HasSubstr("s3cret")));
  PgPool::Options none;
  none.max_connections = 0;
  EXPECT_EQ(PgPool::Create("postgres://db/runs", none).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(PgPoolCreateTest, TargetNamesHostPortAndDatabase) {
  absl::StatusOr<std::unique_ptr<PgPool>> pool =
      PgPool::Create("postgresql://rein:s3cret@db.example:6543/runs", {});
  ASSERT_TRUE(pool.ok()) << pool.status();
  EXPECT_EQ((*pool)->target(), "db.example:6543/runs");
}

class PgSessionTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    absl::StatusOr<std::unique_ptr<PostgresServer>> started = PostgresServer::Start();
    ASSERT_TRUE(started.ok()) << started.status();
    server_ = started->release();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }

  void SetUp() override {
    ASSERT_NE(server_, nullptr);
    absl::StatusOr<std::string> url = server_->CreateDatabase();
    ASSERT_TRUE(url.ok()) << url.status();
    url_ = *url;
    PgPool::Options options;
    options.max_connections = 1;
    absl::StatusOr<std::unique_ptr<PgPool>> pool = PgPool::Create(url_, options);
    ASSERT_TRUE(pool.ok()) << pool.status();
    pool_ = std::move(*pool);
    std::unique_ptr<PgTransaction> tx = Begin(/*read_only=*/false);
    ASSERT_NE(tx, nullptr);
    ASSERT_TRUE(tx->Run("CREATE TABLE t (k TEXT PRIMARY KEY, n BIGINT)", "creating t").ok());
    ASSERT_TRUE(tx->Commit().ok());
  }
  void TearDown() override {
    pool_.reset();
    if (server_ != nullptr && !url_.empty()) server_->DropDatabase(url_).IgnoreError();
  }

  std::unique_ptr<PgTransaction> Begin(bool read_only) {
    absl::StatusOr<std::unique_ptr<PgTransaction>> tx =
        PgTransaction::Begin(pool_.get(), read_only);
    EXPECT_TRUE(tx.ok()) << tx.status();
    return tx.ok() ? std::move(*tx) : nullptr;
  }

  int64_t Count() {
    std::unique_ptr<PgTransaction> tx = Begin(/*read_only=*/true);
    if (tx == nullptr) return -1;
    absl::StatusOr<PgResult> result = tx->Exec("SELECT count(*) FROM t", PgParams(), "counting");
    if (!result.ok() || !PgCheckColumns(result->get(), {kInt8Oid}, "t", "counting").ok()) {
      return -1;
    }
    return PgInt(result->get(), 0, 0);
  }

  static PostgresServer* server_;
  std::string url_;
  std::unique_ptr<PgPool> pool_;
};

PostgresServer* PgSessionTest::server_ = nullptr;

TEST_F(PgSessionTest, BinaryParametersAndResultsRoundTrip) {
  std::unique_ptr<PgTransaction> tx = Begin(/*read_only=*/false);
  ASSERT_NE(tx, nullptr);
  ASSERT_TRUE(tx->Exec("INSERT INTO t (k, n) VALUES ($1, $2)",
                       PgParams().Text("big").Int(-(int64_t{1} << 40)), "inserting")
                  .ok());
  absl::StatusOr<PgResult> result =
      tx->Exec("SELECT k, n FROM t WHERE k = $1", PgParams().Text("big"), "reading");
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_TRUE(PgCheckColumns(result->get(), {kTextOid, kInt8Oid}, "t", "reading").ok());
  EXPECT_EQ(PgBytes(result->get(), 0, 0), "big");
  EXPECT_EQ(PgInt(result->get(), 0, 1), -(int64_t{1} << 40));
  EXPECT_EQ(PgCheckColumns(result->get(), {kInt8Oid}, "t", "reading").code(),
            absl::StatusCode::kInternal);
  EXPECT_TRUE(tx->Commit().ok());
}

TEST_F(PgSessionTest, TransactionDestroyedWithoutCommitRollsBackAndFreesTheConnection) {
  {
    std::unique_ptr<PgTransaction> tx = Begin(/*read_only=*/false);
    ASSERT_NE(tx, nullptr);
    ASSERT_TRUE(
        tx->Exec("INSERT INTO t (k, n) VALUES ($1, 1)", PgParams().Text("gone"), "inserting").ok());
  }
  // The pool holds one connection: it came back, outside a transaction.
  EXPECT_EQ(Count(), 0);
}

TEST_F(PgSessionTest, UniqueViolationIsAlreadyExistsNamingTarget) {
  std::unique_ptr<PgTransaction> tx = Begin(/*read_only=*/false);
  ASSERT_NE(tx, nullptr);
  const std::string sql = "INSERT INTO t (k, n) VALUES ($1, 1)";
  ASSERT_TRUE(tx->Exec(sql, PgParams().Text("one"), "inserting").ok());
  absl::StatusOr<PgResult> again = tx->Exec(sql, PgParams().Text("one"), "inserting again");
  EXPECT_EQ(again.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(again.status().message(), HasSubstr(pool_->target()));
  EXPECT_THAT(again.status().message(), HasSubstr("inserting again"));
  EXPECT_THAT(again.status().message(), HasSubstr("SQLSTATE 23505"));
}

TEST_F(PgSessionTest, BytesArrayArrivesInOrderWithEveryByte) {
  std::unique_ptr<PgTransaction> tx = Begin(/*read_only=*/true);
  ASSERT_NE(tx, nullptr);
  const std::vector<std::string> values = {std::string("a\0b", 3), "", std::string(70000, 'x'),
                                           "\xff\x01"};
  absl::StatusOr<PgResult> result =
      tx->Exec("SELECT ord, body FROM unnest($1::bytea[]) WITH ORDINALITY AS b (body, ord)",
               PgParams().BytesArray(values), "unnesting");
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_TRUE(PgCheckColumns(result->get(), {kInt8Oid, kByteaOid}, "t", "unnesting").ok());
  ASSERT_EQ(PQntuples(result->get()), 4);
  for (int row = 0; row < 4; ++row) {
    EXPECT_EQ(PgInt(result->get(), row, 0), row + 1);
    EXPECT_EQ(PgBytes(result->get(), row, 1), values[static_cast<size_t>(row)]);
  }
  // No values: an empty array, no rows.
  result = tx->Exec("SELECT count(*) FROM unnest($1::bytea[])", PgParams().BytesArray({}),
                    "unnesting none");
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_TRUE(PgCheckColumns(result->get(), {kInt8Oid}, "t", "unnesting none").ok());
  EXPECT_EQ(PgInt(result->get(), 0, 0), 0);
}

TEST_F(PgSessionTest, PreparedStatementStaysWithTheConnectionAndIsPreparedAgainWhenLost) {
  const std::string sql = "INSERT INTO t (k, n) VALUES ($1, $2) RETURNING n";
  // The session's statement named "ins": how many, and when the last was prepared.
  auto prepared = [this]() -> std::string {
    std::unique_ptr<PgTransaction> tx = Begin(/*read_only=*/true);
    if (tx == nullptr) return "no transaction";
    absl::StatusOr<PgResult> result = tx->Exec(
        "SELECT count(*)::text || ' ' || coalesce(max(prepare_time)::text, '-') "
        "FROM pg_prepared_statements WHERE name = 'ins'",
        PgParams(), "listing");
    if (!result.ok()) return std::string(result.status().message());
    return PgBytes(result->get(), 0, 0);
  };
  std::string first;
  {
    absl::StatusOr<std::unique_ptr<PgTransaction>> tx = PgTransaction::Autocommit(pool_.get());
    ASSERT_TRUE(tx.ok()) << tx.status();
    for (int i = 0; i < 3; ++i) {
      absl::StatusOr<PgResult> result = (*tx)->ExecPrepared(
          "ins", sql, PgParams().Text(absl::StrCat("k", i)).Int(i), "inserting");
      ASSERT_TRUE(result.ok()) << result.status();
      EXPECT_EQ(PgInt(result->get(), 0, 0), i);
      if (i == 0) {
        tx->reset();  // the pool's one connection, for `prepared`
        first = prepared();
        ASSERT_EQ(first.substr(0, 2), "1 ") << first;
        tx = PgTransaction::Autocommit(pool_.get());
        ASSERT_TRUE(tx.ok()) << tx.status();
      }
    }
  }
  // Still the statement the first call prepared.
  EXPECT_EQ(prepared(), first);
  EXPECT_EQ(Count(), 3);

  // Lost behind the pool's back (as a pooler in between would): outside a transaction the call
  // prepares it again and succeeds.
  {
    absl::StatusOr<std::unique_ptr<PgTransaction>> tx = PgTransaction::Autocommit(pool_.get());
    ASSERT_TRUE(tx.ok()) << tx.status();
    ASSERT_TRUE((*tx)->Run("DEALLOCATE ALL", "deallocating").ok());
    absl::StatusOr<PgResult> result =
        (*tx)->ExecPrepared("ins", sql, PgParams().Text("k3").Int(3), "inserting");
    ASSERT_TRUE(result.ok()) << result.status();
  }
  EXPECT_EQ(Count(), 4);

  // Inside a transaction the loss aborts it, names the statement's purpose, and the next use
  // prepares it again.
  {
    std::unique_ptr<PgTransaction> tx = Begin(/*read_only=*/false);
    ASSERT_NE(tx, nullptr);
    ASSERT_TRUE(tx->Run("DEALLOCATE ALL", "deallocating").ok());
    absl::StatusOr<PgResult> result =
        tx->ExecPrepared("ins", sql, PgParams().Text("k4").Int(4), "inserting in a transaction");
    EXPECT_FALSE(result.ok());
    EXPECT_THAT(result.status().message(), HasSubstr("inserting in a transaction"));
  }
  {
    std::unique_ptr<PgTransaction> tx = Begin(/*read_only=*/false);
    ASSERT_NE(tx, nullptr);
    absl::StatusOr<PgResult> result =
        tx->ExecPrepared("ins", sql, PgParams().Text("k5").Int(5), "inserting");
    ASSERT_TRUE(result.ok()) << result.status();
    ASSERT_TRUE(tx->Commit().ok());
  }
  EXPECT_EQ(Count(), 5);
  const std::string last = prepared();
  EXPECT_EQ(last.substr(0, 2), "1 ") << last;
  EXPECT_NE(last, first);
}

TEST_F(PgSessionTest, AutocommitReplacesAConnectionTheServerClosedWhileIdle) {
  auto backend = [this]() -> int64_t {
    absl::StatusOr<std::unique_ptr<PgTransaction>> tx = PgTransaction::Autocommit(pool_.get());
    if (!tx.ok()) return -1;
    absl::StatusOr<PgResult> result =
        (*tx)->Exec("SELECT pg_backend_pid()::int8", PgParams(), "asking the backend");
    if (!result.ok()) return -2;
    return PgInt(result->get(), 0, 0);
  };
  const int64_t before = backend();
  ASSERT_GT(before, 0);
  // Another session ends the pool's idle one, and waits until it is gone.
  absl::StatusOr<PGconn*> other = pool_->Connect();
  ASSERT_TRUE(other.ok()) << other.status();
  PgResult killed(
      PQexec(*other, absl::StrCat("SELECT pg_terminate_backend(", before, ", 5000)").c_str()));
  ASSERT_EQ(PQresultStatus(killed.get()), PGRES_TUPLES_OK) << PQerrorMessage(*other);
  PQfinish(*other);
  const int64_t after = backend();
  EXPECT_GT(after, 0);
  EXPECT_NE(after, before);
}

TEST_F(PgSessionTest, WriteInReadOnlyTransactionIsFailedPrecondition) {
  std::unique_ptr<PgTransaction> tx = Begin(/*read_only=*/true);
  ASSERT_NE(tx, nullptr);
  EXPECT_EQ(
      tx->Exec("INSERT INTO t (k, n) VALUES ('x', 1)", PgParams(), "inserting").status().code(),
      absl::StatusCode::kFailedPrecondition);
}

TEST_F(PgSessionTest, MissingDatabaseIsFailedPreconditionNamingIt) {
  absl::StatusOr<std::unique_ptr<PgPool>> pool =
      PgPool::Create(server_->Url("no_such_database"), {});
  ASSERT_TRUE(pool.ok()) << pool.status();
  absl::StatusOr<PGconn*> conn = (*pool)->Acquire();
  EXPECT_EQ(conn.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(conn.status().message(), HasSubstr("no_such_database"));
}

}  // namespace
}  // namespace rein
