// The rein.v1.Router gRPC service.
#include "router_service/router_grpc.h"

#include <algorithm>
#include <deque>
#include <memory>

#include "common/grpc_deadline.h"
#include "common/grpc_status.h"
#include "common/metrics.h"
#include "google/protobuf/util/json_util.h"
#include "grpcpp/alarm.h"
#include "router_service/connect/http_peer.h"
#include "trace/grpc_metadata.h"

namespace rein {
namespace {

template <typename T>
grpc::Status Reply(const absl::StatusOr<T>& result, T* response, const char* method) {
  Metrics::Global().Add("rein_router_rpcs_total", 1,
                        absl::StrCat("method=\"", method, "\",code=\"",
                                     absl::StatusCodeToString(result.status().code()), "\""));
  if (!result.ok()) return ToGrpcStatus(result.status());
  *response = *result;
  return grpc::Status::OK;
}

// A WatchRun refused before it started (auth, a bad request, an unknown run).
class RefusedWatch final : public grpc::ServerWriteReactor<rein::v1::RunEvent> {
 public:
  explicit RefusedWatch(const grpc::Status& status) { Finish(status); }
  void OnDone() override { delete this; }
};

// One WatchRun stream, holding no thread between events. Whatever wakes it (the start, gRPC
// taking a write, the run's next commit, a cancel, the recheck alarm) calls Drive; one thread at
// a time does the stream's work (Step) and the others only leave word for it (again_), so no
// lock of the stream is held across a call into the engine or gRPC, and a commit's wake-up
// costs the committing thread one short lock when the stream is busy. Owns itself (self_)
// until gRPC's OnDone; wake-ups hold it through a weak_ptr.
class RunWatch final : public grpc::ServerWriteReactor<rein::v1::RunEvent> {
 public:
  // How often a stream on a run another router drives reads again even when no commit notice
  // came (a notice can be lost; the store is the truth).
  static constexpr absl::Duration kRecheck = absl::Milliseconds(500);

  // With `auth` (null: no auth), the stream ends UNAUTHENTICATED once the token in
  // `authorization` is no longer in the token file for `caller` (its principal, roles or
  // namespace changed), checked at every wake-up and at least every `revalidate`. `ticket` is the
  // stream's slot in its principal's quota, given back at the end. Every event written carries
  // `namespace_name`, the run's.
  static RunWatch* Begin(RunEngine* engine, std::string run_id, int64_t after_seq,
                         std::unique_ptr<StreamQuota::Ticket> ticket, Authenticator* auth,
                         std::string authorization, Principal caller, absl::Duration revalidate,
                         std::string namespace_name) {
    auto watch = std::shared_ptr<RunWatch>(new RunWatch(engine, std::move(run_id), after_seq));
    watch->caller_ = std::move(caller);
    watch->namespace_ = std::move(namespace_name);
    watch->ticket_ = std::move(ticket);
    watch->auth_ = auth;
    watch->authorization_ = std::move(authorization);
    watch->revalidate_ = revalidate;
    watch->self_ = watch;
    watch->Drive();
    return watch.get();
  }

  void OnWriteDone(bool ok) override {
    {
      absl::MutexLock lock(&mu_);
      writing_ = false;
      if (!ok) gone_ = true;
    }
    Drive();
  }

  void OnCancel() override {
    {
      absl::MutexLock lock(&mu_);
      cancelled_ = true;
    }
    Drive();
  }

  void OnDone() override {
    std::shared_ptr<RunWatch> self;
    uint64_t subscription;
    {
      absl::MutexLock lock(&mu_);
      finished_ = true;
      subscription = std::exchange(subscription_, 0);
      self = std::move(self_);
    }
    engine_->UnsubscribeEvents(run_id_, subscription);
    alarm_.reset();
    ticket_.reset();
    // `self` goes last: a wake-up running now holds its own reference.
  }

 private:
  RunWatch(RunEngine* engine, std::string run_id, int64_t after_seq)
      : engine_(engine), run_id_(std::move(run_id)), after_(after_seq) {}

