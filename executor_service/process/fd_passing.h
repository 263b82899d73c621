// Passing descriptors over a Unix socket (SCM_RIGHTS): the one copy of the cmsg handling.
// System calls only and no allocation, so that rein-sandbox-init (which links nothing else)
// uses it too.
#ifndef REIN_EXECUTOR_SERVICE_PROCESS_FD_PASSING_H_
#define REIN_EXECUTOR_SERVICE_PROCESS_FD_PASSING_H_

#include <sys/types.h>

#include <cstddef>

namespace rein {

// Most descriptors one message carries: a command's 64 passed descriptors and its 4 standard
// ones (child_process.cc's spawner).
inline constexpr size_t kMaxPassedFds = 68;

// Sends `size` bytes of `data` (at least one) with `fd_count` descriptors (at most
// kMaxPassedFds) as one message on `sock`, with sendmsg `flags` (MSG_DONTWAIT, say) and
// MSG_NOSIGNAL; EINTR is retried. Returns what sendmsg returned (-1 with errno set on failure).
ssize_t SendWithFds(int sock, const void* data, size_t size, const int* fds, size_t fd_count,
                    int flags = 0);

// What ReceiveWithFds got.
struct ReceivedFds {
  size_t count = 0;        // descriptors stored in the caller's array
  bool dropped = false;    // more came than fitted (those were closed) or the control was cut
  bool truncated = false;  // the data did not fit `size` (MSG_TRUNC)
};

// Receives one message on `sock` into `data` (at most `size` bytes) and up to `max_fds`
// descriptors (close-on-exec) into `fds`; EINTR is retried. Returns what recvmsg returned (0 at
// EOF, -1 with errno set on failure).
ssize_t ReceiveWithFds(int sock, void* data, size_t size, int* fds, size_t max_fds,
                       ReceivedFds* received);

}  // namespace rein

#endif  // REIN_EXECUTOR_SERVICE_PROCESS_FD_PASSING_H_
