// Tests of PostgresRunStore against a private PostgreSQL server: the store conformance suites
// plus what is particular to PostgreSQL.
#include "router_service/store/postgres_run_store.h"

#include <netinet/in.h>
#include <postgresql/libpq-fe.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "common/status_reason.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rein/v1/types.pb.h"
#include "router_service/store/run_store_conformance.h"
#include "router_service/store/testing/postgres_server.h"
#include "router_service/store/testing/run_store_values.h"

namespace rein {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// The server every test of this binary uses; started once, stopped at the end.
PostgresServer* server = nullptr;

class PostgresEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<PostgresServer>> started = PostgresServer::Start();
    ASSERT_TRUE(started.ok()) << started.status();
    server = started->release();
  }
  void TearDown() override {
    delete server;
    server = nullptr;
  }
};

::testing::Environment* const environment =
    ::testing::AddGlobalTestEnvironment(new PostgresEnvironment);

// `text` as an SQL string literal (standard_conforming_strings is on).
std::string Quoted(const std::string& text) {
  return absl::StrCat("'", absl::StrReplaceAll(text, {{"'", "''"}}), "'");
}

// Runs `sql` in the database of `url` as the superuser, outside the store.
absl::Status Corrupt(const std::string& url, const std::string& sql) {
  if (server == nullptr) return absl::FailedPreconditionError("no PostgreSQL server");
  return server->Query(url.substr(url.rfind('/') + 1), sql).status();
}

RunStoreFactory PostgresFactory() {
  RunStoreFactory factory;
  factory.name = "Postgres";
  factory.new_location = []() -> absl::StatusOr<std::string> {
    if (server == nullptr) return absl::FailedPreconditionError("no PostgreSQL server");
    return server->CreateDatabase();
  };
  factory.open = [](const std::string& url) -> absl::StatusOr<std::unique_ptr<RouterStore>> {
    absl::StatusOr<std::unique_ptr<PostgresRunStore>> store = PostgresRunStore::Open(url);
    if (!store.ok()) return store.status();
    return std::unique_ptr<RouterStore>(std::move(*store));
  };
  factory.remove = [](const std::string& url) {
    if (server != nullptr) server->DropDatabase(url).IgnoreError();
  };
  factory.corrupt_run = [](const std::string& url, const std::string& run_id) {
    return Corrupt(url,
                   "UPDATE runs SET run = '\\xffffffff'::bytea WHERE run_id = " + Quoted(run_id));
  };
  factory.corrupt_event = [](const std::string& url, const std::string& run_id, int64_t seq) {
    return Corrupt(url, absl::StrCat("UPDATE events SET body = '\\xffffffff'::bytea "
                                     "WHERE run_id = ",
                                     Quoted(run_id), " AND seq = ", seq));
  };
  return factory;
}

INSTANTIATE_TEST_SUITE_P(Postgres, RunStoreConformanceTest, ::testing::Values(PostgresFactory()),
                         RunStoreFactoryName);
INSTANTIATE_TEST_SUITE_P(Postgres, FleetStoreConformanceTest, ::testing::Values(PostgresFactory()),
                         RunStoreFactoryName);
INSTANTIATE_TEST_SUITE_P(Postgres, CommitFeedConformanceTest, ::testing::Values(PostgresFactory()),
                         RunStoreFactoryName);
INSTANTIATE_TEST_SUITE_P(Postgres, NotificationOutboxConformanceTest,
                         ::testing::Values(PostgresFactory()), RunStoreFactoryName);

using rein::testing::Event;
using rein::testing::MakeRun;
using rein::testing::NextState;

class PostgresRunStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(server, nullptr);
    absl::StatusOr<std::string> url = server->CreateDatabase();
    ASSERT_TRUE(url.ok()) << url.status();
    url_ = *url;
    database_ = url_.substr(url_.rfind('/') + 1);
  }
  void TearDown() override {
    if (!url_.empty()) server->DropDatabase(url_).IgnoreError();
  }

  std::unique_ptr<PostgresRunStore> OpenOrDie(const PostgresRunStore::Options& options = {}) {
    absl::StatusOr<std::unique_ptr<PostgresRunStore>> store = PostgresRunStore::Open(url_, options);
    EXPECT_TRUE(store.ok()) << store.status();
    return store.ok() ? std::move(*store) : nullptr;
  }

  std::string Query(const std::string& sql) {
    absl::StatusOr<std::string> value = server->Query(database_, sql);
    EXPECT_TRUE(value.ok()) << value.status();
    return value.ok() ? *value : "";
  }

  // A connection of its own, outside the store, in a transaction that has run `sql` (taking a
  // lock); the test ends it (ROLLBACK) and closes it. nullptr when that failed.
  PGconn* Hold(const std::string& sql) {
    PGconn* conn = PQconnectdb(url_.c_str());
    PGresult* begun = PQexec(conn, ("BEGIN; " + sql).c_str());
    const ExecStatusType status = PQresultStatus(begun);
    PQclear(begun);
    if (PQstatus(conn) != CONNECTION_OK ||
        (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK)) {
      ADD_FAILURE() << sql << ": " << PQerrorMessage(conn);
      PQfinish(conn);
      return nullptr;
    }
    return conn;
  }

  // Undoes step 4 (namespaces): how version 2 kept runs.
  void BackToLayout2() {
    Query("DROP INDEX runs_by_request");
    Query("DROP INDEX runs_by_namespace");
    Query("ALTER TABLE runs DROP COLUMN namespace");
    Query("ALTER TABLE runs ADD CONSTRAINT runs_request_id_key UNIQUE (request_id)");
  }

  std::string url_;
  std::string database_;
};

// A port nothing listens on: bound on 127.0.0.1 and closed a moment ago.
int ClosedPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  int port = 0;
  if (fd >= 0 && bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  if (fd >= 0) close(fd);
  return port;
}

