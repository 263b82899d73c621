// End-to-end tests of webhooks (docs/WEBHOOKS.md): the real router posts signed CloudEvents to
// a receiver on loopback for every committed pause and end, also across SIGKILLs.
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "router_service/notify/testing/webhook_receiver.h"
#include "tests/cluster.h"

namespace rein::testing {
namespace {

using rein::v1::RunEvent;
using rein::v1::RunSpec;

constexpr char kKey[] = "e2e-webhook-key";

class WebhooksEndToEndTest : public ::testing::Test {
 protected:
  void Boot(const std::string& script) {
    const std::string base = getenv("TEST_TMPDIR") ? getenv("TEST_TMPDIR") : "/tmp";
    dir_ = absl::StrCat(base, "/webhooks-",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    mkdir(dir_.c_str(), 0755);
    ASSERT_TRUE(receiver_.Start().ok());
    std::ofstream(dir_ + "/hook.key") << kKey << "\n";
    Cluster::Options options;
    options.dir = dir_;
    options.script_json = script;
    options.router_flags = {
        absl::StrCat("--webhook_url=", receiver_.url(), ",secret_file=", dir_, "/hook.key"),
        absl::StrCat("--webhook_allow=", receiver_.url("/runs/"), ",secret_file=", dir_,
                     "/hook.key"),
        "--console_url=http://console.example", "--webhook_timeout=2s"};
    cluster_ = std::make_unique<Cluster>(options);
    const std::string ws = dir_ + "/workspaces/repo";
    mkdir((dir_ + "/workspaces").c_str(), 0755);
    mkdir(ws.c_str(), 0755);
    std::ofstream(ws + "/README.md") << "# repo\nTODO: write docs\n";
    ASSERT_TRUE(cluster_->Start()) << cluster_->Logs();
  }

  RunSpec Spec() {
    RunSpec spec;
    spec.set_goal("inspect the repo");
    spec.set_workspace("repo");
    spec.mutable_limits()->mutable_deadline()->set_seconds(120);
    return spec;
  }

  std::vector<RunEvent> WatchAll(const std::string& run_id) {
    std::vector<RunEvent> events;
    grpc::Status status = cluster_->Watch(run_id, 0, absl::Seconds(90), &events);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return events;
  }

  // The notice ids ("<run>.<seq>") a run's committed log calls for: its paused and finished
  // events.
  static std::set<std::string> Expected(const std::string& run_id,
                                        const std::vector<RunEvent>& events) {
    std::set<std::string> ids;
    for (const RunEvent& e : events) {
      if (e.has_paused() || e.has_finished()) ids.insert(absl::StrCat(run_id, ".", e.seq()));
    }
    return ids;
  }

  std::string dir_;
  WebhookReceiver receiver_{kKey};
  std::unique_ptr<Cluster> cluster_;
};

TEST_F(WebhooksEndToEndTest, EveryPauseAndTheEndAreNotifiedSignedToBothEndpoints) {
  Boot(ThreeStepScript(0));
  RunSpec spec = Spec();
  spec.add_pause_points(rein::v1::AFTER_PLAN);
  spec.add_notify(receiver_.url("/runs/team-a"));
  absl::StatusOr<rein::v1::Run> run = cluster_->StartRun(spec);
  ASSERT_TRUE(run.ok()) << run.status();
  absl::StatusOr<rein::v1::Run> paused =
      cluster_->WaitForStage(run->run_id(), rein::v1::PAUSED, absl::Seconds(30));
  ASSERT_TRUE(paused.ok()) << paused.status();
  ASSERT_EQ(paused->state().stage(), rein::v1::PAUSED);
  ASSERT_TRUE(cluster_->Approve(*paused).ok());
  const std::vector<RunEvent> events = WatchAll(run->run_id());
  const std::set<std::string> expected = Expected(run->run_id(), events);
  ASSERT_EQ(expected.size(), 2u);  // the pause and the end
  // Each notice to both endpoints: the router's own and the run's.
  ASSERT_TRUE(receiver_.AwaitCount(4, absl::Seconds(30))) << cluster_->Logs();
  absl::SleepFor(absl::Milliseconds(500));
  std::map<std::string, std::multiset<std::string>> paths;  // id -> paths
  for (const ReceivedWebhook& w : receiver_.received()) {
    EXPECT_TRUE(w.signature_valid) << w.headers.at("webhook-id");
    paths[w.headers.at("webhook-id")].insert(w.path);
    const nlohmann::json body = nlohmann::json::parse(w.body);
    EXPECT_EQ(body["subject"], run->run_id());
    EXPECT_EQ(body["data"]["console_url"],
              absl::StrCat("http://console.example/#/run/", run->run_id()));
  }
  ASSERT_EQ(paths.size(), 2u);
  for (const std::string& id : expected) {
    EXPECT_EQ(paths[id], (std::multiset<std::string>{"/hook", "/runs/team-a"})) << id;
  }
  const std::string pause_id = *expected.begin();
  for (const ReceivedWebhook& w : receiver_.received()) {
    const nlohmann::json body = nlohmann::json::parse(w.body);
    EXPECT_EQ(body["type"],
              w.headers.at("webhook-id") == absl::StrCat(run->run_id(), ".", events.back().seq())
                  ? "dev.rein.run.finished"
                  : "dev.rein.run.paused");
  }
}

TEST_F(WebhooksEndToEndTest, ARunUrlOutsideTheAllowListIsRefusedAtStart) {
  Boot(ThreeStepScript(0));
  RunSpec spec = Spec();
  spec.add_notify("http://169.254.169.254/latest/meta-data");
  absl::StatusOr<rein::v1::Run> run = cluster_->StartRun(spec);
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(run.status().message().find("spec.notify[0]"), std::string::npos) << run.status();
  // Under the prefix as a string, outside it once libcurl removed the dot segments.
  for (const std::string& escape : {receiver_.url("/runs/../admin"),
                                    receiver_.url("/runs/%2e%2e/admin"), receiver_.url("/runsx")}) {
    RunSpec climbing = Spec();
    climbing.add_notify(escape);
    run = cluster_->StartRun(climbing);
    ASSERT_FALSE(run.ok()) << escape;
    EXPECT_EQ(run.status().code(), absl::StatusCode::kInvalidArgument) << escape;
  }
}

// SIGKILL the router again and again while runs pause and end and the receiver is slow to
// answer: every committed pause and end is notified at least once, duplicates share their
// webhook-id, and no notice names an event the log does not hold.
TEST_F(WebhooksEndToEndTest, AKillStormLosesNoNoticeAndInventsNone) {
  Boot(ThreeStepScript(150));
  std::vector<std::string> run_ids;
  for (int i = 0; i < 4; ++i) {
    RunSpec spec = Spec();
    spec.add_pause_points(rein::v1::AFTER_PLAN);
    absl::StatusOr<rein::v1::Run> run = cluster_->StartRun(spec);
    ASSERT_TRUE(run.ok()) << run.status();
    run_ids.push_back(run->run_id());
  }
  // First the receiver is down, so every notice committed meanwhile is still to send when
  // the router is killed; then it is back but slow, so kills land between POSTs and records.
  const int port = receiver_.port();
  receiver_.Stop();
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> pause_ms(100, 900);
  for (int kill = 0; kill < 8; ++kill) {
    if (kill == 4) {
      for (int i = 0; i < 400; ++i) receiver_.Enqueue({200, {}, "", absl::Milliseconds(300)});
      ASSERT_TRUE(receiver_.Start(port).ok());
    }
    absl::SleepFor(absl::Milliseconds(pause_ms(rng)));
    ASSERT_NE(cluster_->KillRouter(SIGKILL), -1);
    ASSERT_TRUE(cluster_->StartRouter()) << cluster_->Logs();
    // Approve whatever waits, so that runs move on to their end between kills.
    for (const std::string& id : run_ids) {
      absl::StatusOr<rein::v1::Run> run = cluster_->GetRun(id);
      if (run.ok() && run->state().stage() == rein::v1::PAUSED) {
        cluster_->Approve(*run).IgnoreError();
      }
    }
  }
  std::set<std::string> expected;
  for (const std::string& id : run_ids) {
    for (int i = 0; i < 50; ++i) {  // approve until the run ends
      absl::StatusOr<rein::v1::Run> run = cluster_->GetRun(id);
      ASSERT_TRUE(run.ok()) << run.status();
      const rein::v1::Stage stage = run->state().stage();
      if (stage == rein::v1::FINISHED || stage == rein::v1::FAILED) break;
      if (stage == rein::v1::PAUSED) cluster_->Approve(*run).IgnoreError();
      absl::SleepFor(absl::Milliseconds(100));
    }
    const std::vector<RunEvent> events = WatchAll(id);
    ASSERT_FALSE(events.empty());
    ASSERT_TRUE(events.back().has_finished()) << cluster_->Logs();
    for (const std::string& notice : Expected(id, events)) expected.insert(notice);
  }
  // Everything committed arrives.
  const absl::Time end = absl::Now() + absl::Seconds(60);
  std::set<std::string> got;
  while (absl::Now() < end) {
    got.clear();
    for (const ReceivedWebhook& w : receiver_.received()) got.insert(w.headers.at("webhook-id"));
    if (std::includes(got.begin(), got.end(), expected.begin(), expected.end())) break;
    absl::SleepFor(absl::Milliseconds(200));
  }
  for (const std::string& id : expected) EXPECT_EQ(got.count(id), 1u) << id << " never arrived";
  // Nothing else: no notice of a transition that did not commit.
  for (const std::string& id : got) EXPECT_EQ(expected.count(id), 1u) << id << " was invented";
  // Duplicates (a kill between a POST and its record) carry one id and one body.
  std::map<std::string, std::string> bodies;
  for (const ReceivedWebhook& w : receiver_.received()) {
    EXPECT_TRUE(w.signature_valid);
    auto [it, first] = bodies.emplace(w.headers.at("webhook-id"), w.body);
    if (!first) {
      EXPECT_EQ(it->second, w.body) << it->first;
    }
  }
  std::cerr << "kill storm: " << expected.size() << " notices committed, "
            << receiver_.received().size() << " POSTs received\n";
}

}  // namespace
}  // namespace rein::testing
