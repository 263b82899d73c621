// Tests of the webhook flags, secrets and the RunSpec.notify allow-list.
#include "router_service/notify/webhook_config.h"

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rein/v1/types.pb.h"

namespace rein {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::UnorderedElementsAre;

std::string WriteFile(const std::string& name, const std::string& content) {
  const std::string path = absl::StrCat(::testing::TempDir(), "/", name);
  std::ofstream(path) << content;
  return path;
}

TEST(ParseWebhookFlagTest, UrlSecretFileAndTypesAreRead) {
  const std::string secret = WriteFile("raw.key", "  s3cret\n");
  absl::StatusOr<WebhookEndpoint> e = ParseWebhookFlag(
      "--webhook_url",
      absl::StrCat("https://hooks.example/rein,secret_file=", secret, ",types=paused,failed"));
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->url, "https://hooks.example/rein");
  EXPECT_EQ(e->key, "s3cret");
  EXPECT_THAT(e->types, UnorderedElementsAre(kTypePaused, kTypeFailed));
}

TEST(ParseWebhookFlagTest, AWhsecSecretIsBase64Decoded) {
  const std::string secret = WriteFile("whsec.key", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\n");
  absl::StatusOr<WebhookEndpoint> e =
      ParseWebhookFlag("--webhook_url", absl::StrCat("http://127.0.0.1:9/h,secret_file=", secret));
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->key.size(), 24u);
  const std::string bad = WriteFile("bad.key", "whsec_!!!not base64!!!");
  absl::Status status =
      ParseWebhookFlag("--webhook_url", absl::StrCat("http://h/,secret_file=", bad)).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("not base64"));
  EXPECT_THAT(status.message(), Not(HasSubstr("not base64!!!")));  // never the secret
}

TEST(ParseWebhookFlagTest, BadValuesAreClearErrorsNamingTheFlag) {
  struct Case {
    std::string value;
    std::string says;
  };
  const std::string empty = WriteFile("empty.key", "\n");
  for (const Case& c : std::vector<Case>{
           {"ftp://hooks.example/x", "not an http:// or https:// URL"},
           {"hooks.example/x", "not an http:// or https:// URL"},
           {"https:///x", "has no host"},
           {"https://user:pw@hooks.example/x", "user info"},
           {"https://hooks.example/a b", "whitespace"},
           {"https://hooks.example/x,secret_file=/no/such/file", "cannot read the secret_file"},
           {absl::StrCat("https://hooks.example/x,secret_file=", empty), "is empty"},
           {"https://hooks.example/x,types=started", "unknown event type"},
           {"https://hooks.example/x,retries=3", "unknown option"},
       }) {
    absl::Status status = ParseWebhookFlag("--webhook_url", c.value).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << c.value;
    EXPECT_THAT(status.message(), HasSubstr("--webhook_url")) << c.value;
    EXPECT_THAT(status.message(), HasSubstr(c.says)) << c.value;
  }
}

WebhookConfig Config() {
  WebhookEndpoint all{"https://ops.example/all", "k1", {}, ""};
  WebhookEndpoint paused_only{"https://ops.example/paused", "k2", {kTypePaused}, ""};
  WebhookEndpoint allowed{"https://hooks.example", "k3", {}, ""};
  WebhookEndpoint allowed_dir{"http://127.0.0.1:8080/rein/", "k4", {}, ""};
  return WebhookConfig({all, paused_only}, {allowed, allowed_dir}, "https://console.example/");
}

rein::v1::RunSpec SpecWith(std::vector<std::string> urls) {
  rein::v1::RunSpec spec;
  for (const std::string& url : urls) spec.add_notify(url);
  return spec;
}

