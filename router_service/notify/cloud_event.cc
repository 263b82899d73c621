// The CloudEvents 1.0 JSON body of a notice.
#include "router_service/notify/cloud_event.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"
#include "router_service/notify/webhook_config.h"

namespace rein {
namespace {

std::string Rfc3339(const google::protobuf::Timestamp& ts) {
  const absl::Time t = absl::FromUnixSeconds(ts.seconds()) + absl::Nanoseconds(ts.nanos());
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E*SZ", t, absl::UTCTimeZone());
}

nlohmann::json UsageJson(const rein::v1::Usage& usage) {
  return {{"input_tokens", usage.input_tokens()},
          {"output_tokens", usage.output_tokens()},
          {"cache_read_input_tokens", usage.cache_read_input_tokens()},
          {"cache_creation_input_tokens", usage.cache_creation_input_tokens()}};
}

}  // namespace

std::string NoticeType(const Notification& notice) {
  if (notice.event.has_paused()) return kTypePaused;
  switch (notice.event.finished().outcome().status()) {
    case rein::v1::FAILED: return kTypeFailed;
    case rein::v1::CANCELLED: return kTypeCancelled;
    default: return kTypeFinished;
  }
}

std::string CloudEventJson(const Notification& notice, const NoticeRun& run,
                           absl::string_view source, absl::string_view console_url) {
  const rein::v1::RunState& state = notice.state;
  nlohmann::json data = {
      {"run_id", notice.run_id},
      {"seq", notice.seq},
      {"goal", run.spec.goal()},
      {"stage", rein::v1::Stage_Name(state.stage())},
      {"owner", run.principal},
      {"iteration", state.iteration()},
      {"usage", UsageJson(state.usage())},
      {"cost_usd", state.cost_used_usd()},
  };
  nlohmann::json labels = nlohmann::json::object();
  for (const auto& [key, value] : run.spec.labels()) labels[key] = value;
  data["labels"] = labels;
  if (notice.event.has_paused()) {
    const rein::v1::Pause& pause = notice.event.paused().pause();
    nlohmann::json p = {{"reason", rein::v1::PauseReason_Name(pause.reason())},
                        {"detail", pause.detail()}};
    if (pause.point() != rein::v1::PAUSE_POINT_UNSPECIFIED) {
      p["point"] = rein::v1::PausePoint_Name(pause.point());
    }
    if (!pause.question().empty()) p["question"] = pause.question();
    if (pause.has_pending_call()) {
      p["pending_call"] = {{"call_id", pause.pending_call().call_id()},
                           {"tool", pause.pending_call().tool()},
                           {"args_json", pause.pending_call().args_json()},
                           {"mutating", pause.pending_call().mutating()}};
    }
    data["pause"] = p;
  } else {
    const rein::v1::Outcome& outcome = notice.event.finished().outcome();
    data["outcome"] = {{"status", rein::v1::Stage_Name(outcome.status())},
                       {"reason", rein::v1::TerminationReason_Name(outcome.reason())},
                       {"message", outcome.message()}};
    if (outcome.has_usage()) data["usage"] = UsageJson(outcome.usage());
    if (outcome.cost_usd() != 0) data["cost_usd"] = outcome.cost_usd();
  }
  if (!console_url.empty())
    data["console_url"] =
        absl::StrCat(console_url, "/#/run/", notice.run_id);  // the console's route
  nlohmann::json event = {
      {"specversion", "1.0"},
      {"id", notice.notice_id},
      {"source", std::string(source)},
      {"type", NoticeType(notice)},
      {"subject", notice.run_id},
      {"time", Rfc3339(notice.event.time())},
      {"datacontenttype", "application/json"},
      {"data", data},
  };
  // Replacement characters for bytes that are not UTF-8 (a goal is any bytes), never a throw.
  return event.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace rein
