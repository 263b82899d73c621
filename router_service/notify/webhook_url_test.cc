// Tests of the strict webhook URL parse and the allow-list's whole-segment prefix match.
#include "router_service/notify/webhook_url.h"

#include <string>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rein {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

WebhookUrl Parsed(const std::string& url) {
  absl::StatusOr<WebhookUrl> parsed = ParseWebhookUrl(url);
  EXPECT_TRUE(parsed.ok()) << url << ": " << parsed.status();
  return parsed.ok() ? *parsed : WebhookUrl{};
}

TEST(ParseWebhookUrlTest, SchemeHostPortSegmentsAndQueryAreRead) {
  const WebhookUrl url = Parsed("https://Hooks.Example:8443/team-a/x%2Dy/?k=v");
  EXPECT_EQ(url.scheme, "https");
  EXPECT_EQ(url.host, "hooks.example");
  EXPECT_EQ(url.port, 8443);
  EXPECT_THAT(url.segments, ElementsAre("team-a", "x-y"));
  EXPECT_EQ(url.query, "k=v");
  EXPECT_EQ(Parsed("http://127.0.0.1").port, 80);
  EXPECT_EQ(Parsed("https://[::1]/h").host, "[::1]");
  EXPECT_EQ(Parsed("https://[::1]:9/h").port, 9);
}

TEST(ParseWebhookUrlTest, WhatCouldReachAnotherPathIsRefused) {
  struct Case {
    std::string url;
    std::string says;
  };
  for (const Case& c : std::vector<Case>{
           {"https://hooks.example/team-a/../admin/x", "dot segment"},
           {"https://hooks.example/team-a/./x", "dot segment"},
           {"https://hooks.example/team-a/%2e%2e/admin", "dot segment"},
           {"https://hooks.example/team-a/%2E./admin", "dot segment"},
           {"https://hooks.example/team-a/.%2E/admin", "dot segment"},
           {"https://hooks.example/team-a/..;x/admin", "dot segment"},
           {"https://hooks.example/team-a/..", "dot segment"},
           {"https://hooks.example/team-a%2f..%2fadmin", "encoded '/'"},
           {"https://hooks.example/team-a%5c..", "encoded '/'"},
           {"https://hooks.example/team-a/%252e%252e/admin", "encoded '/'"},
           {"https://hooks.example/team-a/%zz", "percent-escape"},
           {"https://hooks.example/team-a/%2", "percent-escape"},
           {"https://hooks.example/team-a\\..\\admin", "backslash"},
           {"https://hooks.example//admin", "empty segment"},
           {"https://user@hooks.example/team-a", "user info"},
           {"https://hooks.example@evil.example/team-a", "user info"},
           {"https://hooks.example/team-a#frag", "fragment"},
           {"https://hooks.example/t\xc3\xa9", "non-ASCII"},
           {"https://hooks.example:/x", "empty port"},
           {"https://hooks.example:99999/x", "bad port"},
           {"https://hooks.example:+80/x", "bad port"},
           {"https://hooks%2eexample/x", "bad host"},
           {"https://[::1/x", "bad host"},
           {"https:///x", "no host"},
           {"ftp://hooks.example/x", "not an http"},
       }) {
    absl::StatusOr<WebhookUrl> parsed = ParseWebhookUrl(c.url);
    ASSERT_FALSE(parsed.ok()) << c.url;
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument) << c.url;
    EXPECT_THAT(parsed.status().message(), HasSubstr(c.says)) << c.url;
  }
}

TEST(IsUnderPrefixTest, WholeSegmentsOfTheSameOrigin) {
  const WebhookUrl team_a = Parsed("https://hooks.example/team-a");
  EXPECT_TRUE(IsUnderPrefix(Parsed("https://hooks.example/team-a"), team_a));
  EXPECT_TRUE(IsUnderPrefix(Parsed("https://hooks.example/team-a/"), team_a));
  EXPECT_TRUE(IsUnderPrefix(Parsed("https://hooks.example/team-a/x/y?z=1"), team_a));
  EXPECT_TRUE(IsUnderPrefix(Parsed("https://HOOKS.example:443/team-%61/x"), team_a));
  EXPECT_FALSE(IsUnderPrefix(Parsed("https://hooks.example/team-ab"), team_a));
  EXPECT_FALSE(IsUnderPrefix(Parsed("https://hooks.example/team-ab/x"), team_a));
  EXPECT_FALSE(IsUnderPrefix(Parsed("https://hooks.example/"), team_a));
  EXPECT_FALSE(IsUnderPrefix(Parsed("https://hooks.example/admin/x"), team_a));
  EXPECT_FALSE(IsUnderPrefix(Parsed("http://hooks.example/team-a"), team_a));
  EXPECT_FALSE(IsUnderPrefix(Parsed("https://hooks.example:8443/team-a"), team_a));
  EXPECT_FALSE(IsUnderPrefix(Parsed("https://hooks.example.attacker.net/team-a"), team_a));
  const WebhookUrl host = Parsed("https://hooks.example");
  EXPECT_TRUE(IsUnderPrefix(Parsed("https://hooks.example/anything"), host));
  EXPECT_FALSE(IsUnderPrefix(Parsed("https://hooks.example.attacker.net/"), host));
}

TEST(WebhookOriginTest, ShowsSchemeAndAuthorityOnly) {
  EXPECT_EQ(WebhookOrigin("https://hooks.slack.example/services/T0/B0/secret?x=1"),
            "https://hooks.slack.example/...");
  EXPECT_EQ(WebhookOrigin("https://h:8443?token=s"), "https://h:8443/...");
  EXPECT_EQ(WebhookOrigin("https://h"), "https://h");
  EXPECT_EQ(WebhookOrigin("not a url"), "(url)");
}

}  // namespace
}  // namespace rein
