// Tests of the token file, the role table and the Authenticator's reload and rate limit.
#include "router_service/auth.h"

#include <stdio.h>
#include <stdlib.h>

#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/metrics.h"
#include "common/testing/fake_clock.h"
#include "gtest/gtest.h"

namespace rein {
namespace {

const std::string kHashA = Sha256Hex("token-a");
const std::string kHashB = Sha256Hex("token-b");

TEST(Sha256HexTest, MatchesTheKnownDigest) {
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(ParseTokenFileTest, ReadsLinesCommentsAndRoles) {
  auto tokens = ParseTokenFile(absl::StrCat("# ops\n\nsha256:", kHashA,
                                            " alice operator,reviewer\n  sha256:", kHashB,
                                            " victor viewer  # trailing\n"));
  // A trailing comment is not allowed: it makes a fourth field that is not a namespace.
  ASSERT_FALSE(tokens.ok());
  EXPECT_NE(tokens.status().message().find("line 4"), std::string::npos) << tokens.status();
  EXPECT_NE(tokens.status().message().find("namespace=<ns>"), std::string::npos) << tokens.status();
  tokens = ParseTokenFile(absl::StrCat("# ops\n\nsha256:", kHashA, " alice operator,reviewer\n",
                                       "sha256:", kHashB, " victor viewer\n"));
  ASSERT_TRUE(tokens.ok()) << tokens.status();
  ASSERT_EQ(tokens->size(), 2u);
  EXPECT_EQ(tokens->at(kHashA).name, "alice");
  EXPECT_EQ(tokens->at(kHashA).roles, kRoleOperator | kRoleReviewer);
  EXPECT_EQ(tokens->at(kHashB).roles, kRoleViewer);
  EXPECT_EQ(tokens->at(kHashA).namespace_name, "default");
}

TEST(ParseTokenFileTest, ReadsNamespacesAndAdmin) {
  auto tokens = ParseTokenFile(absl::StrCat("sha256:", kHashA, " alice operator namespace=team-a\n",
                                            "sha256:", kHashB, " root admin\n"));
  ASSERT_TRUE(tokens.ok()) << tokens.status();
  EXPECT_EQ(tokens->at(kHashA).namespace_name, "team-a");
  EXPECT_EQ(tokens->at(kHashB).namespace_name, "default");
  EXPECT_EQ(tokens->at(kHashB).roles, kRoleAdmin);
}

TEST(ParseTokenFileTest, ErrorsNameTheLineAndProblem) {
  struct Case {
    std::string line, problem;
  };
  for (const Case& c : std::vector<Case>{
           {"sha256:" + kHashA + " alice", "found 2 fields"},
           {"md5:" + kHashA + " alice viewer", "must start with \"sha256:\""},
           {"sha256:abc alice viewer", "64 hex digits"},
           {"sha256:" + kHashA + " alice root", "unknown role \"root\""},
           {"sha256:" + kHashA + " alice viewer ns=a", "must be namespace=<ns>"},
           {"sha256:" + kHashA + " alice viewer namespace=Team_A", "namespace: must be lower-case"},
           {"sha256:" + kHashA + " alice viewer namespace=", "namespace: must not be empty"},
           {"sha256:" + kHashA + " alice viewer namespace=a b", "found 5 fields"},
           {"sha256:" + kHashA + " alice viewer,", "unknown role \"\""},
       }) {
    auto tokens = ParseTokenFile("# header\n" + c.line + "\n");
    ASSERT_FALSE(tokens.ok()) << c.line;
    EXPECT_EQ(tokens.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(tokens.status().message().find("line 2: "), std::string::npos) << tokens.status();
    EXPECT_NE(tokens.status().message().find(c.problem), std::string::npos) << tokens.status();
  }
  auto twice =
      ParseTokenFile(absl::StrCat("sha256:", kHashA, " a viewer\nsha256:", kHashA, " b viewer\n"));
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.status().message().find("listed twice"), std::string::npos);
  EXPECT_EQ(twice.status().message().find(kHashA), std::string::npos) << "the full hash";
}

TEST(RolesAllowedForTest, TableOfEveryRouterMethod) {
  const uint32_t all = kRoleViewer | kRoleOperator | kRoleReviewer | kRoleAdmin;
  for (const char* m : {"GetRun", "ListRuns", "WatchRun", "ExportRun", "GetQuota"}) {
    EXPECT_EQ(RolesAllowedFor(m), all) << m;
  }
  for (const char* m : {"StartRun", "CancelRun", "ForkRun", "ListNotifications"}) {
    EXPECT_EQ(RolesAllowedFor(m), kRoleOperator | kRoleAdmin) << m;
  }
  EXPECT_EQ(RolesAllowedFor("ResumeRun"), kRoleReviewer | kRoleAdmin);
  EXPECT_EQ(RolesAllowedFor("DeleteEverything"), 0u);
}

class AuthenticatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = absl::StrCat(getenv("TEST_TMPDIR") ? getenv("TEST_TMPDIR") : "/tmp", "/tokens-",
                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    Write(absl::StrCat("sha256:", kHashA, " alice operator\nsha256:", kHashB, " rita reviewer\n"));
    options_.tokens_file = path_;
    options_.reload_check = absl::Seconds(2);
    options_.max_failures_per_window = 3;
    options_.failure_window = absl::Seconds(60);
  }
  void Write(const std::string& text) {
    std::string tmp = path_ + ".tmp";
    std::ofstream(tmp) << text;
    ASSERT_EQ(rename(tmp.c_str(), path_.c_str()), 0);
  }
  std::string path_;
  AuthOptions options_;
  FakeClock clock_;
};

TEST_F(AuthenticatorTest, MissingFileRefusesLoad) {
  options_.tokens_file = path_ + ".absent";
  Authenticator auth(options_, &clock_);
  absl::Status status = auth.Load();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find(".absent"), std::string::npos);
}

TEST_F(AuthenticatorTest, TokensAndRoles) {
  Authenticator auth(options_, &clock_);
  ASSERT_TRUE(auth.Load().ok());
  const char* peer = "ipv4:10.0.0.1:4000";
  auto alice = auth.Authorize("StartRun", "Bearer token-a", peer);
  ASSERT_TRUE(alice.ok()) << alice.status();
  EXPECT_EQ(alice->name, "alice");
  EXPECT_TRUE(auth.Authorize("GetRun", "bearer token-a", peer).ok());  // scheme case-insensitive
  EXPECT_EQ(auth.Authorize("ResumeRun", "Bearer token-a", peer).status().code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_TRUE(auth.Authorize("ResumeRun", "Bearer token-b", peer).ok());
  EXPECT_EQ(auth.Authorize("StartRun", "Bearer token-b", peer).status().code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(auth.Authorize("NewRpc", "Bearer token-a", peer).status().code(),
            absl::StatusCode::kPermissionDenied);
  absl::Status none = auth.Authorize("GetRun", "", peer).status();
  absl::Status wrong = auth.Authorize("GetRun", "Bearer token-c", peer).status();
  EXPECT_EQ(none.code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(wrong.code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(none.message(), wrong.message()) << "the reason a token fails is not told";
  EXPECT_EQ(auth.Authorize("GetRun", "Basic dG9rZW4tYQ==", peer).status().code(),
            absl::StatusCode::kUnauthenticated);
  // Failures are counted by reason.
  const std::string metrics = Metrics::Global().Render();
  EXPECT_NE(metrics.find("rein_router_auth_failures_total{reason=\"unauthenticated\"} 3"),
            std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("rein_router_auth_failures_total{reason=\"permission_denied\"} 3"),
            std::string::npos)
      << metrics;
}

TEST_F(AuthenticatorTest, RemovedLineRevokesAfterTheReloadCheck) {
  Authenticator auth(options_, &clock_);
  ASSERT_TRUE(auth.Load().ok());
  Write(absl::StrCat("sha256:", kHashB, " rita reviewer\n"));
  clock_.Advance(absl::Seconds(1));
  EXPECT_TRUE(auth.Authorize("GetRun", "Bearer token-a", "ipv4:1.1.1.1:1").ok());  // not yet
  clock_.Advance(absl::Seconds(2));
  EXPECT_EQ(auth.Authorize("GetRun", "Bearer token-a", "ipv4:1.1.1.1:1").status().code(),
            absl::StatusCode::kUnauthenticated);
  // A broken file keeps the last good table.
  Write("this is not a token line\n");
  clock_.Advance(absl::Seconds(3));
  EXPECT_TRUE(auth.Authorize("GetRun", "Bearer token-b", "ipv4:1.1.1.1:1").ok());
  // An added line is picked up.
  Write(absl::StrCat("sha256:", kHashA, " alice viewer\n"));
  clock_.Advance(absl::Seconds(3));
  EXPECT_TRUE(auth.Authorize("GetRun", "Bearer token-a", "ipv4:1.1.1.1:1").ok());
}

TEST_F(AuthenticatorTest, FailuresAreRateLimitedPerCredentialNotPerAddress) {
  Authenticator auth(options_, &clock_);
  ASSERT_TRUE(auth.Load().ok());
  // One address (a proxy in front of every client) sends the same wrong token again and again.
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(auth.Authorize("GetRun", "Bearer guess", absl::StrCat("ipv4:10.0.0.9:", 100 + i))
                  .status()
                  .code(),
              absl::StatusCode::kUnauthenticated);
  }
  // That token is limited, from any address...
  absl::Status limited = auth.Authorize("GetRun", "Bearer guess", "ipv4:10.0.0.7:1").status();
  EXPECT_EQ(limited.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(limited.message(),
            "too many failed authentication attempts with this token; retry later");
  // ...but a valid token from the same address still works, and so does another wrong token
  // get its own answer.
  EXPECT_TRUE(auth.Authorize("GetRun", "Bearer token-a", "ipv4:10.0.0.9:555").ok());
  EXPECT_EQ(auth.Authorize("GetRun", "Bearer other", "ipv4:10.0.0.9:556").status().code(),
            absl::StatusCode::kUnauthenticated);
  // Calls without a token are counted by address: that address is limited, another is not,
  // and a valid token from the limited address still works.
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(auth.Authorize("GetRun", "", "ipv4:10.0.0.9:1").status().code(),
              absl::StatusCode::kUnauthenticated);
  }
  EXPECT_EQ(auth.Authorize("GetRun", "Basic x", "ipv4:10.0.0.9:2").status().code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(auth.Authorize("GetRun", "", "ipv4:10.0.0.8:1").status().code(),
            absl::StatusCode::kUnauthenticated);
  EXPECT_TRUE(auth.Authorize("GetRun", "Bearer token-b", "ipv4:10.0.0.9:3").ok());
  // Refusals for a role do not count toward the limit.
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(auth.Authorize("ResumeRun", "Bearer token-a", "ipv4:10.0.0.8:1").status().code(),
              absl::StatusCode::kPermissionDenied);
  }
  EXPECT_TRUE(auth.Authorize("GetRun", "Bearer token-a", "ipv4:10.0.0.8:1").ok());
  // The window ends.
  clock_.Advance(absl::Seconds(61));
  EXPECT_EQ(auth.Authorize("GetRun", "Bearer guess", "ipv4:10.0.0.9:1").status().code(),
            absl::StatusCode::kUnauthenticated);
}

TEST_F(AuthenticatorTest, ATokenAddedAfterItFailedWorksOnReload) {
  Authenticator auth(options_, &clock_);
  ASSERT_TRUE(auth.Load().ok());
  for (int i = 0; i < 4; ++i) (void)auth.Authorize("GetRun", "Bearer token-c", "ipv4:10.0.0.9:1");
  EXPECT_EQ(auth.Authorize("GetRun", "Bearer token-c", "ipv4:10.0.0.9:1").status().code(),
            absl::StatusCode::kResourceExhausted);
  Write(absl::StrCat("sha256:", Sha256Hex("token-c"), " carol viewer\n"));
  clock_.Advance(absl::Seconds(3));
  EXPECT_TRUE(auth.Authorize("GetRun", "Bearer token-c", "ipv4:10.0.0.9:1").ok());
}

}  // namespace
}  // namespace rein
