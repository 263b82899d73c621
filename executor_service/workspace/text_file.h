// Opening and reading workspace files safely: regular files only, never blocking, bounded.
#ifndef REIN_EXECUTOR_SERVICE_TEXT_FILE_H_
#define REIN_EXECUTOR_SERVICE_TEXT_FILE_H_

#include <sys/stat.h>

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "executor_service/process/unique_fd.h"

namespace rein {

// A file is binary when a NUL byte appears in its first kBinaryCheckBytes.
inline constexpr size_t kBinaryCheckBytes = 8192;
// Files larger than this are not searched and get no line count.
inline constexpr size_t kMaxScannedFileBytes = 10 << 20;

// An open regular file and its stat.
struct RegularFile {
  UniqueFd fd;
  struct stat st;
};

// Opens `path` beneath `dirfd` for reading when it is a regular file. The file is first
// opened O_PATH and checked with fstat, so FIFOs and devices are refused without ever being
// opened for reading; the reopen is O_NONBLOCK and must yield the same inode.
// FAILED_PRECONDITION (naming `display`) for anything but a regular file; confinement errors
// as OpenBeneath. `no_symlinks` refuses symbolic links anywhere in `path`.
absl::StatusOr<RegularFile> OpenRegularFile(int dirfd, absl::string_view path,
                                            absl::string_view display, bool no_symlinks);

// True when `head` contains a NUL byte in its first kBinaryCheckBytes.
bool LooksBinary(absl::string_view head);

// Reads from `fd` at `offset` until EOF or `max` bytes.
absl::StatusOr<std::string> ReadAt(int fd, size_t offset, size_t max);

}  // namespace rein

#endif  // REIN_EXECUTOR_SERVICE_TEXT_FILE_H_
