// Tests of OpenRunStore: which URI opens which store, the SQLite lock, and the errors.
#include "router_service/store/open_run_store.h"

#include <cstdlib>
#include <filesystem>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "router_service/store/sqlite_run_store.h"
#include "router_service/store/testing/run_store_values.h"

namespace rein {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class OpenRunStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* root = std::getenv("TEST_TMPDIR");
    std::string pattern = absl::StrCat(root != nullptr ? root : "/tmp", "/open_run_store_XXXXXX");
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    path_ = dir_ + "/runs.db";
  }
  void TearDown() override {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

  std::string dir_;
  std::string path_;
};

TEST_F(OpenRunStoreTest, SqliteUriOpensSqliteStoreDescribedByItsPath) {
  absl::StatusOr<OpenedRunStore> opened = OpenRunStore("sqlite:" + path_, RunStoreOptions());
  ASSERT_TRUE(opened.ok()) << opened.status();
  ASSERT_NE(opened->store, nullptr);
  EXPECT_NE(dynamic_cast<SqliteRunStore*>(opened->store.get()), nullptr);
  EXPECT_EQ(opened->description, "sqlite:" + path_);
  EXPECT_TRUE(std::filesystem::exists(path_));
  EXPECT_TRUE(std::filesystem::exists(path_ + ".lock"));
  ASSERT_TRUE(opened->store->CreateRun(testing::MakeRun("run-1"), {}).ok());
  EXPECT_TRUE(opened->store->GetRun("run-1").ok());
}

TEST_F(OpenRunStoreTest, SecondOpenOfOneSqliteStoreIsFailedPreconditionNamingLock) {
  absl::StatusOr<OpenedRunStore> first = OpenRunStore("sqlite:" + path_, RunStoreOptions());
  ASSERT_TRUE(first.ok()) << first.status();

  absl::StatusOr<OpenedRunStore> second = OpenRunStore("sqlite:" + path_, RunStoreOptions());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(second.status().message(),
            absl::StrCat("--store: another rein-router holds ", path_,
                         ".lock (one router per SQLite store; use PostgreSQL for several)"));
}

TEST_F(OpenRunStoreTest, ClosedSqliteStoreReleasesItsLock) {
  {
    absl::StatusOr<OpenedRunStore> first = OpenRunStore("sqlite:" + path_, RunStoreOptions());
    ASSERT_TRUE(first.ok()) << first.status();
  }
  absl::StatusOr<OpenedRunStore> again = OpenRunStore("sqlite:" + path_, RunStoreOptions());
  EXPECT_TRUE(again.ok()) << again.status();
}

