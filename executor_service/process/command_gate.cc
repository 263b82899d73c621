// A command started ahead of its go-ahead.
#include "executor_service/process/command_gate.h"

#include <errno.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <utility>

#include "absl/time/clock.h"
#include "executor_service/process/errno_status.h"

namespace rein {

absl::StatusOr<std::unique_ptr<CommandGate>> CommandGate::Create(absl::Time cap) {
  // A socket, not a pipe: writing to a gate whose command already ended is EPIPE, never
  // SIGPIPE (MSG_NOSIGNAL).
  int ends[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) != 0) {
    return ErrnoStatus("socketpair");
  }
  UniqueFd executor_end(ends[0]);
  UniqueFd command_end(ends[1]);
  UniqueFd event(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!event.valid()) return ErrnoStatus("eventfd");
  // The executor only writes, the command only reads.
  shutdown(executor_end.get(), SHUT_RD);
  shutdown(command_end.get(), SHUT_WR);
  return std::unique_ptr<CommandGate>(
      new CommandGate(cap, std::move(executor_end), std::move(command_end), std::move(event)));
}

CommandGate::CommandGate(absl::Time cap, UniqueFd executor_end, UniqueFd command_end,
                         UniqueFd event)
    : cap_(cap),
      executor_end_(std::move(executor_end)),
      command_end_(std::move(command_end)),
      event_(std::move(event)) {}

CommandGate::~CommandGate() { Shut(); }

void CommandGate::Settle(State to) {
  {
    absl::MutexLock lock(&mu_);
    if (state_ != State::kPending) return;
    state_ = to;
    if (to == State::kOpen) {
      opened_at_ = absl::Now();
      const char go = 'G';
      // A command that already ended (its sandbox failed) reads nothing: EPIPE is fine.
      while (send(executor_end_.get(), &go, 1, MSG_NOSIGNAL) < 0 && errno == EINTR) {
      }
    }
    // The gate's end of the socket closes either way: after the byte, or as the "never".
    executor_end_.Reset();
  }
  const uint64_t one = 1;
  (void)!write(event_.get(), &one, sizeof(one));
}

void CommandGate::Open() { Settle(State::kOpen); }

void CommandGate::Shut() { Settle(State::kShut); }

CommandGate::State CommandGate::state() const {
  absl::MutexLock lock(&mu_);
  return state_;
}

bool CommandGate::Wait() const {
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(
      +[](const State* state) { return *state != State::kPending; }, &state_));
  return state_ == State::kOpen;
}

absl::Time CommandGate::Deadline(absl::Time deadline) const {
  absl::MutexLock lock(&mu_);
  switch (state_) {
    case State::kPending: return absl::InfiniteFuture();
    case State::kShut: return deadline;
    case State::kOpen: break;
  }
  if (deadline == absl::InfiniteFuture()) return cap_;
  return std::min(cap_, deadline + (opened_at_ - created_));
}

absl::Time CommandGate::opened_at() const {
  absl::MutexLock lock(&mu_);
  return opened_at_;
}

}  // namespace rein
