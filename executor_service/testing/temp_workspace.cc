// Test helper: a temporary workspace root.
#include "executor_service/testing/temp_workspace.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>

namespace rein::testing {
namespace {

void Check(bool ok, const std::string& what) {
  if (!ok) {
    std::perror(what.c_str());
    std::abort();
  }
}

void MakeParents(const std::string& path) {
  for (size_t i = 1; i < path.size(); ++i) {
    if (path[i] != '/') continue;
    const std::string dir = path.substr(0, i);
    if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) Check(false, "mkdir " + dir);
  }
}

}  // namespace

TempWorkspace::TempWorkspace() {
  const char* tmp = std::getenv("TEST_TMPDIR");
  std::string pattern = std::string(tmp != nullptr ? tmp : "/tmp") + "/rootXXXXXX";
  Check(mkdtemp(pattern.data()) != nullptr, "mkdtemp");
  root_ = pattern;
  MakeDir("");
  Check(mkdir((root_ + "/ws2").c_str(), 0755) == 0, "mkdir ws2");
  std::ofstream(root_ + "/ws2/secret.txt") << "sibling secret\n";
  std::ofstream(root_ + "/outside.txt") << "outside secret\n";
}

std::string TempWorkspace::Path(const std::string& rel) const {
  return rel.empty() ? root_ + "/" + kName : root_ + "/" + kName + "/" + rel;
}

void TempWorkspace::WriteFile(const std::string& rel, const std::string& content) const {
  const std::string path = Path(rel);
  MakeParents(path);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
  Check(out.good(), "write " + path);
}

void TempWorkspace::MakeDir(const std::string& rel) const {
  const std::string path = Path(rel);
  MakeParents(path + "/");
}

void TempWorkspace::Symlink(const std::string& target, const std::string& rel) const {
  const std::string path = Path(rel);
  MakeParents(path);
  Check(symlink(target.c_str(), path.c_str()) == 0, "symlink " + path);
}

void TempWorkspace::MakeFifo(const std::string& rel) const {
  const std::string path = Path(rel);
  MakeParents(path);
  Check(mkfifo(path.c_str(), 0644) == 0, "mkfifo " + path);
}

}  // namespace rein::testing
