// The one conversion of a failed system call's errno into an absl::Status.
#ifndef REIN_EXECUTOR_SERVICE_PROCESS_ERRNO_STATUS_H_
#define REIN_EXECUTOR_SERVICE_PROCESS_ERRNO_STATUS_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace rein {

// "<what>: <strerror(err)>" with the code that tells the caller what to do:
// RESOURCE_EXHAUSTED when the machine ran short (EMFILE, ENFILE, ENOMEM, EAGAIN, ENOSPC,
// EDQUOT), NOT_FOUND for ENOENT, ALREADY_EXISTS for EEXIST, INTERNAL otherwise. Callers that
// mean something else by one of these (an exec's ENOENT is a missing program) check it first.
absl::Status ErrnoStatus(int err, absl::string_view what);

// ErrnoStatus of `errno` now.
absl::Status ErrnoStatus(absl::string_view what);

}  // namespace rein

#endif  // REIN_EXECUTOR_SERVICE_PROCESS_ERRNO_STATUS_H_
