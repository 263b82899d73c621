// A command started ahead of its go-ahead: its sandbox is set up while the executor makes the
// call's claim durable and snapshots the workspace, and the command itself runs only once the
// executor opens the gate. Inside the sandbox, rein-sandbox-gate (gate_main.cc) stands in for
// the command: it reads one byte from the gate's socket and only then executes the command; at
// end-of-file (the gate shut, or the executor gone) it exits without running it.
#ifndef REIN_EXECUTOR_SERVICE_PROCESS_COMMAND_GATE_H_
#define REIN_EXECUTOR_SERVICE_PROCESS_COMMAND_GATE_H_

#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "executor_service/process/command_gate_exit.h"
#include "executor_service/process/unique_fd.h"

namespace rein {

// Thread-safe. Open or Shut happens once; the first one counts. Destroying a gate that is
// still pending shuts it.
class CommandGate {
 public:
  enum class State { kPending, kOpen, kShut };

  // `cap`: no command behind this gate runs past it (the call's own deadline), however long
  // the gate stayed shut. Errors: the socket pair or the event could not be made.
  static absl::StatusOr<std::unique_ptr<CommandGate>> Create(absl::Time cap);
  ~CommandGate();
  CommandGate(const CommandGate&) = delete;
  CommandGate& operator=(const CommandGate&) = delete;

  // The end rein-sandbox-gate reads (close-on-exec here; passed to the sandbox explicitly).
  int command_end() const { return command_end_.get(); }
  // Readable once the gate was opened or shut (for a poll that waits on the command).
  int event_fd() const { return event_.get(); }

  // The command may run now.
  void Open() ABSL_LOCKS_EXCLUDED(mu_);
  // It never will.
  void Shut() ABSL_LOCKS_EXCLUDED(mu_);
  State state() const ABSL_LOCKS_EXCLUDED(mu_);
  // Blocks until the gate was opened (true) or shut (false): for a command started without
  // rein-sandbox-gate, which waits here instead.
  bool Wait() const ABSL_LOCKS_EXCLUDED(mu_);

  // The deadline of a command behind the gate whose time counts from the opening: `deadline`
  // moved on by the time the gate stayed pending, at most to the cap. Infinite while pending;
  // `deadline` once shut (the command does not run, its sandbox is ending).
  absl::Time Deadline(absl::Time deadline) const ABSL_LOCKS_EXCLUDED(mu_);
  // When it opened; InfinitePast while pending or when shut.
  absl::Time opened_at() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  CommandGate(absl::Time cap, UniqueFd executor_end, UniqueFd command_end, UniqueFd event);
  void Settle(State to) ABSL_LOCKS_EXCLUDED(mu_);

  const absl::Time created_ = absl::Now();
  const absl::Time cap_;
  mutable absl::Mutex mu_;
  State state_ ABSL_GUARDED_BY(mu_) = State::kPending;
  absl::Time opened_at_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  UniqueFd executor_end_ ABSL_GUARDED_BY(mu_);
  const UniqueFd command_end_;
  const UniqueFd event_;
};

}  // namespace rein

#endif  // REIN_EXECUTOR_SERVICE_PROCESS_COMMAND_GATE_H_
