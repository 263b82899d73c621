// Runs one parsed reinctl command against a Router stub and maps the outcome to an exit code.
#include "cli/command_runner.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <system_error>
#include <thread>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "cli/child_tree.h"
#include "cli/event_line.h"
#include "cli/format.h"
#include "cli/inputs.h"
#include "cli/notice_table.h"
#include "cli/requests.h"
#include "cli/run_diff.h"
#include "grpcpp/client_context.h"
#include "router_service/price_table.h"
#include "router_service/replay.h"

namespace rein::cli {
namespace {

constexpr char kClearLine[] = "\r\033[K";
constexpr int kMaxListPages = 100000;

bool IsTerminal(v1::Stage stage) {
  return stage == v1::FINISHED || stage == v1::FAILED || stage == v1::CANCELLED;
}

}  // namespace

CommandRunner::CommandRunner(v1::Router::StubInterface* stub, std::ostream& out, std::ostream& err,
                             RunnerOptions options)
    : stub_(stub), out_(out), err_(err), options_(std::move(options)) {}

int CommandRunner::Run(const Command& command) {
  router_flag_ = command.router == kDefaultRouter ? "" : absl::StrCat(" --router=", command.router);
  switch (command.subcommand) {
    case Subcommand::kHelp: out_ << Usage(command.help_topic); return kExitFinished;
    case Subcommand::kStart: return Start(command);
    case Subcommand::kWatch:
      return Watch(command.run_id, command.after_seq, /*min_version=*/0, command.json);
    case Subcommand::kApprove:
    case Subcommand::kReject:
    case Subcommand::kAnswer:
    case Subcommand::kEditPlan:
    case Subcommand::kEditCall: return Review(command);
    case Subcommand::kCancel: return Cancel(command);
    case Subcommand::kList: return List(command);
    case Subcommand::kShow: return Show(command);
    case Subcommand::kExport: return Export(command);
    case Subcommand::kTools: return Tools(command);
    case Subcommand::kFork: return Fork(command);
    case Subcommand::kReplay: return Replay(command);
    case Subcommand::kDiff: return Diff(command);
    case Subcommand::kQuota: return Quota(command);
    case Subcommand::kNotifications: return Notifications(command);
  }
  return UsageError("unknown subcommand");
}

void CommandRunner::SetDeadline(grpc::ClientContext& context, absl::Duration timeout) const {
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::milliseconds(absl::ToInt64Milliseconds(timeout)));
}

grpc::Status CommandRunner::GetRun(const std::string& run_id, v1::Run* run) {
  grpc::ClientContext context;
  SetDeadline(context, options_.rpc_timeout);
  v1::GetRunRequest request;
  request.set_run_id(run_id);
  return stub_->GetRun(&context, request, run);
}

// The executor is asked directly: it owns the registry (built-in, declared and MCP tools), and
// the router has no tool list of its own outside a run (a run records its own at start).
int CommandRunner::Tools(const Command& command) {
  if (options_.executor == nullptr) return UsageError("tools: no executor to ask");
  grpc::ClientContext context;
  SetDeadline(context, options_.rpc_timeout);
  v1::ListToolsRequest request;
  request.set_namespace_(command.namespace_name);
  v1::ListToolsResponse response;
  grpc::Status status = options_.executor->ListTools(&context, request, &response);
  if (!status.ok()) {
    return RpcError(absl::StrCat("ListTools (executor ", command.executor, ")"), status);
  }
  out_ << (command.json ? PrettyMessageJson(response) : ToolTable(response));
  return kExitFinished;
}

int CommandRunner::RpcError(absl::string_view rpc, const grpc::Status& status) {
  err_ << "reinctl: " << rpc << ": "
       << absl::StatusCodeToString(static_cast<absl::StatusCode>(status.error_code())) << ": "
       << status.error_message() << "\n";
  return kExitRpcError;
}

int CommandRunner::UsageError(absl::string_view message) {
  err_ << "reinctl: " << message << "\n";
  return kExitUsage;
}

