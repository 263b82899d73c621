// Opening and reading workspace files safely.
#include "executor_service/workspace/text_file.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <string.h>
#include <unistd.h>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "executor_service/workspace/workspace.h"

namespace rein {
namespace {

absl::Status NotRegular(absl::string_view display, mode_t mode) {
  if (S_ISDIR(mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat("path \"", absl::CHexEscape(display), "\" is a directory, not a file"));
  }
  return absl::FailedPreconditionError(absl::StrCat("path \"", absl::CHexEscape(display),
                                                    "\" is a ", FileTypeName(mode),
                                                    ", not a regular file"));
}

}  // namespace

absl::StatusOr<RegularFile> OpenRegularFile(int dirfd, absl::string_view path,
                                            absl::string_view display, bool no_symlinks) {
  const uint64_t resolve = no_symlinks ? RESOLVE_NO_SYMLINKS : 0;
  absl::StatusOr<UniqueFd> probe = OpenBeneath(dirfd, path, O_PATH, resolve, display);
  if (!probe.ok()) return probe.status();
  struct stat before;
  if (fstat(probe->get(), &before) != 0) return PathError(errno, display);
  if (!S_ISREG(before.st_mode)) return NotRegular(display, before.st_mode);

  RegularFile file;
  absl::StatusOr<UniqueFd> fd = OpenBeneath(dirfd, path, O_RDONLY | O_NONBLOCK, resolve, display);
  if (!fd.ok()) return fd.status();
  if (fstat(fd->get(), &file.st) != 0) return PathError(errno, display);
  if (!S_ISREG(file.st.st_mode)) return NotRegular(display, file.st.st_mode);
  if (file.st.st_ino != before.st_ino || file.st.st_dev != before.st_dev) {
    return absl::AbortedError(
        absl::StrCat("path \"", absl::CHexEscape(display), "\" changed while it was being opened"));
  }
  file.fd = *std::move(fd);
  return file;
}

bool LooksBinary(absl::string_view head) {
  return head.substr(0, kBinaryCheckBytes).find('\0') != absl::string_view::npos;
}

absl::StatusOr<std::string> ReadAt(int fd, size_t offset, size_t max) {
  std::string out;
  char buf[65536];
  while (out.size() < max) {
    const size_t want = std::min(sizeof(buf), max - out.size());
    const ssize_t n = pread(fd, buf, want, static_cast<off_t>(offset + out.size()));
    if (n < 0) {
      if (errno == EINTR) continue;
      return absl::InternalError(absl::StrCat("read failed: ", strerror(errno)));
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

}  // namespace rein
