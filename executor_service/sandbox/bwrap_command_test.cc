// Tests of the bubblewrap command line, without bubblewrap.
#include "executor_service/sandbox/bwrap_command.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace rein {
namespace {

using Args = std::vector<std::string>;

// True when `args` holds `run` as consecutive elements.
bool HasRun(const Args& args, const Args& run) {
  return std::search(args.begin(), args.end(), run.begin(), run.end()) != args.end();
}

// The index of the first element equal to `arg`, or args.size().
size_t IndexOf(const Args& args, const std::string& arg) {
  return static_cast<size_t>(std::find(args.begin(), args.end(), arg) - args.begin());
}

BwrapConfig Config() {
  BwrapConfig config;
  config.bwrap_path = "/opt/bwrap";
  config.uid = 1234;
  config.gid = 5678;
  config.tmp_size_bytes = 1 << 20;
  config.system_dirs = {{"/bin", "usr/bin"}, {"/lib64", ""}};
  return config;
}

// Descriptor numbers that cannot be confused with the child's 3, 4, ...
BwrapCommand Command() {
  BwrapCommand command;
  command.seccomp_fd = 103;
  command.status_fd = 104;
  command.workspace_fd = 105;
  command.passwd_fd = 106;
  command.group_fd = 107;
  command.cwd = "/workspace/src";
  command.argv = {"sh", "-c", "echo hi"};
  return command;
}

TEST(BwrapCommandTest, StaticArgsDropEveryPrivilegeAndShareNothing) {
  const Args args = BwrapStaticArgs(Config());
  ASSERT_FALSE(args.empty());
  EXPECT_EQ(args[0], "/opt/bwrap");
  EXPECT_TRUE(HasRun(args, {"--unshare-all"}));
  EXPECT_TRUE(HasRun(args, {"--unshare-user"}));
  EXPECT_TRUE(HasRun(args, {"--disable-userns"}));
  EXPECT_TRUE(HasRun(args, {"--uid", "1234"}));
  EXPECT_TRUE(HasRun(args, {"--gid", "5678"}));
  EXPECT_TRUE(HasRun(args, {"--cap-drop", "ALL"}));
  EXPECT_TRUE(HasRun(args, {"--die-with-parent"}));
  EXPECT_TRUE(HasRun(args, {"--new-session"}));
  // No network: --unshare-all without --share-net; nothing of the host's network is bound.
  EXPECT_EQ(IndexOf(args, "--share-net"), args.size());
  EXPECT_EQ(IndexOf(args, "/etc/resolv.conf"), args.size());
  // Nothing of the host is writable: no --bind and no --dev-bind among the static arguments.
  EXPECT_EQ(IndexOf(args, "--bind"), args.size());
  EXPECT_EQ(IndexOf(args, "--dev-bind"), args.size());
  EXPECT_EQ(IndexOf(args, "/etc/shadow"), args.size());
}

TEST(BwrapCommandTest, StaticArgsMirrorTheSystemReadOnly) {
  const Args args = BwrapStaticArgs(Config());
  EXPECT_TRUE(HasRun(args, {"--ro-bind", "/usr", "/usr"}));
  EXPECT_TRUE(HasRun(args, {"--symlink", "usr/bin", "/bin"}));
  EXPECT_TRUE(HasRun(args, {"--ro-bind", "/lib64", "/lib64"}));
  EXPECT_TRUE(HasRun(args, {"--dir", "/etc"}));
  EXPECT_TRUE(HasRun(args, {"--ro-bind-try", "/etc/ld.so.cache", "/etc/ld.so.cache"}));
  EXPECT_TRUE(HasRun(args, {"--proc", "/proc", "--dev", "/dev"}));
  EXPECT_TRUE(HasRun(args, {"--size", "1048576", "--tmpfs", "/tmp"}));
}

TEST(BwrapCommandTest, StagedDeviceNodesAreBoundOverTheHostsAfterDev) {
  BwrapConfig config = Config();
  config.dev_dir = "/tmp/rein-sandbox-dev-1";
  const Args args = BwrapStaticArgs(config);
  const size_t dev = IndexOf(args, "--dev");
  ASSERT_LT(dev, args.size());
  for (const char* name : {"null", "zero", "full", "random", "urandom", "tty"}) {
    const Args bind = {"--dev-bind", absl::StrCat("/tmp/rein-sandbox-dev-1/", name),
                       absl::StrCat("/dev/", name)};
    const size_t at = static_cast<size_t>(
        std::search(args.begin(), args.end(), bind.begin(), bind.end()) - args.begin());
    EXPECT_LT(at, args.size()) << name;
    EXPECT_GT(at, dev) << name << " must be bound after --dev makes /dev";
  }
  std::vector<std::string> names;
  for (const SandboxDevNode& node : SandboxDevNodes()) names.push_back(node.name);
  EXPECT_EQ(names, Args({"null", "zero", "full", "random", "urandom", "tty"}));
}

TEST(BwrapCommandTest, InvocationBindsTheWorkspaceAndTheSeccompProgramByDescriptor) {
  const Args static_args = BwrapStaticArgs(Config());
  const BwrapInvocation invocation = BuildBwrapInvocation(static_args, Command());
  const Args& args = invocation.argv;
  ASSERT_GT(args.size(), static_args.size());
  EXPECT_TRUE(std::equal(static_args.begin(), static_args.end(), args.begin()));
  EXPECT_EQ(invocation.pass_fds, (std::vector<int>{103, 104, 105, 106, 107}));
  // Child descriptors: 3 seccomp, 4 status, 5 workspace, 6 passwd, 7 group.
  EXPECT_TRUE(HasRun(args, {"--seccomp", "3"}));
  EXPECT_TRUE(HasRun(args, {"--json-status-fd", "4"}));
  EXPECT_TRUE(HasRun(args, {"--bind-fd", "5", "/workspace"}));
  EXPECT_TRUE(HasRun(args, {"--ro-bind-data", "6", "/etc/passwd"}));
  EXPECT_TRUE(HasRun(args, {"--ro-bind-data", "7", "/etc/group"}));
  EXPECT_TRUE(HasRun(args, {"--remount-ro", "/", "--chdir", "/workspace/src"}));
  // The command comes last, after "--", untouched.
  EXPECT_TRUE(HasRun(args, {"--", "sh", "-c", "echo hi"}));
  EXPECT_EQ(args.back(), "echo hi");
  EXPECT_EQ(IndexOf(args, "--"), args.size() - 4);
}

TEST(BwrapCommandTest, ProtectedMountsGetTheNextDescriptorsInOrder) {
  BwrapCommand command = Command();
  command.mounts = {{BwrapMount::Kind::kBind, ".git", 110},
                    {BwrapMount::Kind::kReadOnlyBind, ".git/config", 111},
                    {BwrapMount::Kind::kReadOnlyTmpfs, ".git/hooks"},
                    {BwrapMount::Kind::kReadOnlyBind, ".git/commondir", 112}};
  const BwrapInvocation invocation = BuildBwrapInvocation(BwrapStaticArgs(Config()), command);
  const Args& args = invocation.argv;
  EXPECT_EQ(invocation.pass_fds, (std::vector<int>{103, 104, 105, 106, 107, 110, 111, 112}));
  EXPECT_TRUE(HasRun(args, {"--bind-fd", "8", "/workspace/.git"}));
  EXPECT_TRUE(HasRun(args, {"--ro-bind-fd", "9", "/workspace/.git/config"}));
  EXPECT_TRUE(HasRun(args, {"--size", "4096", "--tmpfs", "/workspace/.git/hooks", "--remount-ro",
                            "/workspace/.git/hooks"}));
  EXPECT_TRUE(HasRun(args, {"--ro-bind-fd", "10", "/workspace/.git/commondir"}));
  // In the given order, after the workspace and before the root becomes read-only.
  const size_t workspace = IndexOf(args, "/workspace");
  const size_t git = IndexOf(args, "/workspace/.git");
  const size_t config = IndexOf(args, "/workspace/.git/config");
  const size_t hooks = IndexOf(args, "/workspace/.git/hooks");
  const size_t commondir = IndexOf(args, "/workspace/.git/commondir");
  const size_t remount_root = IndexOf(args, "--chdir") - 2;
  EXPECT_EQ(args[remount_root], "--remount-ro");
  EXPECT_LT(workspace, git);
  EXPECT_LT(git, config);
  EXPECT_LT(config, hooks);
  EXPECT_LT(hooks, commondir);
  EXPECT_LT(commondir, remount_root);
}

TEST(BwrapCommandTest, PlaceholderSharedByMissingPathsIsMountedOnce) {
  // .git is missing: .git/config, .git/hooks and .git/commondir all get the placeholder .git.
  BwrapCommand command = Command();
  command.mounts = {{BwrapMount::Kind::kReadOnlyTmpfs, ".git"},
                    {BwrapMount::Kind::kReadOnlyTmpfs, ".git"},
                    {BwrapMount::Kind::kReadOnlyTmpfs, ".git"},
                    {BwrapMount::Kind::kReadOnlyTmpfs, "sub/.git"}};
  const Args args = BuildBwrapInvocation(BwrapStaticArgs(Config()), command).argv;
  EXPECT_EQ(std::count(args.begin(), args.end(), "/workspace/.git"), 2);  // --tmpfs, --remount-ro
  EXPECT_TRUE(HasRun(
      args, {"--size", "4096", "--tmpfs", "/workspace/.git", "--remount-ro", "/workspace/.git"}));
  EXPECT_TRUE(HasRun(args, {"--size", "4096", "--tmpfs", "/workspace/sub/.git", "--remount-ro",
                            "/workspace/sub/.git"}));
}

TEST(BwrapCommandTest, HostSystemDirsAreDirectoriesOrLinks) {
  for (const SystemDir& dir : HostSystemDirs()) {
    EXPECT_EQ(dir.path[0], '/') << dir.path;
  }
  // Every Linux host has /bin, as a directory or as a link to usr/bin.
  const std::vector<SystemDir> dirs = HostSystemDirs();
  EXPECT_TRUE(std::any_of(dirs.begin(), dirs.end(),
                          [](const SystemDir& dir) { return dir.path == "/bin"; }));
}

}  // namespace
}  // namespace rein