int CommandRunner::Start(const Command& command) {
  std::string spec_json;
  if (command.start.spec_file.has_value()) {
    absl::StatusOr<std::string> text = ReadFileForFlag("spec", *command.start.spec_file);
    if (!text.ok()) return UsageError(text.status().message());
    spec_json = std::move(*text);
    if (spec_json.empty()) return UsageError("--spec: the file is empty");
  }
  std::optional<std::string> goal_text;
  if (command.start.goal_file.has_value()) {
    absl::StatusOr<std::string> text = ReadFileForFlag("goal_file", *command.start.goal_file);
    if (!text.ok()) return UsageError(text.status().message());
    goal_text = std::move(*text);
  }
  absl::StatusOr<v1::StartRunRequest> request =
      BuildStartRunRequest(command.start, spec_json, std::move(goal_text));
  if (!request.ok()) return UsageError(request.status().message());

  v1::Run run;
  grpc::ClientContext context;
  SetDeadline(context, options_.rpc_timeout);
  grpc::Status status = stub_->StartRun(&context, *request, &run);
  if (!status.ok()) return RpcError("StartRun", status);
  if (command.json) {
    out_ << JsonLine(run) << "\n";
  } else {
    out_ << run.run_id() << "\n";
  }
  out_.flush();
  if (!command.watch) return kExitFinished;
  return Watch(run.run_id(), /*after_seq=*/0, /*min_version=*/0, command.json);
}

int CommandRunner::Conclude(const v1::Run& run, bool json) {
  std::ostream& text_out = json ? err_ : out_;
  if (run.state().stage() == v1::PAUSED) {
    text_out << ReviewHint(run, router_flag_);
    if (!options_.console_url.empty()) {
      text_out << "or in the console: " << options_.console_url << "/#/run/" << run.run_id()
               << "\n";
    }
    text_out.flush();
    return kExitPaused;
  }
  text_out << FinalReport(run);
  text_out.flush();
  const v1::Stage status = run.state().outcome().status() != v1::STAGE_UNSPECIFIED
                               ? run.state().outcome().status()
                               : run.state().stage();
  return status == v1::FINISHED ? kExitFinished : kExitFailed;
}