  void Drive() {
    std::shared_ptr<RunWatch> keep;  // alive until this returns, even if gRPC is done meanwhile
    {
      absl::MutexLock lock(&mu_);
      again_ = true;
      if (busy_ || self_ == nullptr) return;
      busy_ = true;
      keep = self_;
    }
    while (true) {
      {
        absl::MutexLock lock(&mu_);
        if (!again_ || writing_ || finished_) {
          busy_ = false;
          return;
        }
        again_ = false;
      }
      Step();
    }
  }

  // The stream's work; run by one thread at a time (Drive).
  void Step() {
    uint64_t armed;
    bool stop;
    bool gone;
    {
      absl::MutexLock lock(&mu_);
      armed = std::exchange(subscription_, 0);
      stop = cancelled_;
      gone = gone_;
    }
    // A subscription still armed here was not what woke us (the alarm did, or a cancel).
    engine_->UnsubscribeEvents(run_id_, armed);
    if (gone) return End(grpc::Status(grpc::StatusCode::CANCELLED, "client gone"));
    if (stop) return End(grpc::Status(grpc::StatusCode::CANCELLED, "watch cancelled"));
    if (auth_ != nullptr && !auth_->StillValid(authorization_, caller_)) {
      return End(grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                              "the bearer token of this stream was revoked, or its principal, "
                              "roles or namespace changed"));
    }
    if (pending_.empty() && !ended_) {
      bool ended = false;
      absl::StatusOr<std::vector<rein::v1::RunEvent>> events =
          engine_->ReadEventsNow(run_id_, after_, &ended);
      if (!events.ok()) return End(ToGrpcStatus(events.status()));
      for (rein::v1::RunEvent& event : *events) pending_.push_back(std::move(event));
      ended_ = ended;
    }
    if (!pending_.empty()) {
      current_ = std::move(pending_.front());
      pending_.pop_front();
      RouterApi::StampEvent(namespace_, &current_);
      after_ = current_.seq();
      if (current_.has_finished()) {
        ended_ = true;  // the terminal event is the last
        pending_.clear();
      }
      {
        absl::MutexLock lock(&mu_);
        writing_ = true;
      }
      StartWrite(&current_);
      return;
    }
    if (ended_) return End(grpc::Status::OK);
    // Nothing new: wait for the run's next commit.
    std::weak_ptr<RunWatch> weak = self_weak();
    bool recheck = false;
    const uint64_t id = engine_->SubscribeEvents(
        run_id_, after_, [weak, next = next_id_++] { Wake(weak, next); }, &recheck);
    absl::MutexLock lock(&mu_);
    if (id == 0) {
      again_ = true;  // it came meanwhile: read again
      return;
    }
    subscription_ = id;
    subscription_tag_ = next_id_ - 1;
    if (recheck || auth_ != nullptr) {
      const absl::Duration after = recheck && auth_ != nullptr ? std::min(kRecheck, revalidate_)
                                   : recheck                   ? kRecheck
                                                               : revalidate_;
      alarm_ = std::make_unique<grpc::Alarm>();
      alarm_->Set(std::chrono::system_clock::now() + absl::ToChronoMilliseconds(after),
                  [weak](bool ok) {
                    if (ok) Wake(weak, 0);
                  });
    }
  }

  // `tag` names the subscription that fired (0: the alarm), which needs no unsubscribing.
  static void Wake(const std::weak_ptr<RunWatch>& weak, uint64_t tag) {
    std::shared_ptr<RunWatch> watch = weak.lock();
    if (watch == nullptr) return;
    if (tag != 0) {
      absl::MutexLock lock(&watch->mu_);
      if (watch->subscription_tag_ == tag) watch->subscription_ = 0;
    }
    watch->Drive();
  }

  std::weak_ptr<RunWatch> self_weak() {
    absl::MutexLock lock(&mu_);
    return self_;
  }

  void End(const grpc::Status& status) {
    {
      absl::MutexLock lock(&mu_);
      finished_ = true;
    }
    Finish(status);
  }

  RunEngine* const engine_;
  const std::string run_id_;
  // Step's own (one thread at a time).
  int64_t after_;
  std::deque<rein::v1::RunEvent> pending_;  // read, not yet written: at most one read's worth
  rein::v1::RunEvent current_;              // the write in flight
  bool ended_ = false;                      // nothing follows pending_
  std::unique_ptr<grpc::Alarm> alarm_;
  std::unique_ptr<StreamQuota::Ticket> ticket_;
  Authenticator* auth_ = nullptr;
  std::string authorization_;
  Principal caller_;  // who the stream was admitted as
  absl::Duration revalidate_;
  std::string namespace_;