TEST(WebhookConfigTest, RunUrlsMustFallUnderAnAllowedPrefixAtABoundary) {
  const WebhookConfig config = Config();
  EXPECT_TRUE(config.CheckRunSpec(SpecWith({"https://hooks.example/team-a"})).ok());
  EXPECT_TRUE(config.CheckRunSpec(SpecWith({"https://hooks.example"})).ok());
  EXPECT_TRUE(config.CheckRunSpec(SpecWith({"http://127.0.0.1:8080/rein/x?y=1"})).ok());
  for (const char* url : {"https://hooks.example.attacker.net/x", "https://hooks.example:8443/x",
                          "http://169.254.169.254/latest/meta-data", "http://127.0.0.1:8080/reinx",
                          "http://127.0.0.1:8080/"}) {
    absl::Status status = config.CheckRunSpec(SpecWith({url}));
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << url;
    EXPECT_THAT(status.message(), HasSubstr("spec.notify[0]")) << url;
    EXPECT_THAT(status.message(), HasSubstr("--webhook_allow")) << url;
  }
  EXPECT_THAT(config.CheckRunSpec(SpecWith({"https://hooks.example/a", "https://hooks.example/a"}))
                  .message(),
              HasSubstr("spec.notify[1]: listed twice"));
  EXPECT_THAT(config
                  .CheckRunSpec(SpecWith({"https://hooks.example/1", "https://hooks.example/2",
                                          "https://hooks.example/3", "https://hooks.example/4",
                                          "https://hooks.example/5"}))
                  .message(),
              HasSubstr("at most 4"));
  EXPECT_THAT(config.CheckRunSpec(SpecWith({"https://user@hooks.example/x"})).message(),
              HasSubstr("user info"));
  EXPECT_THAT(WebhookConfig().CheckRunSpec(SpecWith({"https://hooks.example/x"})).message(),
              HasSubstr("none set"));
}

// libcurl removes dot segments before sending: a URL that climbs out of its prefix, plainly or
// percent-encoded, must not pass the check (it would be POSTed elsewhere, signed with the
// prefix's key), nor may a prefix admit a longer segment.
TEST(WebhookConfigTest, DotSegmentsAndPartialSegmentsDoNotEscapeAPrefix) {
  const WebhookConfig config({}, {{"https://hooks.example/team-a", "ka", {}, ""}}, "");
  EXPECT_TRUE(config.CheckRunSpec(SpecWith({"https://hooks.example/team-a/x"})).ok());
  for (const char* url :
       {"https://hooks.example/team-a/../admin/x", "https://hooks.example/team-a/%2e%2e/admin/x",
        "https://hooks.example/team-a/%2E./admin", "https://hooks.example/team-a/..%2fadmin",
        "https://hooks.example/team-ab", "https://hooks.example/team-a#x",
        "https://hooks.example/team-a\\..\\admin"}) {
    absl::Status status = config.CheckRunSpec(SpecWith({url}));
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << url;
    EXPECT_THAT(status.message(), HasSubstr("spec.notify[0]")) << url;
    rein::v1::RunSpec spec = SpecWith({url});
    EXPECT_THAT(config.EndpointsFor(spec, kTypePaused), ::testing::IsEmpty()) << url;
  }
}

rein::v1::RunSpec InNamespace(rein::v1::RunSpec spec, const std::string& ns) {
  spec.set_namespace_(ns);
  return spec;
}

