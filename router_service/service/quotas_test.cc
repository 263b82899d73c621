// Tests of the quotas file, its reload, and the admission of starts against a real store.
#include "router_service/service/quotas.h"

#include <stdlib.h>

#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/proto_time.h"
#include "common/status_reason.h"
#include "common/testing/fake_clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "router_service/store/sqlite_run_store.h"

namespace rein {
namespace {

using ::testing::HasSubstr;

// A start whose create made its run.
bool Created() { return true; }

TEST(ParseQuotaFileTest, ReadsEveryKeyAndLeavesTheRestUnlimited) {
  auto table = ParseQuotaFile(
      "# team quotas\n\nteam-a max_concurrent_runs=2 max_starts_per_minute=10 "
      "max_tokens_per_day=5000 max_cost_usd_per_day=1.5\nteam-b max_concurrent_runs=0\nteam-c\n");
  ASSERT_TRUE(table.ok()) << table.status();
  ASSERT_EQ(table->size(), 3u);
  const NamespaceQuota& a = table->at("team-a");
  EXPECT_EQ(*a.max_concurrent_runs, 2);
  EXPECT_EQ(*a.max_starts_per_minute, 10);
  EXPECT_EQ(*a.max_tokens_per_day, 5000);
  EXPECT_DOUBLE_EQ(*a.max_cost_usd_per_day, 1.5);
  EXPECT_EQ(*table->at("team-b").max_concurrent_runs, 0);
  EXPECT_FALSE(table->at("team-c").max_tokens_per_day.has_value());
}

TEST(ParseQuotaFileTest, ErrorsNameTheLineAndProblem) {
  struct Case {
    std::string line, problem;
  };
  for (const Case& c : std::vector<Case>{
           {"Team_A max_concurrent_runs=1", "namespace: must be lower-case"},
           {"team-a max_runs=1", "unknown key \"max_runs\""},
           {"team-a max_concurrent_runs=-1", "max_concurrent_runs: want a whole number >= 0"},
           {"team-a max_tokens_per_day=many", "max_tokens_per_day: want a whole number"},
           {"team-a max_cost_usd_per_day=-0.5", "max_cost_usd_per_day: want a number >= 0"},
           {"team-a max_cost_usd_per_day=nan", "max_cost_usd_per_day: want a number >= 0"},
           {"team-a max_starts_per_minute", "max_starts_per_minute: want a whole number"},
           {"team-a weight=0", "weight: want a whole number from 1 to 1000"},
           {"team-a weight=1001", "weight: want a whole number from 1 to 1000"},
       }) {
    auto table = ParseQuotaFile("# header\n" + c.line + "\n");
    ASSERT_FALSE(table.ok()) << c.line;
    EXPECT_EQ(table.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(table.status().message()), HasSubstr("line 2: " + c.problem))
        << table.status();
  }
  auto twice = ParseQuotaFile("team-a\nteam-a max_concurrent_runs=1\n");
  ASSERT_FALSE(twice.ok());
  EXPECT_THAT(std::string(twice.status().message()),
              HasSubstr("line 2: namespace team-a is listed twice"));
}

class QuotaBookTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string dir = getenv("TEST_TMPDIR") ? getenv("TEST_TMPDIR") : "/tmp";
    const std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    path_ = dir + "/quotas-" + name;
    auto store = SqliteRunStore::Open(dir + "/quotas-" + name + ".db", {});
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(*store);
    clock_ = std::make_unique<FakeClock>(absl::FromUnixSeconds(1700000000));  // 22:13:20 UTC
  }
  void Write(const std::string& text) {
    std::ofstream(path_ + ".tmp") << text;
    ASSERT_EQ(rename((path_ + ".tmp").c_str(), path_.c_str()), 0);
  }
  std::unique_ptr<QuotaBook> Book() {
    QuotaOptions options;
    options.file = path_;
    options.reload_check = absl::Seconds(2);
    auto book = std::make_unique<QuotaBook>(options, store_.get(), clock_.get());
    EXPECT_TRUE(book->Load().ok());
    return book;
  }
  // A run of `ns` created now, at `stage`, having used `tokens`.
  void AddRun(const std::string& id, const std::string& ns, rein::v1::Stage stage,
              int64_t tokens = 0) {
    rein::v1::Run run;
    run.set_run_id(id);
    run.mutable_spec()->set_namespace_(ns);
    run.mutable_state()->set_stage(stage);
    run.mutable_state()->set_version(1);
    run.mutable_state()->set_tokens_used(tokens);
    *run.mutable_created_at() = ToProtoTime(clock_->Now());
    ASSERT_TRUE(store_->CreateRun(run, {}).ok());
  }