  absl::Mutex mu_;
  bool busy_ ABSL_GUARDED_BY(mu_) = false;   // a thread is in Drive's loop
  bool again_ ABSL_GUARDED_BY(mu_) = false;  // something happened: Step once more
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;  // Finish called (or gRPC is done)
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  bool gone_ ABSL_GUARDED_BY(mu_) = false;              // a write failed: the client went away
  uint64_t subscription_ ABSL_GUARDED_BY(mu_) = 0;      // armed, not fired: Step unsubscribes
  uint64_t subscription_tag_ ABSL_GUARDED_BY(mu_) = 0;  // this stream's own name for it
  uint64_t next_id_ = 1;                                // Step's own
  std::shared_ptr<RunWatch> self_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

namespace {

absl::string_view AuthorizationOf(grpc::ServerContextBase* context) {
  const auto& metadata = context->client_metadata();
  auto it = metadata.find("authorization");
  if (it == metadata.end()) return {};
  return absl::string_view(it->second.data(), it->second.size());
}

}  // namespace

grpc::Status RouterGrpcService::Authenticate(grpc::ServerContextBase* context, const char* method,
                                             Caller* caller) {
  if (auth_ == nullptr) return grpc::Status::OK;
  absl::StatusOr<Principal> who =
      auth_->Authenticate(AuthorizationOf(context), connect::CallerPeer(*context));
  if (!who.ok()) {
    Metrics::Global().Add("rein_router_rpcs_total", 1,
                          absl::StrCat("method=\"", method, "\",code=\"",
                                       absl::StatusCodeToString(who.status().code()), "\""));
    return ToGrpcStatus(who.status());
  }
  *caller = Caller::Of(*who);
  return grpc::Status::OK;
}

#define REIN_AUTHENTICATE(method) \
  Caller caller;                  \
  if (grpc::Status denied = Authenticate(context, method, &caller); !denied.ok()) return denied

grpc::Status RouterGrpcService::StartRun(grpc::ServerContext* context,
                                         const rein::v1::StartRunRequest* request,
                                         rein::v1::Run* response) {
  REIN_AUTHENTICATE("StartRun");
  // The caller's traceparent becomes a link from the run's own trace (malformed: ignored).
  trace::ScopedContext trace_caller(
      trace::IncomingContext(*context).value_or(trace::SpanContext()));
  return Reply(api_.StartRun(caller, *request, DeadlineOn(*context, engine_->clock())), response,
               "StartRun");
}

grpc::Status RouterGrpcService::GetRun(grpc::ServerContext* context,
                                       const rein::v1::GetRunRequest* request,
                                       rein::v1::Run* response) {
  REIN_AUTHENTICATE("GetRun");
  return Reply(api_.GetRun(caller, request->run_id()), response, "GetRun");
}

grpc::Status RouterGrpcService::ListRuns(grpc::ServerContext* context,
                                         const rein::v1::ListRunsRequest* request,
                                         rein::v1::ListRunsResponse* response) {
  REIN_AUTHENTICATE("ListRuns");
  absl::StatusOr<RunPage> page = api_.ListRuns(caller, *request);
  absl::StatusOr<rein::v1::ListRunsResponse> reply;
  if (!page.ok()) {
    reply = page.status();
  } else {
    rein::v1::ListRunsResponse out;
    for (auto& run : page->runs) *out.add_runs() = std::move(run);
    out.set_next_page_token(page->next_page_token);
    reply = std::move(out);
  }
  return Reply(reply, response, "ListRuns");
}

grpc::Status RouterGrpcService::CancelRun(grpc::ServerContext* context,
                                          const rein::v1::CancelRunRequest* request,
                                          rein::v1::Run* response) {
  REIN_AUTHENTICATE("CancelRun");
  return Reply(api_.CancelRun(caller, *request, DeadlineOn(*context, engine_->clock())), response,
               "CancelRun");
}

grpc::Status RouterGrpcService::ResumeRun(grpc::ServerContext* context,
                                          const rein::v1::ResumeRunRequest* request,
                                          rein::v1::Run* response) {
  REIN_AUTHENTICATE("ResumeRun");
  return Reply(api_.ResumeRun(caller, *request, DeadlineOn(*context, engine_->clock())), response,
               "ResumeRun");
}

grpc::Status RouterGrpcService::ForkRun(grpc::ServerContext* context,
                                        const rein::v1::ForkRunRequest* request,
                                        rein::v1::Run* response) {
  REIN_AUTHENTICATE("ForkRun");
  return Reply(api_.ForkRun(caller, *request, DeadlineOn(*context, engine_->clock())), response,
               "ForkRun");
}

grpc::Status RouterGrpcService::GetQuota(grpc::ServerContext* context,
                                         const rein::v1::GetQuotaRequest* request,
                                         rein::v1::QuotaReport* response) {
  REIN_AUTHENTICATE("GetQuota");
  return Reply(api_.GetQuota(caller, *request), response, "GetQuota");
}

grpc::Status RouterGrpcService::ListNotifications(grpc::ServerContext* context,
                                                  const rein::v1::ListNotificationsRequest* request,
                                                  rein::v1::ListNotificationsResponse* response) {
  REIN_AUTHENTICATE("ListNotifications");
  return Reply(api_.ListNotifications(caller, *request), response, "ListNotifications");
}

grpc::ServerWriteReactor<rein::v1::RunEvent>* RouterGrpcService::WatchRun(
    grpc::CallbackServerContext* context, const rein::v1::WatchRunRequest* request) {
  Caller caller;
  grpc::Status refused = Authenticate(context, "WatchRun", &caller);
  std::string namespace_name;
  if (refused.ok()) {
    // Fail fast on a bad request or a run the caller cannot see.
    absl::StatusOr<std::string> admitted = api_.WatchRun(caller, *request);
    if (admitted.ok()) {
      namespace_name = std::move(*admitted);
    } else {
      refused = ToGrpcStatus(admitted.status());
    }
  }
  std::unique_ptr<StreamQuota::Ticket> ticket;
  if (refused.ok()) {
    absl::StatusOr<std::unique_ptr<StreamQuota::Ticket>> slot =
        watch_quota_.Acquire(caller.principal);
    if (slot.ok()) {
      ticket = std::move(*slot);
    } else {
      refused = ToGrpcStatus(slot.status());
    }
  }
  if (!refused.ok()) return new RefusedWatch(refused);
  return RunWatch::Begin(engine_, request->run_id(), request->after_seq(), std::move(ticket), auth_,
                         std::string(AuthorizationOf(context)),
                         Principal{caller.principal, caller.roles, caller.namespace_name},
                         options_.revalidate, std::move(namespace_name));
}

grpc::Status RouterGrpcService::ExportRun(grpc::ServerContext* context,
                                          const rein::v1::ExportRunRequest* request,
                                          grpc::ServerWriter<rein::v1::RunSnapshot>* writer) {
  REIN_AUTHENTICATE("ExportRun");
  // Page by page, each page one short read of the store: nothing of the store is held while
  // the client reads, and at most one page of snapshots is in memory.
  constexpr int kPage = 16;
  int64_t after_version = 0;
  while (true) {
    absl::StatusOr<std::vector<Snapshot>> page =
        api_.ExportRun(caller, request->run_id(), after_version, kPage);
    if (!page.ok()) return ToGrpcStatus(page.status());
    if (page->empty()) return grpc::Status::OK;
    after_version = page->back().version;
    for (const Snapshot& s : *page) {
      rein::v1::RunSnapshot out;
      out.set_run_id(request->run_id());
      out.set_iteration(s.iteration);
      out.set_version(s.version);
      rein::v1::RunState state;
      if (!state.ParseFromString(s.state)) {
        return ToGrpcStatus(absl::DataLossError(absl::StrCat(
            "snapshot of version ", s.version, " of run ", request->run_id(), " is corrupt")));
      }
      google::protobuf::util::JsonPrintOptions options;
      options.preserve_proto_field_names = true;
      (void)google::protobuf::util::MessageToJsonString(state, out.mutable_state_json(), options);
      if (!writer->Write(out)) return grpc::Status(grpc::StatusCode::CANCELLED, "client gone");
    }
    if (page->size() < kPage) return grpc::Status::OK;
  }
}

#undef REIN_AUTHENTICATE

}  // namespace rein
