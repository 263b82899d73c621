// Tests of common/tls: start-up checks of the PEM files, the server-name check, and a server
// certificate replaced on disk being used by new handshakes within the reload interval.
#include "common/tls.h"

#include <stdio.h>
#include <stdlib.h>

#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "common/server.h"
#include "grpcpp/generic/generic_stub.h"
#include "gtest/gtest.h"

namespace rein {
namespace {

class TlsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(
        absl::StrCat(getenv("TEST_TMPDIR") ? getenv("TEST_TMPDIR") : "/tmp", "/tls_test"));
    const char* srcdir = getenv("TEST_SRCDIR");
    std::string script = absl::StrCat(srcdir ? srcdir : ".", "/rein/common/testing/make_certs.sh");
    ASSERT_EQ(system(absl::StrCat(script, " ", *dir_, " --test").c_str()), 0) << script;
  }
  static std::string F(const std::string& name) { return absl::StrCat(*dir_, "/", name); }
  static TlsFiles Files(const std::string& name, const std::string& ca = "ca") {
    return {F(name + ".pem"), F(name + ".key"), F(ca + ".pem")};
  }

  // Whether a fresh client with `files` completes a TLS handshake with 127.0.0.1:port.
  static bool Connects(int port, const TlsFiles& files, const std::string& name = "") {
    grpc::ChannelArguments args;
    AddTlsTargetName(name, &args);
    args.SetInt("rein.test.fresh_connection", ++attempt_);
    auto channel = grpc::CreateCustomChannel(absl::StrCat("127.0.0.1:", port),
                                             MakeChannelCredentials(files), args);
    return channel->WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds(3));
  }

  // The status of a unary call of `method` (empty request) on 127.0.0.1:port from a client
  // presenting `files`, on a fresh connection.
  static grpc::Status Call(int port, const TlsFiles& files, const std::string& method) {
    grpc::ChannelArguments args;
    args.SetInt("rein.test.fresh_connection", ++attempt_);
    auto channel = grpc::CreateCustomChannel(absl::StrCat("127.0.0.1:", port),
                                             MakeChannelCredentials(files), args);
    grpc::GenericStub stub(channel);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    grpc::Slice empty("");
    grpc::ByteBuffer request(&empty, 1), response;
    grpc::Status result;
    absl::Notification done;
    stub.UnaryCall(&context, method, grpc::StubOptions(), &request, &response,
                   [&](grpc::Status status) {
                     result = std::move(status);
                     done.Notify();
                   });
    done.WaitForNotification();
    return result;
  }

  static std::string* dir_;
  static int attempt_;
};
std::string* TlsTest::dir_ = nullptr;
int TlsTest::attempt_ = 0;

TEST_F(TlsTest, StartupChecksNameTheFlagAndFile) {
  EXPECT_TRUE(CheckServerTlsFiles({}).ok());
  EXPECT_TRUE(CheckServerTlsFiles(Files("planner")).ok());
  TlsFiles no_ca = Files("planner");
  no_ca.ca.clear();
  EXPECT_NE(CheckServerTlsFiles(no_ca).message().find("--tls_ca: required"), std::string::npos);
  TlsFiles missing = Files("planner");
  missing.cert = F("absent.pem");
  EXPECT_EQ(CheckServerTlsFiles(missing).message(),
            absl::StrCat("--tls_cert: cannot read ", F("absent.pem")));
  TlsFiles mismatched = Files("planner");
  mismatched.key = F("executor.key");
  absl::Status status = CheckServerTlsFiles(mismatched);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("--tls_key: " + F("executor.key") + " is not the key of"),
            std::string::npos)
      << status;
  TlsFiles not_pem = Files("planner");
  not_pem.ca = F("garbage.pem");
  std::ofstream(not_pem.ca) << "hello";
  EXPECT_NE(CheckServerTlsFiles(not_pem).message().find("--tls_ca: "), std::string::npos);
  // A client may give the CA alone.
  EXPECT_TRUE(CheckClientTlsFiles({"", "", F("ca.pem")}).ok());
  absl::Status cert_alone = CheckClientTlsFiles({F("client.pem"), "", F("ca.pem")});
  EXPECT_EQ(cert_alone.code(), absl::StatusCode::kInvalidArgument) << cert_alone;
  EXPECT_EQ(cert_alone.message(), "--tls_cert and --tls_key: give both or neither");
}

TEST_F(TlsTest, ClientChecksTheServerName) {
  ServiceHostOptions options;
  options.credentials = MakeServerCredentials(Files("wrongname"), /*require_client_cert=*/true);
  ServiceHost host(options);
  ASSERT_TRUE(host.Start({}).ok());
  EXPECT_FALSE(Connects(host.port(), Files("client")));  // 127.0.0.1 is not in its SANs
  EXPECT_TRUE(Connects(host.port(), Files("client"), "elsewhere.invalid"));
  EXPECT_FALSE(Connects(host.port(), Files("client"), "rein-planner"));
}

