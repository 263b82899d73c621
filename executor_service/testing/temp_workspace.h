// Test helper: a temporary workspace root (under TEST_TMPDIR) with files, links and FIFOs.
#ifndef REIN_EXECUTOR_SERVICE_TESTING_TEMP_WORKSPACE_H_
#define REIN_EXECUTOR_SERVICE_TESTING_TEMP_WORKSPACE_H_

#include <string>

namespace rein::testing {

// Creates `<TEST_TMPDIR>/rootXXXXXX/` holding the workspace `ws`, a sibling workspace `ws2`
// with `ws2/secret.txt`, and `outside.txt` next to them. Aborts the test binary when the file
// system fails (test setup, not input). Not thread-safe.
class TempWorkspace {
 public:
  TempWorkspace();
  TempWorkspace(const TempWorkspace&) = delete;
  TempWorkspace& operator=(const TempWorkspace&) = delete;

  const std::string& root() const { return root_; }
  static constexpr const char* kName = "ws";

  // Absolute path of `rel` inside the workspace.
  std::string Path(const std::string& rel) const;

  // Writes `content` to `rel` (creating parent directories).
  void WriteFile(const std::string& rel, const std::string& content) const;
  void MakeDir(const std::string& rel) const;
  // Creates the symbolic link `rel` -> `target` (target taken literally).
  void Symlink(const std::string& target, const std::string& rel) const;
  void MakeFifo(const std::string& rel) const;

 private:
  std::string root_;
};

}  // namespace rein::testing

#endif  // REIN_EXECUTOR_SERVICE_TESTING_TEMP_WORKSPACE_H_