int CommandRunner::Watch(const std::string& run_id, int64_t after_seq, int64_t min_version,
                         bool json) {
  v1::Run run;
  grpc::Status status = GetRun(run_id, &run);
  if (!status.ok()) return RpcError("GetRun", status);
  const bool initially_paused = run.state().stage() == v1::PAUSED;

  grpc::ClientContext context;
  v1::WatchRunRequest request;
  request.set_run_id(run_id);
  request.set_after_seq(after_seq);
  std::unique_ptr<grpc::ClientReaderInterface<v1::RunEvent>> reader =
      stub_->WatchRun(&context, request);

  // Shared with the ticker thread, which redraws the progress line and notices a run that
  // was already waiting when nothing arrives.
  absl::Mutex mu;
  bool done = false;
  bool any_event = false;
  bool idle_cancelled = false;
  bool progress_shown = false;
  Progress progress = ProgressOf(run, absl::Now());
  const absl::Time opened = absl::Now();
  auto draw_progress = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    if (!options_.live_progress) return;
    if (!IsTerminal(progress.stage)) {
      progress.elapsed = ProgressOf(run, absl::Now()).elapsed;
    }
    err_ << kClearLine << ProgressLine(progress) << std::flush;
    progress_shown = true;
  };
  auto clear_progress = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    if (progress_shown) err_ << kClearLine << std::flush;
    progress_shown = false;
  };
  std::thread ticker;
  if (options_.live_progress || initially_paused) {
    ticker = std::thread([&] {
      absl::MutexLock lock(&mu);
      while (!done) {
        mu.AwaitWithTimeout(absl::Condition(&done), absl::Seconds(1) < options_.paused_idle_grace
                                                        ? absl::Seconds(1)
                                                        : options_.paused_idle_grace);
        if (done) break;
        if (initially_paused && !any_event && absl::Now() - opened >= options_.paused_idle_grace) {
          idle_cancelled = true;
          context.TryCancel();
          break;
        }
        draw_progress();
      }
    });
  }
  {
    absl::MutexLock lock(&mu);
    draw_progress();
  }

  int64_t last_seq = after_seq;
  bool ended = false;    // a finished event arrived
  bool waiting = false;  // the run is PAUSED with nothing after the last event
  int rpc_failure = 0;
  v1::RunEvent event;
  while (reader->Read(&event)) {
    {
      absl::MutexLock lock(&mu);
      any_event = true;
      last_seq = std::max(last_seq, event.seq());
      if (event.version() < min_version) continue;
      clear_progress();
      out_ << (json ? JsonLine(event) : EventLine(event)) << "\n" << std::flush;
      if (event.has_stage_changed()) progress.stage = event.stage_changed().to();
    }
    if (event.has_finished()) {
      ended = true;
      break;
    }
    if (event.has_paused() || (options_.live_progress && event.has_stage_changed())) {
      v1::Run latest;
      grpc::Status get_status = GetRun(run_id, &latest);
      if (!get_status.ok()) {
        if (event.has_paused()) {
          rpc_failure = RpcError("GetRun", get_status);
          break;
        }
      } else {
        absl::MutexLock lock(&mu);
        run = latest;
        progress = ProgressOf(run, absl::Now());
        if (event.has_paused() && latest.state().stage() == v1::PAUSED &&
            latest.state().version() <= event.version()) {
          waiting = true;
          break;
        }
      }
    }
    absl::MutexLock lock(&mu);
    draw_progress();
  }
  {
    absl::MutexLock lock(&mu);
    done = true;
    clear_progress();
  }
  if (ticker.joinable()) ticker.join();
  if (ended || waiting || rpc_failure != 0) context.TryCancel();
  grpc::Status finish = reader->Finish();
  if (rpc_failure != 0) return rpc_failure;

  if (!ended && !waiting && !idle_cancelled && !finish.ok()) {
    int code = RpcError("WatchRun", finish);
    err_ << "reinctl: watch again with: reinctl" << router_flag_ << " watch " << run_id
         << " --after_seq=" << last_seq << "\n";
    return code;
  }
  if (!waiting) {
    // The final report (or a run that waits although its stream ended) needs the state.
    status = GetRun(run_id, &run);
    if (!status.ok()) return RpcError("GetRun", status);
  }
  if (run.state().stage() == v1::PAUSED || IsTerminal(run.state().stage())) {
    return Conclude(run, json);
  }
  err_ << "reinctl: WatchRun: the stream ended while the run is "
       << v1::Stage_Name(run.state().stage()) << "; watch again with: reinctl" << router_flag_
       << " watch " << run_id << " --after_seq=" << last_seq << "\n";
  return kExitRpcError;
}

int CommandRunner::Review(const Command& command) {
  std::vector<v1::SubTask> plan;
  if (command.subcommand == Subcommand::kEditPlan) {
    absl::StatusOr<std::string> text = ReadFileForFlag("plan_file", command.plan_file);
    if (!text.ok()) return UsageError(text.status().message());
    absl::StatusOr<std::vector<v1::SubTask>> parsed = ParsePlanJson(*text);
    if (!parsed.ok()) return UsageError(parsed.status().message());
    plan = std::move(*parsed);
  }
  absl::StatusOr<v1::Review> review = BuildReview(command, plan);
  if (!review.ok()) return UsageError(review.status().message());
  review->set_reviewer(options_.reviewer);

  int64_t expected_version = 0;
  if (command.expected_version.has_value()) {
    expected_version = *command.expected_version;
  } else {
    v1::Run current;
    grpc::Status status = GetRun(command.run_id, &current);
    if (!status.ok()) return RpcError("GetRun", status);
    if (current.state().stage() != v1::PAUSED) {
      err_ << "reinctl: run " << command.run_id << " is " << v1::Stage_Name(current.state().stage())
           << ", not PAUSED; sending the review anyway\n";
    }
    expected_version = current.state().version();
  }
  const v1::ResumeRunRequest request =
      BuildResumeRunRequest(command, expected_version, *std::move(review));

  v1::Run run;
  grpc::ClientContext context;
  SetDeadline(context, options_.rpc_timeout);
  grpc::Status status = stub_->ResumeRun(&context, request, &run);
  if (!status.ok()) {
    if (status.error_code() == grpc::StatusCode::FAILED_PRECONDITION) {
      err_ << "reinctl: the run changed since version " << request.expected_version()
           << " (or is not paused); check it with: reinctl" << router_flag_ << " show "
           << command.run_id << "\n";
    }
    return RpcError("ResumeRun", status);
  }
  if (command.json) {
    out_ << JsonLine(run) << "\n";
  } else {
    out_ << "run " << run.run_id() << ": " << v1::Stage_Name(run.state().stage()) << " (version "
         << run.state().version() << ")\n";
  }
  out_.flush();
  if (!command.watch) return kExitFinished;
  return Watch(run.run_id(), /*after_seq=*/0, /*min_version=*/run.state().version(), command.json);
}

