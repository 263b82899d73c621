// The real rein-router with a broken tokens or quotas file: refused at start naming the file
// and line (the router does not start), and on reload the last good table stays.
#include <signal.h>
#include <stdio.h>
#include <sys/stat.h>

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "rein/v1/router.grpc.pb.h"
#include "tests/cluster.h"

namespace rein::testing {
namespace {

class NamespaceFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* tmp = getenv("TEST_TMPDIR");
    dir_ = absl::StrCat(tmp ? tmp : "/tmp", "/",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    mkdir(dir_.c_str(), 0755);
  }

  // Replaces `name` in the test's folder in one rename; returns its path.
  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = absl::StrCat(dir_, "/", name);
    std::ofstream(path + ".tmp") << text;
    EXPECT_EQ(rename((path + ".tmp").c_str(), path.c_str()), 0);
    return path;
  }
  // A tokens-file line for `token`.
  static std::string Line(const std::string& token, const std::string& rest) {
    return absl::StrCat("sha256:", Sha256Of(token), " ", rest, "\n");
  }
  std::vector<std::string> Router(const std::vector<std::string>& flags) {
    std::vector<std::string> argv = {RunfilePath("router_service/rein-router"),
                                     "--listen=127.0.0.1:0", "--store=sqlite:" + dir_ + "/r.db"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    return argv;
  }
  // Runs the router until it exits (at most 20 s): its exit status, and its output in *log.
  int RunToExit(const std::string& name, const std::vector<std::string>& flags, std::string* log) {
    Process p(name, Router(flags), absl::StrCat(dir_, "/", name, ".log"));
    if (!p.Start()) return -1;
    const int status = p.Wait(absl::Seconds(20));
    if (status == -1) p.Kill(SIGKILL);
    *log = ReadFile(p.log_path());
    return status;
  }
  static std::unique_ptr<grpc::ClientContext> As(const std::string& token) {
    auto context = std::make_unique<grpc::ClientContext>();
    context->AddMetadata("authorization", "Bearer " + token);
    context->set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
    return context;
  }

  std::string dir_;
};

TEST_F(NamespaceFilesTest, AMalformedNamespaceInTheTokensFileStopsTheRouterNamingFileAndLine) {
  const std::string tokens = Write("tokens", "# principal roles namespace\n" +
                                                 Line("a-op", "ci-a operator namespace=team-a") +
                                                 Line("b-op", "ci-b operator namespace=Team_B"));
  std::string log;
  EXPECT_EQ(RunToExit("bad-tokens", {"--auth_tokens_file=" + tokens}, &log), 2) << log;
  EXPECT_NE(log.find("rein-router: --auth_tokens_file: " + tokens + ": line 3: "),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("namespace"), std::string::npos) << log;
  EXPECT_EQ(log.find("\"msg\":\"serving\""), std::string::npos) << log;
}

TEST_F(NamespaceFilesTest, AnUnknownKeyOrANegativeQuotaStopsTheRouterNamingFileAndLine) {
  struct Case {
    std::string text, problem;
  };
  for (const Case& c : std::vector<Case>{
           {"# quotas\nteam-a max_runs=3\n", "line 2: unknown key \"max_runs\""},
           {"team-a max_concurrent_runs=2\n\nteam-b max_tokens_per_day=-5\n",
            "line 3: max_tokens_per_day: want a whole number >= 0, got \"-5\""},
           {"team-a weight=-1\n", "line 1: weight: want a whole number from 1 to 1000"},
       }) {
    SCOPED_TRACE(c.problem);
    const std::string quotas = Write("quotas", c.text);
    std::string log;
    EXPECT_EQ(RunToExit("bad-quotas", {"--quotas_file=" + quotas}, &log), 2) << log;
    EXPECT_NE(log.find("rein-router: --quotas_file: " + quotas + ": " + c.problem),
              std::string::npos)
        << log;
    EXPECT_EQ(log.find("\"msg\":\"serving\""), std::string::npos) << log;
  }
}

TEST_F(NamespaceFilesTest, ABrokenEditOfEitherFileKeepsTheLastGoodTable) {
  const std::string good_tokens =
      Line("adm", "ops admin") + Line("a-op", "ci-a operator namespace=team-a");
  const std::string tokens = Write("tokens", good_tokens);
  const std::string quotas = Write("quotas", "team-a max_concurrent_runs=5\n");
  Process router("router", Router({"--auth_tokens_file=" + tokens, "--quotas_file=" + quotas}),
                 dir_ + "/router.log");
  int port = 0;
  ASSERT_TRUE(StartListening(router, &port)) << ReadFile(router.log_path());
  auto stub = rein::v1::Router::NewStub(
      grpc::CreateChannel(absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials()));
  auto list_as = [&](const std::string& token) {
    rein::v1::ListRunsRequest request;
    rein::v1::ListRunsResponse reply;
    return stub->ListRuns(As(token).get(), request, &reply).error_code();
  };
  auto concurrent_limit = [&]() -> double {
    rein::v1::GetQuotaRequest request;
    request.set_namespace_("team-a");
    rein::v1::QuotaReport report;
    grpc::Status status = stub->GetQuota(As("adm").get(), request, &report);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return report.quotas_size() == 1 ? report.quotas(0).limit() : -1;
  };
  ASSERT_EQ(list_as("a-op"), grpc::StatusCode::OK);
  ASSERT_EQ(concurrent_limit(), 5);

  // Broken edits: a new token beside a malformed namespace; a negative quota.
  Write("tokens", good_tokens + Line("b-op", "ci-b operator namespace=team-b") +
                      Line("c-op", "ci-c operator namespace=-team-c"));
  Write("quotas", "team-a max_concurrent_runs=7\nteam-b max_concurrent_runs=-1\n");
  absl::SleepFor(absl::Milliseconds(2500));  // past the 2 s between checks of each file
  EXPECT_EQ(list_as("a-op"), grpc::StatusCode::OK);
  EXPECT_EQ(list_as("b-op"), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(concurrent_limit(), 5);
  const std::string log = ReadFile(router.log_path());
  EXPECT_NE(log.find("token file not reloaded; the previous tokens stay in force"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find(tokens + ": line 4: "), std::string::npos) << log;
  EXPECT_NE(log.find("quotas file not reloaded; the previous quotas stay in force"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find(quotas + ": line 2: max_concurrent_runs: want a whole number >= 0"),
            std::string::npos)
      << log;

  // Good edits are read: the files were checked, not ignored.
  Write("tokens", good_tokens + Line("b-op", "ci-b operator namespace=team-b"));
  Write("quotas", "team-a max_concurrent_runs=7\n");
  absl::SleepFor(absl::Milliseconds(2500));
  EXPECT_EQ(list_as("b-op"), grpc::StatusCode::OK);
  EXPECT_EQ(concurrent_limit(), 7);
  router.Kill(SIGTERM);
  EXPECT_EQ(router.Wait(absl::Seconds(20)), 0);
}

}  // namespace
}  // namespace rein::testing