// A prefix given namespace=team-a serves team-a's runs only, signed with its own key; an entry
// without namespace= serves every namespace, as before namespaces.
TEST(WebhookConfigTest, ANamespacedPrefixServesItsNamespaceOnly) {
  const std::string key_a = WriteFile("team-a.key", "key-of-a");
  absl::StatusOr<WebhookConfig> config = MakeWebhookConfig(
      {"https://ops.example/b-only,namespace=team-b"},
      {absl::StrCat("https://hooks.example/team-a,secret_file=", key_a, ",namespace=team-a"),
       "https://shared.example/all"},
      "");
  ASSERT_TRUE(config.ok()) << config.status();
  const rein::v1::RunSpec a = InNamespace(SpecWith({"https://hooks.example/team-a/x"}), "team-a");
  EXPECT_TRUE(config->CheckRunSpec(a).ok());
  const rein::v1::RunSpec b = InNamespace(SpecWith({"https://hooks.example/team-a/x"}), "team-b");
  absl::Status status = config->CheckRunSpec(b);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("spec.notify[0]: not under a prefix this router "
                                          "allows to namespace team-b"));
  EXPECT_FALSE(config->CheckRunSpec(SpecWith({"https://hooks.example/team-a/x"})).ok());
  EXPECT_TRUE(
      config->CheckRunSpec(InNamespace(SpecWith({"https://shared.example/all/x"}), "team-b")).ok());
  EXPECT_TRUE(config->CheckRunSpec(SpecWith({"https://shared.example/all/x"})).ok());
  // At send time too: a team-b run's notice never goes to team-a's prefix.
  std::vector<WebhookEndpoint> to_a = config->EndpointsFor(a, kTypePaused);
  ASSERT_EQ(to_a.size(), 1u);
  EXPECT_EQ(to_a[0].url, "https://hooks.example/team-a/x");
  EXPECT_EQ(to_a[0].key, "key-of-a");
  std::vector<WebhookEndpoint> to_b = config->EndpointsFor(b, kTypePaused);
  ASSERT_EQ(to_b.size(), 1u);
  EXPECT_EQ(to_b[0].url, "https://ops.example/b-only");
  EXPECT_THAT(MakeWebhookConfig({}, {"https://h/x,namespace=Team_A"}, "").status().message(),
              HasSubstr("--webhook_allow: namespace"));
  EXPECT_THAT(MakeWebhookConfig({}, {"https://h/x,namespace=a,namespace=b"}, "").status().message(),
              HasSubstr("namespace= given twice"));
  EXPECT_THAT(MakeWebhookConfig({}, {"https://h/x?k=v"}, "").status().message(),
              HasSubstr("a prefix has no query"));
}

TEST(WebhookConfigTest, EndpointsForFiltersByTypeAndSignsRunUrlsWithTheirPrefixKey) {
  const WebhookConfig config = Config();
  const rein::v1::RunSpec spec =
      SpecWith({"https://hooks.example/team-a", "https://evil.example/x"});
  std::vector<WebhookEndpoint> paused = config.EndpointsFor(spec, kTypePaused);
  ASSERT_EQ(paused.size(), 3u);
  EXPECT_EQ(paused[0].url, "https://ops.example/all");
  EXPECT_EQ(paused[1].url, "https://ops.example/paused");
  EXPECT_EQ(paused[2].url, "https://hooks.example/team-a");
  EXPECT_EQ(paused[2].key, "k3");
  std::vector<WebhookEndpoint> failed = config.EndpointsFor(spec, kTypeFailed);
  ASSERT_EQ(failed.size(), 2u);
  EXPECT_EQ(failed[1].url, "https://hooks.example/team-a");
  EXPECT_EQ(config.console_url(), "https://console.example");
}

TEST(RedactNotifyTest, OnlyTheOriginOfEachUrlIsLeft) {
  rein::v1::RunSpec spec = SpecWith(
      {"https://hooks.slack.example/services/T0/B0/secret", "http://127.0.0.1:8080/rein/x?k=s"});
  spec.set_goal("g");
  RedactNotify(&spec);
  EXPECT_THAT(spec.notify(),
              ElementsAre("https://hooks.slack.example/...", "http://127.0.0.1:8080/..."));
  EXPECT_EQ(spec.goal(), "g");
}

TEST(RepeatedFlagValuesTest, EveryOccurrenceInOrder) {
  const char* args[] = {"rein-router",      "--webhook_url=a", "-webhook_url", "b",
                        "--webhook_urls=c", "--webhook_url=d", "--",           "--webhook_url=e"};
  std::vector<std::string> values = RepeatedFlagValues(8, const_cast<char**>(args), "webhook_url");
  EXPECT_THAT(values, ElementsAre("a", "b", "d"));
}

}  // namespace
}  // namespace rein
