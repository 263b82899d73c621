#include "cli/notice_table.h"

#include <string>

#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rein::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(NoticeTableTest, OneAlignedRowPerNoticeWithItsStateAndError) {
  v1::ListNotificationsResponse response;
  v1::Notice* failed = response.add_notices();
  failed->set_notice_id("run-1.7");
  failed->set_type("dev.rein.run.failed");
  failed->set_status(v1::NOTICE_FAILED);
  failed->set_attempts(12);
  failed->mutable_committed()->set_seconds(1796300000);  // 2026-12-03 12:13:20 UTC
  failed->set_last_error("https://hooks.example/...: HTTP 500\nmore");
  v1::Notice* pending = response.add_notices();
  pending->set_notice_id("run-2.3");
  pending->set_type("dev.rein.run.paused");
  pending->set_status(v1::NOTICE_PENDING);
  pending->mutable_committed()->set_seconds(1796300000);
  pending->mutable_next_attempt()->set_seconds(1796300060);
  pending->set_endpoints_taken(1);
  const std::string table =
      NoticeTable(response, v1::NOTICE_STATUS_UNSPECIFIED, absl::UTCTimeZone());
  EXPECT_EQ(table,
            "NOTICE   TYPE    STATUS   ATTEMPTS  COMMITTED            NEXT ATTEMPT         "
            "ENDPOINTS TOOK IT  LAST ERROR\n"
            "run-1.7  failed  failed   12        2026-12-03 12:13:20  -                    "
            "0                  https://hooks.example/...: HTTP 500...\n"
            "run-2.3  paused  pending  0         2026-12-03 12:13:20  2026-12-03 12:14:20  "
            "1                  -\n");
}

TEST(NoticeTableTest, NoneSaysSoNamingTheFilter) {
  v1::ListNotificationsResponse none;
  EXPECT_EQ(NoticeTable(none, v1::NOTICE_STATUS_UNSPECIFIED, absl::UTCTimeZone()),
            "no notifications\n");
  EXPECT_EQ(NoticeTable(none, v1::NOTICE_FAILED, absl::UTCTimeZone()), "no failed notifications\n");
  EXPECT_THAT(NoticeTable(none, v1::NOTICE_PENDING, absl::UTCTimeZone()), Not(HasSubstr("failed")));
}

}  // namespace
}  // namespace rein::cli
