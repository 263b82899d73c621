// Test helper run inside the sandbox: tries one forbidden thing and prints what happened.
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

int Report(const char* what, long result) {
  if (result < 0) {
    printf("%s: errno %d (%s)\n", what, errno, strerror(errno));
    return 1;
  }
  printf("%s: ok %ld\n", what, result);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr,
            "usage: sandbox_probe ptrace|vm_readv|tiocsti|tiocsti_high|io_uring|"
            "inet|unix|alloc MB|euid|chmod_suid FILE\n");
    return 2;
  }
  const char* mode = argv[1];
  if (strcmp(mode, "ptrace") == 0) {
    const pid_t child = fork();
    if (child == 0) {
      pause();
      _exit(0);
    }
    const long r = ptrace(PTRACE_ATTACH, child, nullptr, nullptr);
    const int err = errno;
    kill(child, SIGKILL);
    waitpid(child, nullptr, 0);
    errno = err;
    return Report("ptrace", r);
  }
  if (strcmp(mode, "vm_readv") == 0) {
    char source[16] = "secret";
    char target[16] = {0};
    struct iovec local = {target, sizeof(target)};
    struct iovec remote = {source, sizeof(source)};
    return Report("process_vm_readv", process_vm_readv(getpid(), &local, 1, &remote, 1, 0));
  }
  if (strcmp(mode, "tiocsti") == 0) {
    char c = 'x';
    return Report("tiocsti", syscall(SYS_ioctl, 0, static_cast<unsigned long>(TIOCSTI), &c));
  }
  if (strcmp(mode, "tiocsti_high") == 0) {
    char c = 'x';
    const unsigned long request = 0xdead000000000000ul | TIOCSTI;
    return Report("tiocsti_high", syscall(SYS_ioctl, 0, request, &c));
  }
  if (strcmp(mode, "io_uring") == 0) {
    char params[120] = {0};
    return Report("io_uring_setup", syscall(SYS_io_uring_setup, 4, params));
  }
  if (strcmp(mode, "inet") == 0) return Report("socket_inet", socket(AF_INET, SOCK_STREAM, 0));
  if (strcmp(mode, "inet6") == 0) return Report("socket_inet6", socket(AF_INET6, SOCK_DGRAM, 0));
  if (strcmp(mode, "netlink") == 0)
    return Report("socket_netlink", socket(AF_NETLINK, SOCK_RAW, 0));
  if (strcmp(mode, "unix") == 0) return Report("socket_unix", socket(AF_UNIX, SOCK_STREAM, 0));
  if (strcmp(mode, "alloc") == 0 && argc > 2) {
    const size_t bytes = static_cast<size_t>(atol(argv[2])) << 20;
    char* p = static_cast<char*>(malloc(bytes));
    if (p == nullptr) {
      printf("alloc: failed\n");
      return 3;
    }
    memset(p, 1, bytes);
    printf("alloc: ok\n");
    return 0;
  }
  if (strcmp(mode, "euid") == 0) {
    printf("euid %d uid %d\n", static_cast<int>(geteuid()), static_cast<int>(getuid()));
    return 0;
  }
  if (strcmp(mode, "chmod_suid") == 0 && argc > 2) {
    return Report("chmod_suid", chmod(argv[2], 04755));
  }
  if (strcmp(mode, "create_suid") == 0 && argc > 2) {
    return Report("create_suid", open(argv[2], O_CREAT | O_WRONLY, 04755));
  }
  fprintf(stderr, "unknown mode %s\n", mode);
  return 2;
}