  std::string path_;
  std::unique_ptr<SqliteRunStore> store_;
  std::unique_ptr<FakeClock> clock_;
};

TEST_F(QuotaBookTest, ConcurrentRunsCountPausedOnesAndFreeWhenOneEnds) {
  Write("team-a max_concurrent_runs=2\n");
  auto book = Book();
  AddRun("r1", "team-a", rein::v1::PLANNING);
  AddRun("r2", "team-a", rein::v1::PAUSED);
  AddRun("r3", "team-a", rein::v1::FINISHED);
  AddRun("b1", "team-b", rein::v1::PLANNING);
  rein::v1::RunSpec spec;
  absl::Status refused = book->AdmitStart("team-a", &spec, Created);
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(HasReason(refused, reason::kQuotaExceeded));
  EXPECT_THAT(std::string(refused.message()), HasSubstr("quota max_concurrent_runs is spent"));
  EXPECT_THAT(std::string(refused.message()), HasSubstr("frees when one ends"));
  // Another namespace, and one without a line, are not limited.
  EXPECT_TRUE(book->AdmitStart("team-b", &spec, Created).ok());
  EXPECT_TRUE(book->AdmitStart("default", &spec, Created).ok());
}

TEST_F(QuotaBookTest, AStartBeingCreatedIsCountedSoThatAnotherCannotPassTheQuota) {
  Write("team-a max_concurrent_runs=1 max_starts_per_minute=1\n");
  auto book = Book();
  rein::v1::RunSpec spec;
  // While the first start creates its run (not in the store yet), a second is refused.
  absl::Status second;
  auto finds_its_run = [&] {
    rein::v1::RunSpec other;
    second = book->AdmitStart("team-a", &other, Created);
    return false;  // the first found its request_id's run: nothing created
  };
  ASSERT_TRUE(book->AdmitStart("team-a", &spec, finds_its_run).ok());
  EXPECT_EQ(second.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(second.message()), HasSubstr("1 of 1 runs unfinished"));
  // A start that created nothing counts nowhere: the next one is admitted. A child is
  // refused while that one is being created too.
  absl::Status child;
  auto creates_it = [&] {
    child = book->AdmitChild("team-a", Created);
    return true;
  };
  ASSERT_TRUE(book->AdmitStart("team-a", &spec, creates_it).ok());
  EXPECT_EQ(child.code(), absl::StatusCode::kResourceExhausted);
  // That start counted in the minute's starts.
  EXPECT_THAT(std::string(book->AdmitStart("team-a", &spec, Created).message()),
              HasSubstr("max_starts_per_minute"));
}

TEST_F(QuotaBookTest, AWeightIsReadAgainOnChangeAndIsOneWithoutALine) {
  Write("team-a weight=4 max_concurrent_runs=2\ndefault weight=2\n");
  auto book = Book();
  EXPECT_EQ(book->Weight("team-a"), 4);
  EXPECT_EQ(book->Weight("team-b"), 1);
  EXPECT_EQ(book->Weight(""), 2);  // a run of `default` carries no namespace
  // The weight is not a quota: a start is admitted as without it.
  rein::v1::RunSpec spec;
  EXPECT_TRUE(book->AdmitStart("default", &spec, Created).ok());
  Write("team-a weight=7\n");
  clock_->Advance(absl::Seconds(3));
  EXPECT_EQ(book->Weight("team-a"), 7);
  EXPECT_EQ(book->Weight("default"), 1);
}

