// A resident sandbox: bubblewrap running rein-sandbox-init for the commands of one run.
#include "executor_service/sandbox/resident/resident_sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "executor_service/process/fd_passing.h"
#include "executor_service/sandbox/resident/sandbox_init_limits.h"

namespace rein {
namespace {

constexpr absl::Duration kDrainGrace = absl::Seconds(1);

void Reap(int pid) {
  int status;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
}

}  // namespace

std::string ReadAvailable(int fd) {
  fcntl(fd, F_SETFL, O_NONBLOCK);
  std::string out;
  char buf[4096];
  while (out.size() < (64 << 10)) {
    const ssize_t n = read(fd, buf, sizeof(buf));
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

int BwrapChildPid(const std::string& status) {
  const size_t at = status.find("\"child-pid\"");
  if (at == std::string::npos) return 0;
  size_t i = status.find(':', at);
  if (i == std::string::npos) return 0;
  ++i;
  while (i < status.size() && status[i] == ' ') ++i;
  int pid = 0;
  while (i < status.size() && status[i] >= '0' && status[i] <= '9' && pid < (1 << 26)) {
    pid = pid * 10 + (status[i++] - '0');
  }
  return pid;
}

void WaitForExit(int pid, absl::Duration limit) {
  if (pid <= 1) return;
  UniqueFd pidfd(static_cast<int>(syscall(SYS_pidfd_open, pid, 0)));
  if (!pidfd.valid()) return;  // already gone
  struct pollfd fd = {pidfd.get(), POLLIN, 0};
  poll(&fd, 1, static_cast<int>(absl::ToInt64Milliseconds(limit)));
}

absl::StatusOr<std::unique_ptr<ResidentSandbox>> ResidentSandbox::Start(
    ChildSpec spec, UniqueFd socket, UniqueFd init_socket, UniqueFd status_read,
    UniqueFd status_write, ResidentHoldings holdings, absl::Time deadline) {
  std::unique_ptr<ResidentSandbox> resident(new ResidentSandbox(std::move(holdings)));
  PidsCgroup* cgroup = resident->holdings_.cgroup.get();
  spec.cgroup_procs_fd = cgroup != nullptr ? cgroup->procs_fd() : -1;
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) {
    return absl::InternalError(absl::StrCat("pipe: ", strerror(errno)));
  }
  resident->output_ = UniqueFd(pipe_fds[0]);
  UniqueFd output_write(pipe_fds[1]);
  // bubblewrap asks to die with its parent, which is the thread that started it: a thread of
  // this sandbox's own starts it and lives as long as the sandbox, where a gRPC handler thread
  // may end while the sandbox idles.
  absl::StatusOr<int> pid = absl::InternalError("not started");
  absl::Notification started;
  resident->holder_ = std::thread([&pid, &started, &spec, &output_write, r = resident.get()] {
    pid = StartChild(spec, output_write.get());
    started.Notify();
    r->release_.WaitForNotification();
  });
  started.WaitForNotification();
  if (!pid.ok()) return pid.status();
  resident->bwrap_pid_ = *pid;
  resident->socket_ = std::move(socket);
  resident->status_ = std::move(status_read);
  output_write.Reset();
  init_socket.Reset();
  status_write.Reset();

  struct pollfd ready = {resident->socket_.get(), POLLIN, 0};
  int r;
  do {
    r = poll(&ready, 1, PollMillis(deadline));
  } while (r < 0 && errno == EINTR);
  char byte = 0;
  if (r != 1 || recv(resident->socket_.get(), &byte, 1, 0) != 1 || byte != 'R') {
    const bool timed_out = r == 0;
    resident->Kill();
    Reap(resident->bwrap_pid_);
    resident->reaped_ = true;
    const std::string said = ReadAvailable(resident->output_.get());
    return absl::FailedPreconditionError(
        absl::StrCat("the resident sandbox could not be set up", timed_out ? " in time" : "",
                     said.empty() ? "" : ": ", said.substr(0, 1024)));
  }
  resident->init_pid_ = BwrapChildPid(ReadAvailable(resident->status_.get()));
  // Held from now on: a signal through it never reaches a process that reused the pid.
  if (resident->init_pid_ > 1) {
    resident->init_pidfd_ =
        UniqueFd(static_cast<int>(syscall(SYS_pidfd_open, resident->init_pid_, 0)));
  }
  return resident;
}

ResidentSandbox::~ResidentSandbox() { Destroy(); }

ResidentSandbox::Result ResidentSandbox::Run(const std::vector<std::string>& argv,
                                             const std::vector<std::string>& env,
                                             const std::string& cwd, absl::Time deadline,
                                             size_t max_output_bytes) {
  Result result;
  const absl::Time start = absl::Now();
  if (killed_) {
    result.error = "the resident sandbox is gone";
    return result;
  }
  std::string payload(8, '\0');
  const uint32_t counts[2] = {static_cast<uint32_t>(argv.size()),
                              static_cast<uint32_t>(env.size())};
  memcpy(payload.data(), counts, sizeof(counts));
  payload.append(cwd).push_back('\0');
  for (const auto* strings : {&argv, &env}) {
    for (const std::string& s : *strings) {
      if (s.find('\0') != std::string::npos) {
        result.error = "a NUL byte in the command";
        return result;
      }
      payload.append(s).push_back('\0');
    }
  }
  if (argv.empty() || payload.size() > kMaxCommandBytes ||
      argv.size() + env.size() > kSandboxInitMaxStrings) {
    result.error = "the command does not fit a resident sandbox's message";
    return result;
  }
  int pipe_fds[2];
  UniqueFd dev_null(open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!dev_null.valid() || pipe2(pipe_fds, O_CLOEXEC) != 0) {
    result.error = absl::StrCat("pipe: ", strerror(errno));
    return result;
  }
  UniqueFd read_end(pipe_fds[0]);
  UniqueFd write_end(pipe_fds[1]);

  const int fds[3] = {dev_null.get(), write_end.get(), write_end.get()};
  const ssize_t sent =
      SendWithFds(socket_.get(), payload.data(), payload.size(), fds, 3, MSG_DONTWAIT);
  if (sent != static_cast<ssize_t>(payload.size())) {
    // Not delivered (init is gone, or the message did not fit): nothing ran.
    result.error = absl::StrCat("the resident sandbox did not take the command: ",
                                sent < 0 ? strerror(errno) : "short send");
    Kill();
    return result;
  }
  result.handed_off = true;
  write_end.Reset();
  dev_null.Reset();

  ChildOutcome& outcome = result.outcome;
  bool replied = false;
  bool eof = false;
  int status = 0;
  absl::Time drain_until = absl::InfiniteFuture();
  std::string chunk(64 << 10, '\0');
  fcntl(read_end.get(), F_SETFL, O_NONBLOCK);
  auto end = [&](bool timeout, const std::string& why) {
    if (timeout) outcome.timed_out = true;
    if (!why.empty()) {
      result.lost = true;
      result.error = why;
    }
    Kill();  // the whole sandbox: every process of the command with it
    drain_until = absl::Now() + kDrainGrace;
  };
  while (!replied || !eof) {
    const absl::Time now = absl::Now();
    const bool waiting = !replied && !killed_;
    if (waiting && now >= deadline) end(/*timeout=*/true, "");
    if (now >= drain_until) break;
    if (!waiting && !replied && eof) break;  // killed, and the output is complete
    struct pollfd pfds[2] = {};
    int n = 0;
    if (!eof) pfds[n++] = {read_end.get(), POLLIN, 0};
    const int sock_index = n;
    if (!replied && !killed_) pfds[n++] = {socket_.get(), POLLIN, 0};
    if (n == 0) break;
    if (poll(pfds, static_cast<nfds_t>(n), PollMillis(std::min(deadline, drain_until))) < 0 &&
        errno != EINTR) {
      end(/*timeout=*/false, absl::StrCat("poll: ", strerror(errno)));
      continue;
    }
    if (!eof && (pfds[0].revents & (POLLIN | POLLHUP | POLLERR))) {
      eof = ReadAvailableOutput(read_end.get(), chunk, max_output_bytes, outcome);
    }
    if (sock_index < n && (pfds[sock_index].revents & (POLLIN | POLLHUP | POLLERR))) {
      char reply[8];
      const ssize_t got = recv(socket_.get(), reply, sizeof(reply), MSG_DONTWAIT);
      if (got < 0 && (errno == EAGAIN || errno == EINTR)) continue;
      if (got == 5 && (reply[0] == 'X' || reply[0] == 'D')) {
        // 'D': the command is over, but something it left could not be reset: this sandbox
        // serves no other command (torn down off the reply's path).
        if (reply[0] == 'D') retired_ = true;
        int32_t value;
        memcpy(&value, reply + 1, sizeof(value));
        status = value;
        replied = true;
        // Everything that held the pipe is dead: its EOF is immediate.
        drain_until = absl::Now() + kDrainGrace;
      } else {
        end(/*timeout=*/false, got == 0 ? "the sandbox's init ended without answering"
                                        : "the sandbox's init broke the protocol");
      }
    }
  }
  if (replied) {
    // As bubblewrap reports its command: a command killed by a signal exits 128 + signal.
    if (WIFEXITED(status)) outcome.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) outcome.exit_code = 128 + WTERMSIG(status);
  } else if (outcome.timed_out) {
    // As when the cold path kills bubblewrap at the deadline.
    outcome.signal = SIGKILL;
    outcome.exit_code = 128 + SIGKILL;
  }
  outcome.elapsed = absl::Now() - start;
  return result;
}

void ResidentSandbox::Kill() {
  if (killed_) return;
  killed_ = true;
  if (bwrap_pid_ > 0) kill(bwrap_pid_, SIGKILL);  // not yet reaped: still ours
  // Pid 1 gone takes its whole pid namespace with it: the kernel kills and reaps the rest
  // before pid 1 is gone (bubblewrap's --die-with-parent would kill it too).
  if (init_pidfd_.valid()) {
    syscall(SYS_pidfd_send_signal, init_pidfd_.get(), SIGKILL, nullptr, 0);
    struct pollfd fd = {init_pidfd_.get(), POLLIN, 0};
    poll(&fd, 1, 2000);
  } else {
    if (init_pid_ == 0 && status_.valid()) {
      init_pid_ = BwrapChildPid(ReadAvailable(status_.get()));
    }
    WaitForExit(init_pid_, absl::Seconds(2));
  }
  if (holdings_.cgroup != nullptr) holdings_.cgroup->KillAll();
}

void ResidentSandbox::Destroy() {
  Kill();
  if (!reaped_ && bwrap_pid_ > 0) Reap(bwrap_pid_);
  reaped_ = true;
  socket_.Reset();
  holdings_.cgroup.reset();
  release_.Notify();
  if (holder_.joinable()) holder_.join();
  holdings_.mounts.reset();
  holdings_.workspace.reset();
}

}  // namespace rein