TEST(PostgresRunStoreOpenTest, ClosedPortIsUnavailableNamingHostAndPort) {
  const int port = ClosedPort();
  ASSERT_NE(port, 0);
  absl::StatusOr<std::unique_ptr<PostgresRunStore>> store =
      PostgresRunStore::Open(absl::StrCat("postgresql://rein:s3cret@127.0.0.1:", port, "/runs"));
  EXPECT_EQ(store.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(store.status().message(), HasSubstr(absl::StrCat("127.0.0.1:", port)));
  EXPECT_THAT(store.status().message(), Not(HasSubstr("s3cret")));
}

TEST(PostgresRunStoreOpenTest, BadUrlIsInvalidArgument) {
  for (const std::string url :
       {"", "mysql://localhost/runs", "localhost:5432", "postgres://[::1/runs",
        "postgres://localhost:notaport/runs", "postgres://localhost:70000/runs",
        "postgresql://localhost/runs?no_such_option=1"}) {
    absl::StatusOr<std::unique_ptr<PostgresRunStore>> store = PostgresRunStore::Open(url);
    EXPECT_EQ(store.status().code(), absl::StatusCode::kInvalidArgument) << url;
    EXPECT_THAT(store.status().message(), HasSubstr("URL")) << url;
  }
}

TEST(PostgresRunStoreOpenTest, BadUrlMessageHidesPassword) {
  absl::StatusOr<std::unique_ptr<PostgresRunStore>> store =
      PostgresRunStore::Open("postgres://rein:s3cret@[::1/runs");
  EXPECT_EQ(store.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(store.status().message(), Not(HasSubstr("s3cret")));
}

TEST(PostgresRunStoreOpenTest, ZeroConnectionsIsInvalidArgument) {
  PostgresRunStore::Options options;
  options.max_connections = 0;
  EXPECT_EQ(PostgresRunStore::Open("postgres://localhost/runs", options).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(PostgresRunStoreTest, MissingDatabaseIsFailedPreconditionNamingIt) {
  absl::StatusOr<std::unique_ptr<PostgresRunStore>> store =
      PostgresRunStore::Open(server->Url("no_such_database"));
  EXPECT_EQ(store.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(store.status().message(), HasSubstr("no_such_database"));
}

TEST_F(PostgresRunStoreTest, OpenRecordsSchemaVersionAndKeepsRunOrderBytewise) {
  ASSERT_NE(OpenOrDie(), nullptr);
  EXPECT_EQ(Query("SELECT version FROM schema_version"),
            std::to_string(PostgresRunStore::kSchemaVersion));
  // Open again on existing tables.
  ASSERT_NE(OpenOrDie(), nullptr);
  EXPECT_EQ(Query("SELECT count(*) FROM schema_version"), "1");
  EXPECT_EQ(Query("SELECT collation_name FROM information_schema.columns "
                  "WHERE table_name = 'runs' AND column_name = 'run_id'"),
            "C");
}

TEST_F(PostgresRunStoreTest, OtherSchemaVersionIsFailedPrecondition) {
  ASSERT_NE(OpenOrDie(), nullptr);
  const std::string newer = std::to_string(PostgresRunStore::kSchemaVersion + 1);
  Query("UPDATE schema_version SET version = " + newer);
  absl::StatusOr<std::unique_ptr<PostgresRunStore>> store = PostgresRunStore::Open(url_);
  EXPECT_EQ(store.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(store.status().message(), HasSubstr("schema version " + newer));
}

TEST_F(PostgresRunStoreTest, VersionTwoLayoutMovesIntoTheDefaultNamespace) {
  {
    std::unique_ptr<PostgresRunStore> store = OpenOrDie();
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->CreateRun(MakeRun("run-old", "request-1"), {}).ok());
  }
  BackToLayout2();
  Query("UPDATE schema_version SET version = 2");
  std::unique_ptr<PostgresRunStore> store = OpenOrDie();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(Query("SELECT version FROM schema_version"),
            std::to_string(PostgresRunStore::kSchemaVersion));
  EXPECT_EQ(Query("SELECT namespace FROM runs WHERE run_id = 'run-old'"), "default");
  const absl::Status moved = rein::testing::CheckRequestIdMovedToDefault(*store);
  EXPECT_TRUE(moved.ok()) << moved;
}

TEST_F(PostgresRunStoreTest, VersionOneLayoutIsMigratedAndItsRunsAreClaimed) {
  {
    std::unique_ptr<PostgresRunStore> store = OpenOrDie();
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->CreateRun(MakeRun("run-old"), {Event("x")}).ok());
  }
  // Back to the layout before leases.
  Query("DROP TABLE routers");
  Query("ALTER TABLE runs DROP COLUMN owner, DROP COLUMN lease_epoch");
  BackToLayout2();
  Query("UPDATE schema_version SET version = 1");
  std::unique_ptr<PostgresRunStore> store = OpenOrDie();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(Query("SELECT version FROM schema_version"),
            std::to_string(PostgresRunStore::kSchemaVersion));
  ASSERT_TRUE(store->JoinFleet("router-a", absl::Seconds(10)).ok());
  absl::StatusOr<std::vector<rein::v1::Run>> claimed = store->ClaimRuns(false);
  ASSERT_TRUE(claimed.ok()) << claimed.status();
  ASSERT_EQ(claimed->size(), 1u);
  EXPECT_EQ((*claimed)[0].owner(), "router-a");
  EXPECT_EQ((*claimed)[0].lease_epoch(), 1);
}

// A run owned by `owner` at epoch 1, created through `store`.
rein::v1::Run OwnedRun(const std::string& run_id, const std::string& owner) {
  rein::v1::Run run = MakeRun(run_id);
  run.set_owner(owner);
  return run;
}

TEST_F(PostgresRunStoreTest, SameRouterIdTwiceIsRefusedWhileItsLeaseLives) {
  std::unique_ptr<PostgresRunStore> a = OpenOrDie();
  std::unique_ptr<PostgresRunStore> b = OpenOrDie();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  ASSERT_TRUE(a->JoinFleet("router-a", absl::Seconds(30)).ok());
  absl::Status second = b->JoinFleet("router-a", absl::Seconds(30));
  EXPECT_EQ(second.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(second.message(), HasSubstr("router_id router-a"));
  EXPECT_EQ(b->JoinFleet("bad id", absl::Seconds(1)).code(), absl::StatusCode::kInvalidArgument);
  // Once a's lease has expired, the id may be taken again; a can then no longer renew.
  Query("UPDATE routers SET heartbeat = heartbeat - interval '1 minute'");
  ASSERT_TRUE(b->JoinFleet("router-a", absl::Seconds(30)).ok());
  EXPECT_EQ(a->RenewLease().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(b->RenewLease().ok());
}

TEST_F(PostgresRunStoreTest, ExpiredOwnersRunsAreClaimedAndTheOldOwnerIsFenced) {
  std::unique_ptr<PostgresRunStore> a = OpenOrDie();
  std::unique_ptr<PostgresRunStore> b = OpenOrDie();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  ASSERT_TRUE(a->JoinFleet("router-a", absl::Seconds(1)).ok());
  ASSERT_TRUE(b->JoinFleet("router-b", absl::Seconds(30)).ok());
  ASSERT_TRUE(a->CreateRun(OwnedRun("run-1", "router-a"), {Event("x")}).ok());
  absl::StatusOr<rein::v1::Run> got = b->GetRun("run-1");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->owner(), "router-a");
  EXPECT_EQ(got->lease_epoch(), 1);
  // a's lease is alive: nothing to claim.
  absl::StatusOr<std::vector<rein::v1::Run>> claimed = b->ClaimRuns(false);
  ASSERT_TRUE(claimed.ok()) << claimed.status();
  EXPECT_TRUE(claimed->empty());
  // a stalls past its ttl (the database's clock decides): b takes the run at epoch 2.
  Query(
      "UPDATE routers SET heartbeat = heartbeat - interval '2 seconds' "
      "WHERE router_id = 'router-a'");
  claimed = b->ClaimRuns(false);
  ASSERT_TRUE(claimed.ok()) << claimed.status();
  ASSERT_EQ(claimed->size(), 1u);
  EXPECT_EQ((*claimed)[0].owner(), "router-b");
  EXPECT_EQ((*claimed)[0].lease_epoch(), 2);
  // a wakes up and commits with its old epoch: fenced, nothing written.
  absl::StatusOr<std::vector<rein::v1::RunEvent>> stale =
      a->CommitOwned("run-1", 1, 1, NextState(2), {Event("stale")}, std::nullopt,
                     absl::FromUnixSeconds(1700000001));
  EXPECT_TRUE(IsLeaseLost(stale.status())) << stale.status();
  EXPECT_EQ(ReasonOf(stale.status()), reason::kLeaseLost);
  EXPECT_THAT(stale.status().message(), HasSubstr("router-b at epoch 2"));
  EXPECT_EQ(Query("SELECT count(*) FROM events WHERE run_id = 'run-1'"), "1");
  // a may renew again (it rejoins) but still cannot commit over b.
  EXPECT_TRUE(a->RenewLease().ok());
  EXPECT_TRUE(IsLeaseLost(a->CommitOwned("run-1", 1, 1, NextState(2), {}, std::nullopt,
                                         absl::FromUnixSeconds(1700000001))
                              .status()));
  // The new owner commits at its epoch, and seq goes on without a gap.
  absl::StatusOr<std::vector<rein::v1::RunEvent>> ok = b->CommitOwned(
      "run-1", 2, 1, NextState(2), {Event("b")}, std::nullopt, absl::FromUnixSeconds(1700000002));
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ((*ok)[0].seq(), 2);
  // A review through any router (Commit: version check only) still works.
  EXPECT_TRUE(a->Commit("run-1", 2, NextState(3), {Event("review")}, std::nullopt,
                        absl::FromUnixSeconds(1700000003))
                  .ok());
}

TEST_F(PostgresRunStoreTest, OrphansAreSharedAmongLiveRoutersAndNeverClaimedTwice) {
  std::unique_ptr<PostgresRunStore> dead = OpenOrDie();
  ASSERT_NE(dead, nullptr);
  ASSERT_TRUE(dead->JoinFleet("router-dead", absl::Seconds(30)).ok());
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(dead->CreateRun(OwnedRun(absl::StrCat("run-", i), "router-dead"), {}).ok());
  }
  ASSERT_TRUE(dead->LeaveFleet().ok());  // its lease ends at once
  std::vector<std::unique_ptr<PostgresRunStore>> live;
  for (int i = 0; i < 3; ++i) {
    live.push_back(OpenOrDie());
    ASSERT_NE(live.back(), nullptr);
    ASSERT_TRUE(live.back()->JoinFleet(absl::StrCat("router-", i), absl::Seconds(30)).ok());
  }
  std::vector<size_t> counts(3);
  std::vector<std::thread> threads;
  std::vector<std::string> all;
  absl::Mutex mu;
  for (int i = 0; i < 3; ++i) {
    threads.emplace_back([&, i] {
      absl::StatusOr<std::vector<rein::v1::Run>> claimed = live[i]->ClaimRuns(false);
      ASSERT_TRUE(claimed.ok()) << claimed.status();
      counts[i] = claimed->size();
      absl::MutexLock lock(&mu);
      for (const auto& run : *claimed) all.push_back(run.run_id());
    });
  }
  for (auto& t : threads) t.join();
  // ceil(10 / 3) = 4 at most each; none twice.
  for (size_t c : counts) EXPECT_LE(c, 4u);
  std::sort(all.begin(), all.end());
  EXPECT_EQ(std::unique(all.begin(), all.end()), all.end());
  // Whatever is left is claimed on the next round.
  for (int round = 0; round < 3; ++round) {
    for (auto& store : live) ASSERT_TRUE(store->ClaimRuns(false).ok());
  }
  EXPECT_EQ(Query("SELECT count(*) FROM runs WHERE owner = 'router-dead'"), "0");
  EXPECT_EQ(Query("SELECT count(*) FROM runs WHERE lease_epoch = 2"), "10");
}

TEST_F(PostgresRunStoreTest, StateIsStoredApartFromTheImmutableRun) {
  std::unique_ptr<PostgresRunStore> store = OpenOrDie();
  ASSERT_NE(store, nullptr);
  rein::v1::Run run = MakeRun("run-1");
  ASSERT_TRUE(store->CreateRun(run, {}).ok());
  const std::string before = Query("SELECT encode(run, 'hex') FROM runs");
  rein::v1::RunState next = NextState(2);
  next.set_latest_observation("a long observation that lives in the state column only");
  ASSERT_TRUE(
      store->Commit("run-1", 1, next, {}, std::nullopt, absl::FromUnixSeconds(1700000001)).ok());
  EXPECT_EQ(Query("SELECT encode(run, 'hex') FROM runs"), before);
  EXPECT_EQ(Query("SELECT position('\\x61206c6f6e67'::bytea in state) > 0 FROM runs"), "t");
  EXPECT_EQ(Query("SELECT version FROM runs"), "2");
}

TEST_F(PostgresRunStoreTest, RunIdWithNulByteIsInvalidArgument) {
  std::unique_ptr<PostgresRunStore> store = OpenOrDie();
  ASSERT_NE(store, nullptr);
  absl::StatusOr<CreateResult> created =
      store->CreateRun(MakeRun(std::string("run\0one", 7)), {Event("x")});
  EXPECT_EQ(created.status().code(), absl::StatusCode::kInvalidArgument);
  // The failed transaction left the pool usable.
  EXPECT_TRUE(store->CreateRun(MakeRun("run-2"), {}).ok());
}

TEST_F(PostgresRunStoreTest, OneConnectionServesManyThreads) {
  PostgresRunStore::Options options;
  options.max_connections = 1;
  std::unique_ptr<PostgresRunStore> store = OpenOrDie(options);
  ASSERT_NE(store, nullptr);
  std::vector<std::thread> threads;
  std::vector<absl::StatusCode> codes(6);
  for (int i = 0; i < 6; ++i) {
    threads.emplace_back([&, i] {
      codes[i] = store->CreateRun(MakeRun(absl::StrCat("run-", i)), {Event("x")}).status().code();
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(std::count(codes.begin(), codes.end(), absl::StatusCode::kOk), 6);
  EXPECT_EQ(Query("SELECT count(*) FROM pg_stat_activity WHERE application_name = "
                  "'rein-router' AND datname = current_database()"),
            "1");
}

TEST_F(PostgresRunStoreTest, ConnectionClosedByServerIsReopened) {
  std::unique_ptr<PostgresRunStore> store = OpenOrDie();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->CreateRun(MakeRun("run-1"), {}).ok());
  EXPECT_EQ(Query("SELECT count(pg_terminate_backend(pid)) > 0 FROM pg_stat_activity WHERE "
                  "application_name = 'rein-router' AND datname = current_database()"),
            "t");
  absl::StatusOr<rein::v1::Run> got = store->GetRun("run-1");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->run_id(), "run-1");
}

TEST_F(PostgresRunStoreTest, LeaseRenewalDoesNotWaitForTheBusyPool) {
  // The pool's only connection waits on a lock held outside the store; the lease is renewed
  // anyway, on its own connection (a renewal queued behind commits could outlive the ttl).
  PostgresRunStore::Options options;
  options.max_connections = 1;
  std::unique_ptr<PostgresRunStore> store = OpenOrDie(options);
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->JoinFleet("router-a", absl::Seconds(30)).ok());
  ASSERT_TRUE(store->CreateRun(MakeRun("run-1"), {}).ok());
  PGconn* holder = Hold("LOCK TABLE runs IN ACCESS EXCLUSIVE MODE");
  ASSERT_NE(holder, nullptr);
  std::thread blocked([&] { EXPECT_TRUE(store->GetRun("run-1").ok()); });
  // Wait until the store's read is queued on the lock, holding the pool's connection.
  for (int i = 0; i < 500 && Query("SELECT count(*) FROM pg_stat_activity WHERE application_name "
                                   "= 'rein-router' AND wait_event_type = 'Lock'") != "1";
       ++i) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  absl::Notification renewed;
  absl::Status renewal;
  std::thread renewer([&] {
    renewal = store->RenewLease();
    renewed.Notify();
  });
  const bool in_time = renewed.WaitForNotificationWithTimeout(absl::Seconds(10));
  EXPECT_TRUE(in_time) << "the renewal waited for the pool's connection";
  PGresult* released = PQexec(holder, "ROLLBACK");
  PQclear(released);
  PQfinish(holder);
  blocked.join();
  renewer.join();
  EXPECT_TRUE(renewal.ok()) << renewal;
}

TEST_F(PostgresRunStoreTest, ACommitWithATimeoutGivesUpOnALockedRunAndWritesNothing) {
  // Another transaction holds run-1's row. The request with a timeout (its caller's deadline)
  // gives up after it, writing nothing; the request of the same batch without one commits.
  std::unique_ptr<PostgresRunStore> store = OpenOrDie();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->CreateRun(MakeRun("run-1"), {}).ok());
  ASSERT_TRUE(store->CreateRun(MakeRun("run-2"), {}).ok());
  PGconn* holder = Hold("SELECT 1 FROM runs WHERE run_id = 'run-1' FOR UPDATE");
  ASSERT_NE(holder, nullptr);
  const rein::v1::RunState next = NextState(2);
  std::vector<CommitRequest> requests(2);
  for (int i = 0; i < 2; ++i) {
    requests[i].run_id = absl::StrCat("run-", i + 1);
    requests[i].expected_version = 1;
    requests[i].new_state = &next;
    requests[i].events.push_back(Event("step"));
    requests[i].now = absl::Now();
  }
  requests[0].timeout = absl::Milliseconds(300);
  // The holder lets go once the batch is answered, or after 5 s (a store that waits for it).
  absl::Notification answered;
  std::thread releaser([&] {
    answered.WaitForNotificationWithTimeout(absl::Seconds(5));
    PQclear(PQexec(holder, "ROLLBACK"));
  });
  const absl::Time started = absl::Now();
  std::vector<absl::StatusOr<std::vector<rein::v1::RunEvent>>> results =
      store->CommitBatch(requests);
  const absl::Duration took = absl::Now() - started;
  answered.Notify();
  releaser.join();
  PQfinish(holder);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].status().code(), absl::StatusCode::kDeadlineExceeded) << results[0].status();
  EXPECT_TRUE(results[1].ok()) << results[1].status();
  EXPECT_GE(took, absl::Milliseconds(300));
  EXPECT_LT(took, absl::Seconds(5));  // not until the holder let go
  absl::StatusOr<rein::v1::Run> run1 = store->GetRun("run-1");
  ASSERT_TRUE(run1.ok()) << run1.status();
  EXPECT_EQ(run1->state().version(), 1);
  absl::StatusOr<std::vector<rein::v1::RunEvent>> events = store->ReadEvents("run-1", 0, 100);
  ASSERT_TRUE(events.ok()) << events.status();
  EXPECT_TRUE(events->empty());
  absl::StatusOr<rein::v1::Run> run2 = store->GetRun("run-2");
  ASSERT_TRUE(run2.ok()) << run2.status();
  EXPECT_EQ(run2->state().version(), 2);
}

}  // namespace
}  // namespace rein