int CommandRunner::Cancel(const Command& command) {
  const v1::CancelRunRequest request = BuildCancelRunRequest(command);
  v1::Run run;
  grpc::ClientContext context;
  SetDeadline(context, options_.rpc_timeout * 5);
  grpc::Status status = stub_->CancelRun(&context, request, &run);
  if (!status.ok()) return RpcError("CancelRun", status);
  out_ << "run " << run.run_id() << ": " << v1::Stage_Name(run.state().stage());
  if (run.state().outcome().reason() != v1::TERMINATION_REASON_UNSPECIFIED) {
    out_ << " (" << v1::TerminationReason_Name(run.state().outcome().reason()) << ")";
  }
  out_ << "\n" << std::flush;
  return kExitFinished;
}

int CommandRunner::Quota(const Command& command) {
  v1::GetQuotaRequest request;
  request.set_namespace_(command.namespace_name);
  v1::QuotaReport report;
  grpc::ClientContext context;
  SetDeadline(context, options_.rpc_timeout);
  grpc::Status status = stub_->GetQuota(&context, request, &report);
  if (!status.ok()) return RpcError("GetQuota", status);
  if (command.json) {
    out_ << PrettyMessageJson(report) << "\n" << std::flush;
    return kExitFinished;
  }
  out_ << "namespace " << report.namespace_() << "\n";
  if (report.quotas().empty()) out_ << "  no quotas: unlimited\n";
  for (const v1::QuotaUse& q : report.quotas()) {
    out_ << "  " << q.name() << ": " << q.used() << " of " << q.limit();
    if (q.has_frees_at()) {
      out_ << ", spent; frees at " << FormatTime(q.frees_at(), absl::UTCTimeZone()) << " UTC";
    }
    out_ << "\n";
  }
  out_ << std::flush;
  return kExitFinished;
}

int CommandRunner::Notifications(const Command& command) {
  v1::ListNotificationsRequest request;
  request.set_status(command.notice_status);
  request.set_namespace_(command.namespace_name);
  request.set_page_size(command.page_size);
  v1::ListNotificationsResponse response;
  grpc::ClientContext context;
  SetDeadline(context, options_.rpc_timeout);
  grpc::Status status = stub_->ListNotifications(&context, request, &response);
  if (!status.ok()) return RpcError("ListNotifications", status);
  out_ << (command.json ? PrettyMessageJson(response) + "\n"
                        : NoticeTable(response, command.notice_status, options_.zone))
       << std::flush;
  return kExitFinished;
}

