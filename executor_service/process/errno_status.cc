// The one conversion of a failed system call's errno into an absl::Status.
#include "executor_service/process/errno_status.h"

#include <errno.h>
#include <string.h>

#include <string>

#include "absl/strings/str_cat.h"

namespace rein {

absl::Status ErrnoStatus(int err, absl::string_view what) {
  std::string message = absl::StrCat(what, ": ", strerror(err));
  switch (err) {
    case EMFILE:
    case ENFILE:
    case ENOMEM:
    case EAGAIN:
    case ENOSPC:
    case EDQUOT: return absl::ResourceExhaustedError(message);
    case ENOENT: return absl::NotFoundError(message);
    case EEXIST: return absl::AlreadyExistsError(message);
    default: return absl::InternalError(message);
  }
}

absl::Status ErrnoStatus(absl::string_view what) { return ErrnoStatus(errno, what); }

}  // namespace rein
