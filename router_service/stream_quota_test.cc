// Tests of the per-principal cap on open WatchRun streams.
#include "router_service/stream_quota.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rein {
namespace {

using ::testing::HasSubstr;

TEST(StreamQuotaTest, PastTheCapIsRefusedNamingItAndAClosedStreamFreesItsSlot) {
  StreamQuota quota(/*max_per_principal=*/2);
  auto a = quota.Acquire("alice");
  auto b = quota.Acquire("alice");
  ASSERT_TRUE(a.ok() && b.ok());
  auto c = quota.Acquire("alice");
  EXPECT_EQ(c.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(c.status().message(), HasSubstr("--max_watch_streams_per_principal"));
  EXPECT_THAT(c.status().message(), HasSubstr("alice already hold 2"));
  // Another principal is not affected.
  EXPECT_TRUE(quota.Acquire("bob").ok());
  a->reset();
  EXPECT_EQ(quota.open("alice"), 1);
  EXPECT_TRUE(quota.Acquire("alice").ok());
}

TEST(StreamQuotaTest, ZeroMeansNoCap) {
  StreamQuota quota(/*max_per_principal=*/0);
  std::vector<std::unique_ptr<StreamQuota::Ticket>> held;
  for (int i = 0; i < 1000; ++i) {
    auto t = quota.Acquire("");
    ASSERT_TRUE(t.ok());
    held.push_back(std::move(*t));
  }
  EXPECT_EQ(quota.open(""), 1000);
  held.clear();
  EXPECT_EQ(quota.open(""), 0);
}

}  // namespace
}  // namespace rein