int CommandRunner::List(const Command& command) {
  std::vector<v1::Run> runs;
  std::string page_token = command.page_token;
  std::set<std::string> seen_tokens;
  for (int page = 0; page < kMaxListPages; ++page) {
    const v1::ListRunsRequest request = BuildListRunsRequest(command, page_token);
    v1::ListRunsResponse response;
    grpc::ClientContext context;
    SetDeadline(context, options_.rpc_timeout);
    grpc::Status status = stub_->ListRuns(&context, request, &response);
    if (!status.ok()) return RpcError("ListRuns", status);
    for (v1::Run& run : *response.mutable_runs()) runs.push_back(std::move(run));
    page_token = response.next_page_token();
    if (page_token.empty() || !command.all_pages) break;
    if (!seen_tokens.insert(page_token).second) {
      err_ << "reinctl: ListRuns returned the page token \"" << page_token
           << "\" twice; stopping\n";
      break;
    }
  }
  if (command.json) {
    for (const v1::Run& run : runs) out_ << JsonLine(run) << "\n";
  } else {
    out_ << RunTable(runs, options_.zone, command.show_usage);
  }
  out_.flush();
  if (!command.all_pages && !page_token.empty()) {
    err_ << "more runs: reinctl" << router_flag_ << " list --page_token=" << page_token
         << " (or --all)\n";
  }
  return kExitFinished;
}

int CommandRunner::Show(const Command& command) {
  v1::Run run;
  grpc::Status status = GetRun(command.run_id, &run);
  if (!status.ok()) return RpcError("GetRun", status);
  if (command.json) {
    out_ << PrettyMessageJson(run);
  } else {
    // The children's tree: each started child read once, down to kMaxTreeDepth levels; one
    // that cannot be read is shown as its parent last saw it.
    std::map<std::string, v1::Run> descendants;
    std::vector<std::pair<const v1::Run*, int>> todo = {{&run, 0}};
    while (!todo.empty() && descendants.size() < 100) {
      auto [parent, depth] = todo.back();
      todo.pop_back();
      if (depth >= kMaxTreeDepth) continue;
      for (const v1::ChildRun& child : parent->children()) {
        if (child.run_id().empty() || descendants.count(child.run_id())) continue;
        v1::Run read;
        if (!GetRun(child.run_id(), &read).ok()) continue;
        auto it = descendants.emplace(child.run_id(), std::move(read)).first;
        todo.push_back({&it->second, depth + 1});
      }
    }
    out_ << RunSummary(run, options_.zone, descendants);
  }
  out_.flush();
  return kExitFinished;
}

int CommandRunner::Fork(const Command& command) {
  std::vector<v1::SubTask> plan;
  if (!command.fork.plan_file.empty()) {
    absl::StatusOr<std::string> text = ReadFileForFlag("plan_file", command.fork.plan_file);
    if (!text.ok()) return UsageError(text.status().message());
    absl::StatusOr<std::vector<v1::SubTask>> parsed = ParsePlanJson(*text);
    if (!parsed.ok()) return UsageError(parsed.status().message());
    if (parsed->empty()) return UsageError("--plan_file: the plan is empty");
    plan = std::move(*parsed);
  }
  v1::ForkRunRequest request = BuildForkRunRequest(command, plan);
  v1::Run run;
  grpc::ClientContext context;
  // A fork copies a workspace: give it longer than a plain call.
  SetDeadline(context, options_.rpc_timeout * 5);
  grpc::Status status = stub_->ForkRun(&context, request, &run);
  if (!status.ok()) return RpcError("ForkRun", status);
  if (command.json) {
    out_ << JsonLine(run) << "\n";
  } else {
    out_ << "forked " << command.run_id << " at seq " << run.state().forked_from().seq()
         << " (iteration " << run.state().forked_from().iteration() << ") into " << run.run_id()
         << "\n  workspace " << run.spec().workspace()
         << (request.workspace_at_fork() ? " (as it was at that point)" : " (as it is now)")
         << "\n  watch it: reinctl" << router_flag_ << " watch " << run.run_id() << "\n";
  }
  if (!command.watch) return kExitFinished;
  return Watch(run.run_id(), 0, run.state().version(), command.json);
}

