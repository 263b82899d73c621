// Tests of the HTTP port's Host and Origin rules.
#include "router_service/connect/host_check.h"

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rein::connect {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(HostCheckTest, OnLoopbackOnlyAddressesLocalhostAndAllowedNamesAreServed) {
  const HostCheck check("127.0.0.1:8080", {"Rein.Example"}, /*tls=*/false);
  for (const char* host :
       {"127.0.0.1:8080", "127.0.0.1", "localhost:8080", "LOCALHOST", "app.localhost:8080",
        "[::1]:8080", "10.0.0.7:8080", "rein.example", "REIN.example:8080"}) {
    EXPECT_TRUE(check.CheckHost(host).ok()) << host;
  }
  for (const char* host : {"attacker.example:8080", "attacker.example", "localhost.attacker.net",
                           "127.0.0.1.attacker.net", "rein.example.attacker.net", ""}) {
    absl::Status status = check.CheckHost(host);
    EXPECT_EQ(status.code(), absl::StatusCode::kPermissionDenied) << host;
  }
  EXPECT_THAT(check.CheckHost("attacker.example:8080").message(),
              HasSubstr("--http_allowed_hosts"));
  EXPECT_EQ(check.CheckHost(nullptr).code(), absl::StatusCode::kPermissionDenied);
  EXPECT_TRUE(HostCheck("localhost:0", {}, false).CheckHost("127.0.0.1:1").ok());
  EXPECT_FALSE(HostCheck("localhost:0", {}, false).CheckHost("rebound.example").ok());
}

TEST(HostCheckTest, ElsewhereHostIsCheckedOnlyWhenNamesAreGiven) {
  EXPECT_TRUE(HostCheck("0.0.0.0:8080", {}, false).CheckHost("rein.internal:8080").ok());
  EXPECT_FALSE(HostCheck("0.0.0.0:8080", {"rein.example"}, false).CheckHost("other").ok());
  EXPECT_TRUE(HostCheck("0.0.0.0:8080", {"rein.example"}, false).CheckHost("rein.example").ok());
}

TEST(HostCheckTest, OnlyTheSameOriginOrNoneIsServed) {
  const HostCheck plain("127.0.0.1:8080", {}, /*tls=*/false);
  EXPECT_TRUE(plain.CheckOrigin("127.0.0.1:8080", nullptr).ok());
  EXPECT_TRUE(plain.CheckOrigin("127.0.0.1:8080", "http://127.0.0.1:8080").ok());
  EXPECT_TRUE(plain.CheckOrigin("localhost:8080", "http://LOCALHOST:8080").ok());
  for (const char* origin : {"http://attacker.example", "null", "https://127.0.0.1:8080",
                             "http://127.0.0.1:8081", "http://127.0.0.1:8080.attacker.net"}) {
    absl::Status status = plain.CheckOrigin("127.0.0.1:8080", origin);
    EXPECT_EQ(status.code(), absl::StatusCode::kPermissionDenied) << origin;
    EXPECT_THAT(status.message(), HasSubstr("no CORS")) << origin;
  }
  const HostCheck tls("127.0.0.1:8443", {}, /*tls=*/true);
  EXPECT_TRUE(tls.CheckOrigin("127.0.0.1:8443", "https://127.0.0.1:8443").ok());
  EXPECT_FALSE(tls.CheckOrigin("127.0.0.1:8443", "http://127.0.0.1:8443").ok());
}

TEST(ParseAllowedHostsTest, NamesOnly) {
  absl::StatusOr<std::vector<std::string>> names = ParseAllowedHosts(" Rein.Example, a-b.c ");
  ASSERT_TRUE(names.ok()) << names.status();
  EXPECT_THAT(*names, ElementsAre("rein.example", "a-b.c"));
  EXPECT_TRUE(ParseAllowedHosts("")->empty());
  for (const char* bad : {"rein.example:8080", "http://rein.example", "a b", "*.example"}) {
    absl::Status status = ParseAllowedHosts(bad).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(status.message(), HasSubstr("--http_allowed_hosts")) << bad;
  }
}

}  // namespace
}  // namespace rein::connect
