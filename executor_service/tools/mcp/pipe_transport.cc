// MCP's stdio transport.
#include "executor_service/tools/mcp/pipe_transport.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace rein {
namespace {

int PollMillis(absl::Time deadline) {
  const absl::Duration left = deadline - absl::Now();
  if (left <= absl::ZeroDuration()) return 0;
  return static_cast<int>(std::min<int64_t>(absl::ToInt64Milliseconds(left) + 1, 1 << 30));
}

}  // namespace

PipeTransport::PipeTransport(UniqueFd to_server, UniqueFd from_server, size_t max_message_bytes)
    : to_server_(std::move(to_server)),
      from_server_(std::move(from_server)),
      max_message_bytes_(max_message_bytes) {
  if (to_server_.valid()) fcntl(to_server_.get(), F_SETFL, O_NONBLOCK);
  if (from_server_.valid()) fcntl(from_server_.get(), F_SETFL, O_NONBLOCK);
}

absl::Status PipeTransport::Send(const std::string& message, absl::Time deadline) {
  if (!to_server_.valid()) return absl::UnavailableError("the server's stdin is closed");
  // Embedded newlines would break the framing; JSON text escapes them, so none should occur.
  if (message.find('\n') != std::string::npos) {
    return absl::InternalError("a message to send contains a newline");
  }
  std::string line = message + "\n";
  absl::string_view rest = line;
  while (!rest.empty()) {
    // send() on a socket never raises SIGPIPE; a pipe falls back to write().
    ssize_t n = send(to_server_.get(), rest.data(), rest.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == ENOTSOCK) n = write(to_server_.get(), rest.data(), rest.size());
    if (n > 0) {
      rest.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) {
      struct pollfd fd = {to_server_.get(), POLLOUT, 0};
      const int ready = poll(&fd, 1, PollMillis(deadline));
      if (ready == 0 && absl::Now() >= deadline) {
        return absl::DeadlineExceededError("the server did not read its stdin in time");
      }
      continue;
    }
    return absl::UnavailableError(
        absl::StrCat("the server's stdin is gone: ", strerror(n < 0 ? errno : EPIPE)));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> PipeTransport::Receive(absl::Time deadline) {
  char chunk[64 << 10];
  for (;;) {
    // A complete line in the buffer?
    const size_t newline = buffer_.find('\n');
    if (newline != std::string::npos) {
      if (dropping_) {
        const size_t total = dropped_bytes_ + newline;
        buffer_.erase(0, newline + 1);
        dropping_ = false;
        dropped_bytes_ = 0;
        return absl::ResourceExhaustedError(absl::StrCat("the server sent a message of ", total,
                                                         " bytes; the cap is ", max_message_bytes_,
                                                         " bytes (it was dropped)"));
      }
      if (newline > max_message_bytes_) {
        buffer_.erase(0, newline + 1);
        return absl::ResourceExhaustedError(absl::StrCat("the server sent a message of ", newline,
                                                         " bytes; the cap is ", max_message_bytes_,
                                                         " bytes (it was dropped)"));
      }
      std::string line = buffer_.substr(0, newline);
      buffer_.erase(0, newline + 1);
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.empty()) continue;
      return line;
    }
    if (!dropping_ && buffer_.size() > max_message_bytes_) {
      dropping_ = true;
      dropped_bytes_ = 0;
    }
    if (dropping_) {
      dropped_bytes_ += buffer_.size();
      buffer_.clear();
    }
    if (eof_) return absl::UnavailableError("the server closed its stdout (it exited)");
    const ssize_t n = read(from_server_.get(), chunk, sizeof(chunk));
    if (n > 0) {
      buffer_.append(chunk, static_cast<size_t>(n));
      continue;
    }
    if (n == 0) {
      eof_ = true;
      continue;
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN) {
      return absl::UnavailableError(absl::StrCat("reading the server's stdout: ", strerror(errno)));
    }
    struct pollfd fd = {from_server_.get(), POLLIN, 0};
    const int ready = poll(&fd, 1, PollMillis(deadline));
    if (ready == 0 && absl::Now() >= deadline) {
      return absl::DeadlineExceededError("no message from the server before the deadline");
    }
  }
}

}  // namespace rein

namespace rein {

void PipeTransport::CloseInput() {
  if (!to_server_.valid()) return;
  shutdown(to_server_.get(), SHUT_WR);  // a socket shared with from_server_ sees EOF only so
  to_server_.Reset();
}

}  // namespace rein