grpc::Status CommandRunner::ReadRunAndLog(const std::string& run_id, v1::Run* run,
                                          std::vector<v1::RunEvent>* events) {
  grpc::Status status = GetRun(run_id, run);
  if (!status.ok()) return status;
  const bool ended = IsTerminal(run->state().stage());
  grpc::ClientContext context;
  // A run that has not ended keeps the stream open: take what it has logged so far.
  SetDeadline(context, ended ? options_.rpc_timeout : absl::Seconds(2));
  v1::WatchRunRequest request;
  request.set_run_id(run_id);
  std::unique_ptr<grpc::ClientReaderInterface<v1::RunEvent>> reader =
      stub_->WatchRun(&context, request);
  v1::RunEvent event;
  while (reader->Read(&event)) events->push_back(event);
  status = reader->Finish();
  if (!ended && status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
    return grpc::Status::OK;
  }
  return status;
}

int CommandRunner::Replay(const Command& command) {
  v1::Run run;
  std::vector<v1::RunEvent> events;
  grpc::Status status = ReadRunAndLog(command.run_id, &run, &events);
  if (!status.ok()) return RpcError("WatchRun", status);
  if (!command.out_dir.empty()) {
    std::ofstream file(command.out_dir, std::ios::trunc);
    file << JsonLine(run) << "\n";
    for (const v1::RunEvent& event : events) file << JsonLine(event) << "\n";
    if (!file) return UsageError(absl::StrCat("--save: cannot write ", command.out_dir));
  }
  StageRouterOptions router_options;
  if (!command.price_table.empty()) {
    absl::StatusOr<PriceTable> prices = PriceTable::Load(command.price_table);
    if (!prices.ok()) return UsageError(absl::StrCat("--price_table: ", prices.status().message()));
    router_options.prices = std::make_shared<const PriceTable>(*std::move(prices));
  }
  absl::StatusOr<ReplayResult> result = ReplayRun(StageRouter(router_options), run, events);
  if (!result.ok()) {
    err_ << "reinctl: replay: " << result.status().message() << "\n";
    return kExitFailed;
  }
  out_ << command.run_id << ": " << DescribeReplay(*result) << "\n";
  return result->divergence ? kExitFailed : kExitFinished;
}

int CommandRunner::Diff(const Command& command) {
  v1::Run a, b;
  std::vector<v1::RunEvent> a_events, b_events;
  grpc::Status status = ReadRunAndLog(command.run_id, &a, &a_events);
  if (!status.ok()) return RpcError("WatchRun", status);
  status = ReadRunAndLog(command.other_run_id, &b, &b_events);
  if (!status.ok()) return RpcError("WatchRun", status);
  out_ << FormatRunDiff(a, a_events, b, b_events);
  return kExitFinished;
}

int CommandRunner::Export(const Command& command) {
  std::error_code error;
  std::filesystem::create_directories(command.out_dir, error);
  if (error) {
    return UsageError(
        absl::StrCat("--out: cannot create directory ", command.out_dir, ": ", error.message()));
  }
  grpc::ClientContext context;
  v1::ExportRunRequest request;
  request.set_run_id(command.run_id);
  std::unique_ptr<grpc::ClientReaderInterface<v1::RunSnapshot>> reader =
      stub_->ExportRun(&context, request);
  v1::RunSnapshot snapshot;
  int written = 0;
  std::string write_error;
  while (reader->Read(&snapshot)) {
    const std::filesystem::path path =
        std::filesystem::path(command.out_dir) / SnapshotFileName(snapshot);
    std::ofstream file(path, std::ios::binary | std::ios::trunc);
    file << PrettyJson(snapshot.state_json());
    file.close();
    if (!file) {
      write_error = absl::StrCat("--out: cannot write ", path.string());
      context.TryCancel();
      break;
    }
    ++written;
  }
  grpc::Status status = reader->Finish();
  if (!write_error.empty()) return UsageError(write_error);
  if (!status.ok()) {
    err_ << "reinctl: wrote " << written << " snapshots to " << command.out_dir
         << " before the error\n";
    return RpcError("ExportRun", status);
  }
  out_ << "exported " << written << (written == 1 ? " snapshot" : " snapshots") << " of run "
       << command.run_id << " to " << command.out_dir << "\n"
       << std::flush;
  return kExitFinished;
}

}  // namespace rein::cli
