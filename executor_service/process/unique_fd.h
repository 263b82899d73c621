// An owned file descriptor that is closed when it goes out of scope.
#ifndef REIN_EXECUTOR_SERVICE_UNIQUE_FD_H_
#define REIN_EXECUTOR_SERVICE_UNIQUE_FD_H_

#include <unistd.h>

#include <utility>

namespace rein {

// Move-only owner of one file descriptor (-1 = none). Not thread-safe.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) Reset(std::exchange(other.fd_, -1));
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { Reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }

  // Gives up ownership without closing.
  int Release() { return std::exchange(fd_, -1); }

  // Closes the current descriptor (if any) and owns `fd`.
  void Reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

}  // namespace rein

#endif  // REIN_EXECUTOR_SERVICE_UNIQUE_FD_H_
