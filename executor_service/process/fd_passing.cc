// Passing descriptors over a Unix socket.
#include "executor_service/process/fd_passing.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

namespace rein {

ssize_t SendWithFds(int sock, const void* data, size_t size, const int* fds, size_t fd_count,
                    int flags) {
  if (fd_count > kMaxPassedFds) {
    errno = EINVAL;
    return -1;
  }
  struct iovec iov = {const_cast<void*>(data), size};
  alignas(struct cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxPassedFds)];
  memset(control, 0, sizeof(control));
  struct msghdr msg;
  memset(&msg, 0, sizeof(msg));
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  if (fd_count > 0) {
    msg.msg_control = control;
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * fd_count);
    struct cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * fd_count);
    memcpy(CMSG_DATA(c), fds, sizeof(int) * fd_count);
  }
  ssize_t n;
  do {
    n = sendmsg(sock, &msg, MSG_NOSIGNAL | flags);
  } while (n < 0 && errno == EINTR);
  return n;
}

ssize_t ReceiveWithFds(int sock, void* data, size_t size, int* fds, size_t max_fds,
                       ReceivedFds* received) {
  *received = ReceivedFds();
  struct iovec iov = {data, size};
  alignas(struct cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxPassedFds)];
  struct msghdr msg;
  memset(&msg, 0, sizeof(msg));
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  ssize_t n;
  do {
    n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return n;
  for (struct cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const size_t got = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < got; ++i) {
      int fd;
      memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      if (received->count < max_fds) {
        fds[received->count++] = fd;
      } else {
        close(fd);
        received->dropped = true;
      }
    }
  }
  if ((msg.msg_flags & MSG_CTRUNC) != 0) received->dropped = true;
  if ((msg.msg_flags & MSG_TRUNC) != 0) received->truncated = true;
  return n;
}

}  // namespace rein
