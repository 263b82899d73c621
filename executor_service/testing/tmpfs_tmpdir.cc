// Linked into a test binary, mounts one small tmpfs for the whole binary and points
// TEST_TMPDIR at it before the first test, so that every workspace the tests make (and the
// hostile trees planted in them) lies there and cannot fill the machine's disk; unmounted
// after the last test.
#include <stdlib.h>

#include <memory>

#include "executor_service/testing/small_tmpfs.h"
#include "gtest/gtest.h"

namespace rein::testing {
namespace {

class TmpfsTmpdir : public ::testing::Environment {
 public:
  void SetUp() override {
    fs_ = std::make_unique<SmallTmpfs>(int64_t{512} << 20);
    ASSERT_TRUE(fs_->mounted()) << "the suite mounts a tmpfs (needs root): " << fs_->error();
    setenv("TEST_TMPDIR", fs_->path().c_str(), /*overwrite=*/1);
  }
  void TearDown() override { fs_.reset(); }

 private:
  std::unique_ptr<SmallTmpfs> fs_;
};

[[maybe_unused]] ::testing::Environment* const kTmpfsTmpdir =
    ::testing::AddGlobalTestEnvironment(new TmpfsTmpdir);

}  // namespace
}  // namespace rein::testing