TEST_F(QuotaBookTest, StartsPerMinuteFreeWhenTheOldestLeavesTheWindow) {
  Write("team-a max_starts_per_minute=2\n");
  auto book = Book();
  rein::v1::RunSpec spec;
  ASSERT_TRUE(book->AdmitStart("team-a", &spec, Created).ok());
  clock_->Advance(absl::Seconds(10));
  ASSERT_TRUE(book->AdmitStart("team-a", &spec, Created).ok());
  absl::Status refused = book->AdmitStart("team-a", &spec, Created);
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(refused.message()),
              HasSubstr("quota max_starts_per_minute is spent: 2 of 2 starts in the last minute; "
                        "frees at 2023-11-14T22:14:20+00:00"));
  clock_->Advance(absl::Seconds(50));  // the first start leaves the window
  EXPECT_TRUE(book->AdmitStart("team-a", &spec, Created).ok());
  EXPECT_EQ(book->AdmitStart("team-a", &spec, Created).code(),
            absl::StatusCode::kResourceExhausted);
}

TEST_F(QuotaBookTest, DayTokensCapTheRunsBudgetAndRefuseOnceSpentUntilTheDayEnds) {
  Write("team-a max_tokens_per_day=1000\n");
  auto book = Book();
  AddRun("r1", "team-a", rein::v1::FINISHED, /*tokens=*/700);
  rein::v1::RunSpec spec;
  spec.mutable_limits()->set_token_budget(5000);
  ASSERT_TRUE(book->AdmitStart("team-a", &spec, Created).ok());
  EXPECT_EQ(spec.limits().token_budget(), 300);  // what the day has left
  rein::v1::RunSpec small;
  small.mutable_limits()->set_token_budget(100);
  ASSERT_TRUE(book->AdmitStart("team-a", &small, Created).ok());
  EXPECT_EQ(small.limits().token_budget(), 100);  // already below

  AddRun("r2", "team-a", rein::v1::FINISHED, /*tokens=*/300);
  absl::Status refused = book->AdmitStart("team-a", &spec, Created);
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(refused.message()),
              HasSubstr("quota max_tokens_per_day is spent: 1000 of 1000 tokens used today "
                        "(UTC); frees at 2023-11-15T00:00:00+00:00"));
  auto report = book->Report("team-a");
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_EQ(report->quotas_size(), 1);
  EXPECT_EQ(report->quotas(0).name(), "max_tokens_per_day");
  EXPECT_EQ(report->quotas(0).used(), 1000);
  EXPECT_EQ(report->quotas(0).frees_at().seconds(), 1700006400);
  clock_->Advance(absl::Hours(2));  // the next UTC day: yesterday's runs count no more
  EXPECT_TRUE(book->AdmitStart("team-a", &spec, Created).ok());
}

TEST_F(QuotaBookTest, ABrokenEditKeepsTheLastGoodTableAndAGoodOneTakesEffect) {
  Write("team-a max_concurrent_runs=0\n");
  auto book = Book();
  rein::v1::RunSpec spec;
  ASSERT_EQ(book->AdmitStart("team-a", &spec, Created).code(),
            absl::StatusCode::kResourceExhausted);
  Write("team-a max_concurrent_runs=zero\n");
  clock_->Advance(absl::Seconds(3));
  EXPECT_EQ(book->AdmitStart("team-a", &spec, Created).code(),
            absl::StatusCode::kResourceExhausted);
  Write("team-a max_concurrent_runs=5\n");
  clock_->Advance(absl::Seconds(3));
  EXPECT_TRUE(book->AdmitStart("team-a", &spec, Created).ok());
}

TEST_F(QuotaBookTest, ABadFileAtStartNamesFileAndLine) {
  Write("ok-ns\nteam-a max_concurrent_runs=-2\n");
  QuotaOptions options;
  options.file = path_;
  QuotaBook book(options, store_.get(), clock_.get());
  absl::Status status = book.Load();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), HasSubstr(path_ + ": line 2: max_concurrent_runs"));
}

}  // namespace
}  // namespace rein
