// webhook_bench: the delivery latency of webhook notices after their commit. A real SQLite
// outbox, the router's NotificationSender with its default options (a poll every 200 ms, four
// threads, libcurl) and a real HTTP receiver on loopback: the bench commits a pause every
// --interval_ms, as the router's loop would, and prints the time from each commit's return to
// the receiver's reading of its POST (p50, p99, max).
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "bench/bench_util.h"
#include "common/clock.h"
#include "router_service/notify/notification_sender.h"
#include "router_service/notify/testing/webhook_receiver.h"
#include "router_service/notify/webhook_config.h"
#include "router_service/notify/webhook_transport.h"
#include "router_service/store/sqlite_run_store.h"

ABSL_FLAG(int, notices, 300, "pauses committed (>= 1)");
ABSL_FLAG(int, interval_ms, 20, "time between two commits");
ABSL_FLAG(int, poll_interval_ms, 200, "the sender's idle poll (the router's: 200)");
ABSL_FLAG(int, concurrency, 4, "the sender's threads (the router's: 4)");

namespace {

using rein::bench::Percentile;
using rein::bench::PrintBench;

constexpr char kKey[] = "bench-key";

google::protobuf::Timestamp Now() {
  google::protobuf::Timestamp ts;
  ts.set_seconds(absl::ToUnixSeconds(absl::Now()));
  return ts;
}

// Creates run `id` and commits its pause; false (with a message) on an error.
bool CommitPause(rein::SqliteRunStore* store, const std::string& id) {
  rein::v1::Run run;
  run.set_run_id(id);
  run.mutable_spec()->set_goal("bench");
  run.mutable_state()->set_stage(rein::v1::PLANNING);
  run.mutable_state()->set_version(1);
  *run.mutable_created_at() = Now();
  *run.mutable_updated_at() = Now();
  if (absl::Status s = store->CreateRun(run, {}).status(); !s.ok()) {
    std::fprintf(stderr, "webhook_bench: %s\n", s.ToString().c_str());
    return false;
  }
  rein::v1::RunState paused = run.state();
  paused.set_version(2);
  paused.set_stage(rein::v1::PAUSED);
  rein::v1::RunEvent event;
  *event.mutable_time() = Now();
  event.mutable_paused()->mutable_pause()->set_reason(rein::v1::NEED_HUMAN);
  event.mutable_paused()->mutable_pause()->set_question("which file?");
  if (absl::Status s = store->Commit(id, 1, paused, {event}, std::nullopt, absl::Now()).status();
      !s.ok()) {
    std::fprintf(stderr, "webhook_bench: %s\n", s.ToString().c_str());
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const int notices = absl::GetFlag(FLAGS_notices);
  if (notices < 1) {
    std::fprintf(stderr, "webhook_bench: --notices: must be >= 1\n");
    return 2;
  }
  const std::string dir = absl::StrCat("/tmp/webhook_bench-", getpid());
  mkdir(dir.c_str(), 0755);
  absl::StatusOr<std::unique_ptr<rein::SqliteRunStore>> store =
      rein::SqliteRunStore::Open(dir + "/rein.db");
  if (!store.ok() || !(*store)->JoinFleet("bench", absl::Seconds(30)).ok()) {
    std::fprintf(stderr, "webhook_bench: cannot open the store in %s\n", dir.c_str());
    return 1;
  }
  rein::testing::WebhookReceiver receiver(kKey);
  if (!receiver.Start().ok()) return 1;
  const rein::WebhookConfig config(
      std::vector<rein::WebhookEndpoint>{{receiver.url(), kKey, {}, ""}}, {}, "");
  rein::CurlWebhookTransport transport;
  rein::NotificationSenderOptions options;
  options.poll_interval = absl::Milliseconds(absl::GetFlag(FLAGS_poll_interval_ms));
  options.concurrency = absl::GetFlag(FLAGS_concurrency);
  rein::NotificationSender sender(store->get(), store->get(), &config, &transport,
                                  rein::RealClock(), options);
  sender.Start();

  std::map<std::string, absl::Time> committed;  // notice id -> the commit's return
  for (int i = 0; i < notices; ++i) {
    const std::string id = absl::StrCat("run-", i);
    if (!CommitPause(store->get(), id)) return 1;
    committed[absl::StrCat(id, ".1")] = absl::Now();
    absl::SleepFor(absl::Milliseconds(absl::GetFlag(FLAGS_interval_ms)));
  }
  const bool all = receiver.AwaitCount(notices, absl::Seconds(120));
  sender.Stop();
  if (!all) {
    std::fprintf(stderr, "webhook_bench: %zu of %d notices arrived in 120 s\n",
                 receiver.received().size(), notices);
    return 1;
  }
  std::vector<double> ms;
  for (const rein::testing::ReceivedWebhook& w : receiver.received()) {
    auto it = committed.find(w.headers.at("webhook-id"));
    if (it == committed.end() || !w.signature_valid) {
      std::fprintf(stderr, "webhook_bench: an unexpected or unsigned notice\n");
      return 1;
    }
    ms.push_back(absl::ToDoubleMilliseconds(w.received - it->second));
  }
  const double max = *std::max_element(ms.begin(), ms.end());
  std::printf(
      "delivery after the commit (%d notices, one every %d ms, poll %d ms, %d threads): "
      "p50 %.1f ms  p99 %.1f ms  max %.1f ms\n",
      notices, absl::GetFlag(FLAGS_interval_ms), absl::GetFlag(FLAGS_poll_interval_ms),
      options.concurrency, Percentile(ms, 0.5), Percentile(ms, 0.99), max);
  PrintBench("webhook.delivery.p50", Percentile(ms, 0.5), "ms");
  PrintBench("webhook.delivery.p99", Percentile(ms, 0.99), "ms");
  PrintBench("webhook.delivery.max", max, "ms");
  return 0;
}
