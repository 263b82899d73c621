// Test helper: the file-system shapes that attack copies of a workspace (sparse files, hard
// links, deep trees), built on a small tmpfs (SmallTmpfs) so that they cannot fill a disk.
#ifndef REIN_EXECUTOR_SERVICE_TESTING_HOSTILE_TREE_H_
#define REIN_EXECUTOR_SERVICE_TESTING_HOSTILE_TREE_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"

namespace rein::testing {

// Creates `path` as a sparse file of `size` bytes holding "data" at size / 2 (one page
// allocated, whatever the size).
absl::Status MakeSparseFile(const std::string& path, int64_t size);

// Builds `depth` nested directories "d" under the existing `top`, opening each relative to
// the one before (no path grows with the depth), with an empty file "leaf" at the bottom.
absl::Status MakeDeepTree(const std::string& top, int depth);

// What issue 25's escape-test workspace held, added to the existing directory `workspace`:
// "sparse.img", a 10 GB sparse file, with a hard link "sparse.link", and "deep/", a tree
// 30,000 directories deep.
absl::Status PlantHostileWorkspace(const std::string& workspace);

}  // namespace rein::testing

#endif  // REIN_EXECUTOR_SERVICE_TESTING_HOSTILE_TREE_H_
