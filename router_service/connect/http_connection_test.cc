// The HTTP port's TLS context: built from the files, errors naming the flag, reloaded when a
// file changes, the last good one kept when a change does not load.
#include "router_service/connect/http_connection.h"

#include <openssl/x509.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace rein::connect {
namespace {

class TlsContextTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(
        absl::StrCat(getenv("TEST_TMPDIR") ? getenv("TEST_TMPDIR") : "/tmp", "/http-tls"));
    const char* srcdir = getenv("TEST_SRCDIR");
    const std::string script =
        absl::StrCat(srcdir ? srcdir : ".", "/rein/common/testing/make_certs.sh");
    ASSERT_EQ(system(absl::StrCat(script, " ", *dir_, " --test").c_str()), 0) << script;
  }
  static std::string F(const std::string& name) { return *dir_ + "/" + name; }
  static void Copy(const std::string& from, const std::string& to) {
    std::filesystem::copy_file(F(from), F(to), std::filesystem::copy_options::overwrite_existing);
  }
  // The subject's common name of the certificate a context serves.
  static std::string ServedName(const SslCtxPtr& ctx) {
    X509* cert = SSL_CTX_get0_certificate(ctx.get());
    char name[256] = {};
    X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, name, sizeof(name));
    return name;
  }
  static std::string* dir_;
};
std::string* TlsContextTest::dir_ = nullptr;

TEST_F(TlsContextTest, BadFilesAreRefusedNamingTheFlag) {
  absl::StatusOr<SslCtxPtr> missing = MakeServerSslCtx({F("nope.pem"), F("router.key"), ""});
  EXPECT_NE(missing.status().message().find("--tls_cert"), std::string::npos) << missing.status();
  absl::StatusOr<SslCtxPtr> mismatched = MakeServerSslCtx({F("router.pem"), F("client.key"), ""});
  EXPECT_NE(mismatched.status().message().find("--tls_key"), std::string::npos)
      << mismatched.status();
  absl::StatusOr<SslCtxPtr> bad_ca =
      MakeServerSslCtx({F("router.pem"), F("router.key"), F("router.key")});
  EXPECT_NE(bad_ca.status().message().find("client CA"), std::string::npos) << bad_ca.status();
  EXPECT_TRUE(MakeServerSslCtx({F("router.pem"), F("router.key"), F("clients-ca.pem")}).ok());
}

TEST_F(TlsContextTest, ChangedFilesAreReloadedAndBadChangesKeepTheLastGoodOnes) {
  Copy("router.pem", "live.pem");
  Copy("router.key", "live.key");
  auto context = TlsContext::Load({F("live.pem"), F("live.key"), ""}, absl::ZeroDuration());
  ASSERT_TRUE(context.ok()) << context.status();
  const SslCtxPtr first = (*context)->Current();
  EXPECT_EQ(ServedName(first), "router");
  EXPECT_EQ((*context)->Current(), first);  // unchanged files: the same context

  // A rotation to the planner's pair, the key first: the half-changed pair does not load,
  // and the old context is served meanwhile.
  Copy("planner.key", "live.key");
  EXPECT_EQ((*context)->Current(), first);
  Copy("planner.pem", "live.pem");
  const SslCtxPtr rotated = (*context)->Current();
  EXPECT_NE(rotated, first);
  EXPECT_EQ(ServedName(rotated), "planner");

  std::ofstream(F("live.pem")) << "not a certificate";
  EXPECT_EQ((*context)->Current(), rotated);
}

TEST_F(TlsContextTest, FilesAreCheckedAtMostEveryInterval) {
  Copy("router.pem", "slow.pem");
  Copy("router.key", "slow.key");
  auto context = TlsContext::Load({F("slow.pem"), F("slow.key"), ""}, absl::Hours(1));
  ASSERT_TRUE(context.ok()) << context.status();
  const SslCtxPtr first = (*context)->Current();
  Copy("planner.pem", "slow.pem");
  Copy("planner.key", "slow.key");
  EXPECT_EQ((*context)->Current(), first);
}

}  // namespace
}  // namespace rein::connect
