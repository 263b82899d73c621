/* rein-sandbox-gate: stands in for a command in its sandbox until the executor's go-ahead
   (command_gate.h). bubblewrap runs it, from a descriptor the executor passed (so no mount is
   added for it), as
     /proc/self/fd/PROGRAM_FD GATE_FD PROGRAM_FD COMMAND [ARG...]
   It reads one byte from GATE_FD; with it, it closes both descriptors and executes COMMAND,
   looked up in the first PATH= of its environment as bubblewrap's own execvp would, so the
   command is this process with nothing of the gate left open. At end-of-file or an error (the
   gate shut, the executor gone) it exits with REIN_GATE_SHUT_EXIT_CODE without running
   anything.

   C without a C library, its system calls made here: a static C library's start-up cost
   about a millisecond per command on the measured machine (bench/ANALYSIS.md, "The sandbox
   set up behind a gate"), and it is on every command's path. x86-64 and arm64. */
#include "executor_service/process/command_gate_exit.h"

#if defined(__x86_64__)
#define NR_READ 0
#define NR_WRITE 1
#define NR_CLOSE 3
#define NR_EXECVE 59
#define NR_EXIT_GROUP 231
static long Syscall3(long nr, long a, long b, long c) {
  long ret;
  __asm__ volatile("syscall"
                   : "=a"(ret)
                   : "a"(nr), "D"(a), "S"(b), "d"(c)
                   : "rcx", "r11", "memory");
  return ret;
}
/* The kernel's initial stack: argc, argv..., NULL, envp..., NULL. */
__asm__(
    ".text\n"
    ".globl _start\n"
    "_start:\n"
    "  xor %rbp, %rbp\n"
    "  mov %rsp, %rdi\n"
    "  and $-16, %rsp\n"
    "  call GateMain\n"
    "  hlt\n");
#elif defined(__aarch64__)
#define NR_READ 63
#define NR_WRITE 64
#define NR_CLOSE 57
#define NR_EXECVE 221
#define NR_EXIT_GROUP 94
static long Syscall3(long nr, long a, long b, long c) {
  register long x8 __asm__("x8") = nr;
  register long x0 __asm__("x0") = a;
  register long x1 __asm__("x1") = b;
  register long x2 __asm__("x2") = c;
  __asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2) : "memory");
  return x0;
}
__asm__(
    ".text\n"
    ".globl _start\n"
    "_start:\n"
    "  mov x0, sp\n"
    "  bl GateMain\n"
    "  brk #0\n");
#else
#error "rein-sandbox-gate is written for x86-64 and arm64"
#endif

#define EINTR_ 4
#define ENOENT_ 2
#define ENOTDIR_ 20

static const char kDefaultPath[] = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin";

static __attribute__((noreturn)) void Exit(int code) {
  for (;;) Syscall3(NR_EXIT_GROUP, code, 0, 0);
}

static unsigned long Length(const char* s) {
  unsigned long n = 0;
  while (s[n] != '\0') ++n;
  return n;
}

static void Say(const char* text) {
  unsigned long left = Length(text);
  while (left > 0) {
    const long n = Syscall3(NR_WRITE, 2, (long)text, (long)left);
    if (n == -EINTR_) continue;
    if (n <= 0) return;
    text += n;
    left -= (unsigned long)n;
  }
}

/* What strerror says for the errors an exec gives. */
static const char* ErrorText(long err) {
  switch (err) {
    case 1: return "Operation not permitted";
    case 2: return "No such file or directory";
    case 7: return "Argument list too long";
    case 8: return "Exec format error";
    case 12: return "Cannot allocate memory";
    case 13: return "Permission denied";
    case 20: return "Not a directory";
    case 26: return "Text file busy";
    case 36: return "File name too long";
    case 40: return "Too many levels of symbolic links";
    default: return "Cannot execute";
  }
}

/* A descriptor number of at least 3 in `text`, or -1. */
static int Fd(const char* text) {
  long fd = 0;
  if (*text == '\0') return -1;
  for (; *text != '\0'; ++text) {
    if (*text < '0' || *text > '9' || fd > (1 << 20)) return -1;
    fd = fd * 10 + (*text - '0');
  }
  return fd >= 3 && fd <= (1 << 20) ? (int)fd : -1;
}

static __attribute__((noreturn)) void ExecFailed(const char* name, long err) {
  Say("rein-sandbox-gate: execvp ");
  Say(name);
  Say(": ");
  Say(ErrorText(err));
  Say("\n");
  Exit(REIN_GATE_EXEC_FAILED_EXIT_CODE);
}

/* execvp of argv[0] with the first PATH= of `envp`, as getenv (and so bubblewrap) takes it. */
static __attribute__((noreturn)) void Exec(char** argv, char** envp) {
  const char* name = argv[0];
  unsigned long name_len = Length(name);
  const char* path = kDefaultPath;
  long saved = -ENOENT_;
  char candidate[4096];
  for (const char* c = name; *c != '\0'; ++c) {
    if (*c == '/') ExecFailed(name, -Syscall3(NR_EXECVE, (long)name, (long)argv, (long)envp));
  }
  for (char** e = envp; *e != 0; ++e) {
    const char* v = *e;
    if (v[0] == 'P' && v[1] == 'A' && v[2] == 'T' && v[3] == 'H' && v[4] == '=') {
      path = v + 5;
      break;
    }
  }
  for (const char* p = path;;) {
    unsigned long dir_len = 0;
    while (p[dir_len] != '\0' && p[dir_len] != ':') ++dir_len;
    if (dir_len > 0 && dir_len + 1 + name_len < sizeof(candidate)) {
      unsigned long i;
      for (i = 0; i < dir_len; ++i) candidate[i] = p[i];
      candidate[dir_len] = '/';
      for (i = 0; i <= name_len; ++i) candidate[dir_len + 1 + i] = name[i];
      const long ret = Syscall3(NR_EXECVE, (long)candidate, (long)argv, (long)envp);
      if (ret != -ENOENT_ && ret != -ENOTDIR_) saved = ret;
    }
    if (p[dir_len] == '\0') break;
    p += dir_len + 1;
  }
  ExecFailed(name, -saved);
}

__attribute__((used, noreturn)) void GateMain(long* stack) {
  const long argc = stack[0];
  char** argv = (char**)(stack + 1);
  char** envp = argv + argc + 1;
  if (argc < 4 || Fd(argv[1]) < 0 || Fd(argv[2]) < 0) {
    Say("rein-sandbox-gate: usage: rein-sandbox-gate GATE_FD PROGRAM_FD COMMAND [ARG...] "
        "(started by rein-executor)\n");
    Exit(2);
  }
  const int gate = Fd(argv[1]);
  Syscall3(NR_CLOSE, Fd(argv[2]), 0, 0);
  char go = 0;
  long n;
  while ((n = Syscall3(NR_READ, gate, (long)&go, 1)) == -EINTR_) {
  }
  if (n != 1) Exit(REIN_GATE_SHUT_EXIT_CODE);
  Syscall3(NR_CLOSE, gate, 0, 0);
  Exec(argv + 3, envp);
}
