// Writing files durably.
#include "executor_service/workspace/durable_file.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "executor_service/process/unique_fd.h"

namespace rein {

int WriteAll(int fd, absl::string_view data) {
  size_t written = 0;
  while (written < data.size()) {
    const ssize_t n = write(fd, data.data() + written, data.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n < 0 ? errno : EIO;
    written += static_cast<size_t>(n);
  }
  return 0;
}

void SyncDirectory(int dir_fd) {
  // Opened again for reading: `dir_fd` may be an O_PATH descriptor, which fsync refuses.
  UniqueFd fd(openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.valid()) fsync(fd.get());
}

void SyncDirectory(const std::string& path) {
  UniqueFd fd(open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.valid()) SyncDirectory(fd.get());
}

int WriteFileDurably(int dir_fd, const std::string& name, const std::string& temp_name,
                     absl::string_view data, mode_t mode) {
  UniqueFd file(openat(dir_fd, temp_name.c_str(),
                       O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!file.valid()) return errno;
  int err = WriteAll(file.get(), data);
  if (err == 0 && fchmod(file.get(), mode) != 0) err = errno;  // mode without the umask
  if (err == 0 && fsync(file.get()) != 0) err = errno;
  file.Reset();
  if (err == 0 && renameat(dir_fd, temp_name.c_str(), dir_fd, name.c_str()) != 0) err = errno;
  if (err != 0) {
    unlinkat(dir_fd, temp_name.c_str(), 0);
    return err;
  }
  SyncDirectory(dir_fd);
  return 0;
}

}  // namespace rein
