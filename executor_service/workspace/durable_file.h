// Writing files so that a crash leaves either the old content or the new, whole: the one
// temporary-file, fsync, rename, fsync-the-directory sequence of the executor.
#ifndef REIN_EXECUTOR_SERVICE_WORKSPACE_DURABLE_FILE_H_
#define REIN_EXECUTOR_SERVICE_WORKSPACE_DURABLE_FILE_H_

#include <sys/types.h>

#include <string>

#include "absl/strings/string_view.h"

namespace rein {

// Writes all of `data` to `fd`, retrying short writes and EINTR. 0, or the errno of the
// failure (EIO for a write that wrote nothing).
int WriteAll(int fd, absl::string_view data);

// fsyncs the directory `dir_fd` (any descriptor of it, O_PATH too; or the one at `path`), making
// the names in it durable. Best effort: a directory that cannot be synced is not an error a caller
// could act on.
void SyncDirectory(int dir_fd);
void SyncDirectory(const std::string& path);

// Replaces (or creates) `name` in the directory `dir_fd` with `data`, mode `mode`: writes the
// temporary file `temp_name` (created exclusively, never through a symbolic link) in the same
// directory, fsyncs it, renames it onto `name`, then fsyncs the directory. A crash at any
// point leaves `name` as it was or as written, never partly written. On failure the temporary
// file is removed. Returns 0, or the errno of the failed step (for the caller's own message).
int WriteFileDurably(int dir_fd, const std::string& name, const std::string& temp_name,
                     absl::string_view data, mode_t mode);

}  // namespace rein

#endif  // REIN_EXECUTOR_SERVICE_WORKSPACE_DURABLE_FILE_H_