TEST_F(OpenRunStoreTest, SqliteInMissingDirectoryIsFailedPreconditionNamingStoreFlag) {
  const std::string path = dir_ + "/no/such/dir/runs.db";
  absl::StatusOr<OpenedRunStore> opened = OpenRunStore("sqlite:" + path, RunStoreOptions());
  EXPECT_EQ(opened.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(opened.status().message(), HasSubstr("--store: "));
  EXPECT_THAT(opened.status().message(), HasSubstr(path));
}

TEST_F(OpenRunStoreTest, SqliteWithEmptyPathIsInvalidArgument) {
  absl::StatusOr<OpenedRunStore> opened = OpenRunStore("sqlite:", RunStoreOptions());
  EXPECT_EQ(opened.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(opened.status().message(), "--store: SQLite database path is empty");
}

TEST_F(OpenRunStoreTest, SqliteSynchronousFullOpens) {
  RunStoreOptions options;
  options.sqlite_synchronous = "FULL";
  absl::StatusOr<OpenedRunStore> opened = OpenRunStore("sqlite:" + path_, options);
  EXPECT_TRUE(opened.ok()) << opened.status();
}

TEST_F(OpenRunStoreTest, SqliteCacheOutsideItsRangeIsInvalidArgumentNamingFlag) {
  for (int mib : {0, -8, 4097}) {
    RunStoreOptions options;
    options.sqlite_cache_mib = mib;
    absl::StatusOr<OpenedRunStore> opened = OpenRunStore("sqlite:" + path_, options);
    EXPECT_EQ(opened.status().code(), absl::StatusCode::kInvalidArgument) << mib;
    EXPECT_EQ(opened.status().message(),
              absl::StrCat("--sqlite_cache_mib: must be 1 to 4096, got ", mib));
    EXPECT_FALSE(std::filesystem::exists(path_));
  }
  RunStoreOptions options;
  options.sqlite_cache_mib = 1;
  absl::StatusOr<OpenedRunStore> opened = OpenRunStore("sqlite:" + path_, options);
  EXPECT_TRUE(opened.ok()) << opened.status();
}

TEST_F(OpenRunStoreTest, BadSqliteSynchronousIsInvalidArgumentNamingFlag) {
  RunStoreOptions options;
  options.sqlite_synchronous = "OFF";
  absl::StatusOr<OpenedRunStore> opened = OpenRunStore("sqlite:" + path_, options);
  EXPECT_EQ(opened.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(opened.status().message(), "--sqlite_synchronous: must be NORMAL or FULL, got \"OFF\"");
  EXPECT_FALSE(std::filesystem::exists(path_));
}

TEST(OpenRunStoreUriTest, UnknownSchemeIsInvalidArgumentNamingFlagAndFormsNotPassword) {
  for (const std::string uri : {"mysql://rein:s3cret@localhost/runs", "sqlite", "runs.db",
                                "postgres:/localhost/runs", "SQLITE:runs.db"}) {
    absl::StatusOr<OpenedRunStore> opened = OpenRunStore(uri, RunStoreOptions());
    EXPECT_EQ(opened.status().code(), absl::StatusCode::kInvalidArgument) << uri;
    EXPECT_THAT(opened.status().message(), HasSubstr("--store")) << uri;
    EXPECT_THAT(opened.status().message(), HasSubstr("sqlite:PATH")) << uri;
    EXPECT_THAT(opened.status().message(), HasSubstr("postgres://")) << uri;
    EXPECT_THAT(opened.status().message(), HasSubstr("postgresql://")) << uri;
    EXPECT_THAT(opened.status().message(), Not(HasSubstr("s3cret"))) << uri;
  }
}

TEST(OpenRunStoreUriTest, EmptyUriIsInvalidArgumentSayingSo) {
  absl::StatusOr<OpenedRunStore> opened = OpenRunStore("", RunStoreOptions());
  EXPECT_EQ(opened.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(opened.status().message(), HasSubstr("--store: is empty"));
  EXPECT_THAT(opened.status().message(), HasSubstr("sqlite:PATH"));
}

TEST(OpenRunStoreUriTest, SqliteSynchronousIsNotCheckedForPostgres) {
  RunStoreOptions options;
  options.sqlite_synchronous = "OFF";
  absl::StatusOr<OpenedRunStore> opened =
      OpenRunStore("postgres://localhost:notaport/runs", options);
  EXPECT_THAT(opened.status().message(), HasSubstr("--store: invalid PostgreSQL URL"));
}

TEST(OpenRunStoreUriTest, BadPostgresUrlIsInvalidArgumentBehindStoreFlag) {
  for (const std::string uri :
       {"postgres://rein:s3cret@localhost:notaport/runs", "postgresql://localhost:70000/runs"}) {
    absl::StatusOr<OpenedRunStore> opened = OpenRunStore(uri, RunStoreOptions());
    EXPECT_EQ(opened.status().code(), absl::StatusCode::kInvalidArgument) << uri;
    EXPECT_THAT(opened.status().message(), HasSubstr("--store: invalid PostgreSQL URL")) << uri;
    EXPECT_THAT(opened.status().message(), Not(HasSubstr("s3cret"))) << uri;
  }
}

}  // namespace
}  // namespace rein
