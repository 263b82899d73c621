// Bounded readers against the real router: WatchRun streams are capped per principal
// (RESOURCE_EXHAUSTED past --max_watch_streams_per_principal) and a revoked token ends its
// open streams (UNAUTHENTICATED) (docs/SECURITY.md, "The security suite").
#include <stdlib.h>
#include <sys/stat.h>

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/cluster.h"

namespace rein::testing {
namespace {

class ReadersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = absl::StrCat(getenv("TEST_TMPDIR"), "/",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    mkdir(dir_.c_str(), 0755);
    mkdir((dir_ + "/workspaces").c_str(), 0755);
    mkdir((dir_ + "/workspaces/repo").c_str(), 0755);
    std::ofstream(dir_ + "/workspaces/repo/README.md") << "# repo\nTODO: nothing\n";
    tokens_ = dir_ + "/tokens";
    ASSERT_TRUE(WriteTokensFile(
        tokens_, {{"alice-secret", "alice operator,reviewer"}, {"bob-secret", "bob viewer"}}));
  }

  void Boot() {
    Cluster::Options options;
    options.dir = dir_;
    options.script_json = ThreeStepScript(/*delay_ms=*/0);
    options.router_flags = {"--auth_tokens_file=" + tokens_, "--max_watch_streams_per_principal=2"};
    options.token = "alice-secret";
    cluster_ = std::make_unique<Cluster>(options);
    ASSERT_TRUE(cluster_->Start()) << cluster_->Logs();
  }

  // A run paused after its plan, so that streams on it stay open.
  std::string PausedRun() {
    rein::v1::RunSpec spec;
    spec.set_goal("inspect the repo");
    spec.set_workspace("repo");
    spec.add_pause_points(rein::v1::AFTER_PLAN);
    absl::StatusOr<rein::v1::Run> run = cluster_->StartRun(spec);
    EXPECT_TRUE(run.ok()) << run.status();
    if (!run.ok()) return "";
    absl::StatusOr<rein::v1::Run> paused =
        cluster_->WaitForStage(run->run_id(), rein::v1::PAUSED, absl::Seconds(30));
    EXPECT_TRUE(paused.ok() && paused->state().stage() == rein::v1::PAUSED) << cluster_->Logs();
    return run->run_id();
  }

  // One WatchRun stream of `token`'s principal, read until it ends.
  struct Stream {
    grpc::ClientContext context;
    std::unique_ptr<grpc::ClientReader<rein::v1::RunEvent>> reader;
    int events = 0;
    // Reads until the stream ends; returns its status.
    grpc::Status Drain() {
      rein::v1::RunEvent event;
      while (reader->Read(&event)) ++events;
      return reader->Finish();
    }
  };

  std::unique_ptr<Stream> Watch(const std::string& run_id, const std::string& token) {
    auto stream = std::make_unique<Stream>();
    stream->context.AddMetadata("authorization", "Bearer " + token);
    stream->context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    rein::v1::WatchRunRequest request;
    request.set_run_id(run_id);
    stream->reader = cluster_->router()->WatchRun(&stream->context, request);
    return stream;
  }

  std::string dir_, tokens_;
  std::unique_ptr<Cluster> cluster_;
};

TEST_F(ReadersTest, WatchStreamsAreCappedPerPrincipal) {
  Boot();
  const std::string run_id = PausedRun();
  ASSERT_FALSE(run_id.empty());
  std::unique_ptr<Stream> first = Watch(run_id, "alice-secret");
  std::unique_ptr<Stream> second = Watch(run_id, "alice-secret");
  rein::v1::RunEvent event;
  ASSERT_TRUE(first->reader->Read(&event));  // both open, the run's log streaming
  ASSERT_TRUE(second->reader->Read(&event));
  std::unique_ptr<Stream> third = Watch(run_id, "alice-secret");
  const grpc::Status refused = third->Drain();
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << refused.error_message();
  EXPECT_NE(refused.error_message().find("--max_watch_streams_per_principal"), std::string::npos)
      << refused.error_message();
  // Another principal is not locked out by alice's streams.
  std::unique_ptr<Stream> bobs = Watch(run_id, "bob-secret");
  EXPECT_TRUE(bobs->reader->Read(&event));
  for (Stream* s : {first.get(), second.get(), bobs.get()}) s->context.TryCancel();
  for (Stream* s : {first.get(), second.get(), bobs.get()}) s->Drain();
  // Ended streams give their places back.
  absl::SleepFor(absl::Milliseconds(200));
  std::unique_ptr<Stream> again = Watch(run_id, "alice-secret");
  EXPECT_TRUE(again->reader->Read(&event));
  again->context.TryCancel();
  again->Drain();
}

TEST_F(ReadersTest, ARevokedTokenEndsItsOpenStreams) {
  Boot();
  const std::string run_id = PausedRun();
  ASSERT_FALSE(run_id.empty());
  std::unique_ptr<Stream> bobs = Watch(run_id, "bob-secret");
  rein::v1::RunEvent event;
  ASSERT_TRUE(bobs->reader->Read(&event));
  const absl::Time revoked = absl::Now();
  ASSERT_TRUE(WriteTokensFile(tokens_, {{"alice-secret", "alice operator,reviewer"}}));
  const grpc::Status ended = bobs->Drain();
  EXPECT_EQ(ended.error_code(), grpc::StatusCode::UNAUTHENTICATED) << ended.error_message();
  EXPECT_LT(absl::Now() - revoked, absl::Seconds(10));
  // The token is refused from then on; alice's still works.
  std::unique_ptr<Stream> refused = Watch(run_id, "bob-secret");
  EXPECT_EQ(refused->Drain().error_code(), grpc::StatusCode::UNAUTHENTICATED);
  std::unique_ptr<Stream> alices = Watch(run_id, "alice-secret");
  EXPECT_TRUE(alices->reader->Read(&event));
  alices->context.TryCancel();
  alices->Drain();
}

}  // namespace
}  // namespace rein::testing
