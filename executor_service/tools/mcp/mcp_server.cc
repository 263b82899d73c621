// Conversations with one configured MCP server.
#include "executor_service/tools/mcp/mcp_server.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "common/limits.h"
#include "executor_service/process/unique_fd.h"
#include "executor_service/tools/mcp/http_transport.h"
#include "executor_service/tools/mcp/pipe_transport.h"

namespace rein {
namespace {

// How long a stdio server gets to exit by itself once its stdin is closed.
constexpr absl::Duration kExitGrace = absl::Milliseconds(300);
// How much of a stdio server's stderr is kept (for the message when it dies).
constexpr size_t kStderrBytes = 16 << 10;

// A stdio server running in the sandbox, in its own thread's Sandbox::Run.
class StdioSession final : public McpSession {
 public:
  // `to_server` and `from_server` may be two descriptors of one socket.
  StdioSession(const McpServerConfig* config, UniqueFd to_server, UniqueFd from_server,
               UniqueFd stop_write, size_t max_message_bytes)
      : McpSession(&transport_),
        config_(config),
        transport_(std::move(to_server), std::move(from_server), max_message_bytes),
        stop_write_(std::move(stop_write)) {}

  ~StdioSession() override { Close(); }

  void Start(const Sandbox* sandbox, const Workspace* workspace, CommandRequest request,
             UniqueFd child_socket, UniqueFd stop_read) {
    thread_ = std::thread([this, sandbox, workspace, request = std::move(request),
                           child_socket = std::move(child_socket),
                           stop_read = std::move(stop_read)]() mutable {
      request.stdin_fd = child_socket.get();
      request.stdout_fd = child_socket.get();
      request.stop_fd = stop_read.get();
      outcome_ = sandbox->Run(*workspace, request);
      // Our copy of the server's end goes too, so that a reader sees EOF.
      child_socket.Reset();
      done_.Notify();
    });
  }

  std::string Close() override {
    if (!thread_.joinable()) return note_;
    transport_.CloseInput();
    if (!done_.WaitForNotificationWithTimeout(kExitGrace)) stop_write_.Reset();
    thread_.join();
    note_ = Describe();
    return note_;
  }

  // How the server ended, for messages; "" while it runs.
  std::string Describe() const {
    if (!outcome_.ok()) return RedactSecrets(*config_, std::string(outcome_.status().message()));
    const ChildOutcome& child = outcome_->child;
    if (child.stopped) return "";
    std::string how = child.signal != 0 ? absl::StrCat("killed by signal ", child.signal)
                                        : absl::StrCat("exit status ", child.exit_code);
    if (!child.output.empty()) {
      absl::StrAppend(
          &how, "; stderr: ",
          child.output.substr(child.output.size() > 512 ? child.output.size() - 512 : 0));
    }
    return RedactSecrets(*config_, how);
  }

  // Waits (briefly) for the server's end and says how it went, for a server that went away.
  std::string WhyGone() {
    done_.WaitForNotificationWithTimeout(absl::Seconds(2));
    return done_.HasBeenNotified() ? Describe() : "";
  }

 private:
  const McpServerConfig* config_;
  PipeTransport transport_;
  UniqueFd stop_write_;
  std::thread thread_;
  absl::Notification done_;
  absl::StatusOr<CommandOutcome> outcome_ = absl::UnknownError("not started");
  std::string note_;
};

class HttpSession final : public McpSession {
 public:
  HttpSession(const McpServerConfig& config, const std::string& token, size_t max_message_bytes)
      : McpSession(&transport_), transport_(config.url, token, max_message_bytes) {}
  ~HttpSession() override { transport_.Close(); }
  std::string Close() override {
    transport_.Close();
    return "";
  }

 private:
  HttpTransport transport_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<McpSession>> McpServer::Open(const Workspace& workspace,
                                                            absl::string_view namespace_name,
                                                            absl::Time deadline,
                                                            size_t max_message_bytes) const {
  auto fail = [&](const absl::Status& status, const std::string& why) {
    std::string message = absl::StrCat("MCP server \"", config_.name, "\": ", status.message());
    if (!why.empty()) absl::StrAppend(&message, " (the server ended: ", why, ")");
    return absl::Status(status.code(), RedactSecrets(config_, message));
  };
  const std::optional<McpCredentials> credentials = CredentialsFor(config_, namespace_name);
  if (!credentials.has_value()) {
    return absl::NotFoundError(absl::StrCat("MCP server \"", config_.name,
                                            "\" is not offered to namespace \"",
                                            NamespaceOrDefault(namespace_name), "\""));
  }
  if (config_.transport == McpServerConfig::Transport::kHttp) {
    auto session = std::make_unique<HttpSession>(config_, credentials->token, max_message_bytes);
    absl::Status status = session->client().Initialize(deadline);
    if (!status.ok()) return fail(status, "");
    return session;
  }
  int sockets[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sockets) != 0) {
    return absl::ResourceExhaustedError("socketpair failed");
  }
  UniqueFd ours(sockets[0]);
  UniqueFd theirs(sockets[1]);
  int stop[2];
  if (pipe2(stop, O_CLOEXEC) != 0) return absl::ResourceExhaustedError("pipe failed");
  UniqueFd stop_read(stop[0]);
  UniqueFd stop_write(stop[1]);

  CommandRequest request;
  request.argv = config_.command;
  // The session ends the server itself; this is the backstop.
  request.deadline = deadline + absl::Seconds(5);
  request.max_output_bytes = kStderrBytes;
  request.share_network = config_.network;
  request.read_only_paths = config_.read_only_paths;
  for (const auto& [name, value] : credentials->env) {
    request.env.push_back(absl::StrCat(name, "=", value));
  }

  UniqueFd ours_to_server(fcntl(ours.get(), F_DUPFD_CLOEXEC, 0));
  if (!ours_to_server.valid()) return absl::ResourceExhaustedError("dup failed");
  auto session =
      std::make_unique<StdioSession>(&config_, std::move(ours_to_server), std::move(ours),
                                     std::move(stop_write), max_message_bytes);
  session->Start(sandbox_, &workspace, std::move(request), std::move(theirs), std::move(stop_read));
  absl::Status status = session->client().Initialize(deadline);
  if (!status.ok()) {
    const std::string why = absl::IsUnavailable(status) ? session->WhyGone() : "";
    session->Close();
    return fail(status, why);
  }
  return session;
}

}  // namespace rein