TEST(AllowedClientsTest, ParsesDnsNamesAndRefusesBadOnes) {
  absl::StatusOr<std::vector<std::string>> names = ParseAllowedClients("rein-router, Router.NS");
  ASSERT_TRUE(names.ok()) << names.status();
  EXPECT_EQ(*names, (std::vector<std::string>{"rein-router", "router.ns"}));
  absl::StatusOr<std::vector<std::string>> empty = ParseAllowedClients("");
  EXPECT_EQ(empty.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(empty.status().message().find("--allowed_clients: an empty name"), std::string::npos);
  absl::StatusOr<std::vector<std::string>> gap = ParseAllowedClients("rein-router,,x");
  EXPECT_EQ(gap.status().code(), absl::StatusCode::kInvalidArgument);
  absl::StatusOr<std::vector<std::string>> bad = ParseAllowedClients("rein router");
  EXPECT_EQ(bad.status().message(), "--allowed_clients: \"rein router\" is not a DNS name");
}

TEST(AllowedClientsTest, IdentityMustMatchOneAllowedName) {
  EXPECT_TRUE(CheckClientIdentity({"localhost", "REIN-ROUTER"}, {"rein-router"}).ok());
  absl::Status other = CheckClientIdentity({"localhost", "rein-client"}, {"rein-router"});
  EXPECT_EQ(other.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(other.message(),
            "the client certificate's identity (DNS names: localhost, rein-client) is not "
            "allowed: this service accepts only rein-router (--allowed_clients)");
  absl::Status none = CheckClientIdentity({}, {"rein-router", "rein-router-2"});
  EXPECT_NE(none.message().find("(DNS names: none)"), std::string::npos) << none;
  // A prefix or a suffix is not the name.
  EXPECT_FALSE(CheckClientIdentity({"rein-router.evil"}, {"rein-router"}).ok());
  EXPECT_FALSE(CheckClientIdentity({"rein-route"}, {"rein-router"}).ok());
}

TEST_F(TlsTest, RouterOnlyPortAppliesTheListenPolicyAndTheAllowlist) {
  RouterOnlyPort port{"0.0.0.0:50053", {}, kRouterIdentity, false, "run tools"};
  absl::Status plaintext = MakeRouterOnlyCredentials(port).status();
  EXPECT_EQ(plaintext.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(plaintext.message().find("--listen=0.0.0.0:50053 is not loopback"), std::string::npos)
      << plaintext;
  port.allow_unauthenticated = true;
  EXPECT_TRUE(MakeRouterOnlyCredentials(port).ok());
  port.allow_unauthenticated = false;
  port.files = Files("executor");
  EXPECT_TRUE(MakeRouterOnlyCredentials(port).ok());
  port.allowed_clients = "";
  EXPECT_NE(MakeRouterOnlyCredentials(port).status().message().find("--allowed_clients: "),
            std::string::npos);
  port.allowed_clients = kRouterIdentity;
  port.files.ca.clear();
  EXPECT_NE(MakeRouterOnlyCredentials(port).status().message().find("--tls_ca: required"),
            std::string::npos);
}

TEST_F(TlsTest, ServerRefusesCallsFromCertificatesWithoutAnAllowedName) {
  ServiceHostOptions options;
  options.credentials = MakeServerCredentials(Files("executor"), /*require_client_cert=*/true,
                                              /*allowed_clients=*/{"rein-router"});
  ServiceHost host(options);
  ASSERT_TRUE(host.Start({}).ok());
  const std::string method = "/rein.test.Nothing/Call";
  // The router's certificate gets past the check to the (absent) method.
  EXPECT_EQ(Call(host.port(), Files("router"), method).error_code(),
            grpc::StatusCode::UNIMPLEMENTED);
  // A certificate from the same CA with another identity is refused before any method.
  grpc::Status client = Call(host.port(), Files("client"), method);
  EXPECT_EQ(client.error_code(), grpc::StatusCode::PERMISSION_DENIED) << client.error_message();
  EXPECT_NE(client.error_message().find("rein-client) is not allowed"), std::string::npos)
      << client.error_message();
  EXPECT_EQ(Call(host.port(), Files("planner"), method).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  // Health is exempt, so that a probe with the pod's own certificate works.
  EXPECT_EQ(Call(host.port(), Files("client"), "/grpc.health.v1.Health/Check").error_code(),
            grpc::StatusCode::OK);
}

TEST_F(TlsTest, ReplacedServerCertificateIsUsedByNewHandshakesWithinTenSeconds) {
  // The server's files are copies that the test replaces.
  auto copy = [](const std::string& from, const std::string& to) {
    std::ifstream in(F(from), std::ios::binary);
    std::string tmp = F(to + ".tmp");
    std::ofstream(tmp, std::ios::binary) << in.rdbuf();
    ASSERT_EQ(rename(tmp.c_str(), F(to).c_str()), 0);
  };
  copy("planner.pem", "served.pem");
  copy("planner.key", "served.key");
  ServiceHostOptions options;
  options.credentials = MakeServerCredentials({F("served.pem"), F("served.key"), F("ca.pem")},
                                              /*require_client_cert=*/true);
  ServiceHost host(options);
  ASSERT_TRUE(host.Start({}).ok());
  const TlsFiles trusts_old = Files("client", "ca");
  const TlsFiles trusts_new = Files("client", "other-ca");  // client cert still from ca
  ASSERT_TRUE(Connects(host.port(), trusts_old));
  ASSERT_FALSE(Connects(host.port(), trusts_new));
  // An old connection stays open across the rotation.
  grpc::ChannelArguments args;
  auto old_channel = grpc::CreateCustomChannel(absl::StrCat("127.0.0.1:", host.port()),
                                               MakeChannelCredentials(trusts_old), args);
  ASSERT_TRUE(
      old_channel->WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds(3)));

  copy("stranger.key", "served.key");  // signed by other-ca, for 127.0.0.1
  copy("stranger.pem", "served.pem");
  const absl::Time rotated = absl::Now();
  bool switched = false;
  while (absl::Now() - rotated < absl::Seconds(10)) {
    if (Connects(host.port(), trusts_new)) {
      switched = true;
      break;
    }
    absl::SleepFor(absl::Milliseconds(250));
  }
  EXPECT_TRUE(switched) << "new handshakes still use the old certificate after 10 s";
  EXPECT_FALSE(Connects(host.port(), trusts_old));
  EXPECT_EQ(old_channel->GetState(/*try_to_connect=*/false), GRPC_CHANNEL_READY);
}

}  // namespace
}  // namespace rein
