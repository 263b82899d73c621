#!/usr/bin/env python3
"""What rein's bubblewrap arguments cost over bare bwrap, without the executor.

Runs /usr/bin/true under bare bwrap (sandbox_bench's "bare" argument list) and under the argument
list the executor builds for a fresh sandbox (BwrapStaticArgs + BuildBwrapInvocation, as
`strace -f -v -s 300 -e trace=execve` of rein-executor printed it on 2026-12-03, root executor:
staged /etc and device nodes, a missing .git), and that list with one piece left out at a time.
Every round runs each variant once, back to back; each line gives the median over rounds of the
variant's time divided by bare's (and by the full list's) in the same round. The seccomp program
is an allow-all one: filter size does not matter to bwrap's start-up. Run as root (device nodes):
    python3 bench/bwrap_args_bench.py [--rounds 60]
"""
import argparse
import os
import shutil
import statistics
import struct
import tempfile
import time

BWRAP = "/usr/bin/bwrap"
DEV_NODES = [("null", 1, 3), ("zero", 1, 5), ("full", 1, 7), ("random", 1, 8),
             ("urandom", 1, 9), ("tty", 5, 0)]


def stage(root):
    os.makedirs(f"{root}/etc")
    os.makedirs(f"{root}/dev")
    os.makedirs(f"{root}/ws")
    for name in ("ld.so.cache", "passwd", "group"):
        if os.path.exists(f"/etc/{name}"):
            shutil.copy(f"/etc/{name}", f"{root}/etc/{name}")
    for name, major, minor in DEV_NODES:
        path = f"{root}/dev/{name}"
        os.mknod(path, 0o20666, os.makedev(major, minor))
        os.chmod(path, 0o666)
        os.chown(path, 65533, 65533)
    with open(f"{root}/allow.bpf", "wb") as f:
        f.write(struct.pack("HBBI", 0x06, 0, 0, 0x7FFF0000))  # BPF_RET|BPF_K, SECCOMP_RET_ALLOW


def variants(root):
    bare = [BWRAP, "--unshare-all", "--unshare-user", "--die-with-parent", "--ro-bind", "/usr",
            "/usr", "--symlink", "usr/lib64", "/lib64", "--symlink", "usr/lib", "/lib",
            "--symlink", "usr/bin", "/bin", "--proc", "/proc", "--dev", "/dev", "/usr/bin/true"]
    full = [BWRAP, "--unshare-all", "--unshare-user", "--disable-userns", "--uid", "65534",
            "--gid", "65534", "--cap-drop", "ALL", "--die-with-parent", "--new-session",
            "--hostname", "sandbox", "--ro-bind", "/usr", "/usr"]
    for d in ("bin", "sbin", "lib", "lib32", "lib64"):
        full += ["--symlink", f"usr/{d}", f"/{d}"]
    full += ["--ro-bind", f"{root}/etc", "/etc", "--proc", "/proc", "--dev", "/dev"]
    for name, _, _ in DEV_NODES:
        full += ["--dev-bind", f"{root}/dev/{name}", f"/dev/{name}"]
    full += ["--size", "268435456", "--tmpfs", "/tmp", "--bind", f"{root}/ws", "/workspace",
             "--size", "4096", "--tmpfs", "/workspace/.git", "--remount-ro", "/workspace/.git",
             "--remount-ro", "/", "--chdir", "/workspace", "--seccomp", "3",
             "--json-status-fd", "4", "--", "/usr/bin/true"]

    def without(args, *seqs):
        for seq in seqs:
            seq = list(seq)
            while True:
                at = next((i for i in range(len(args)) if args[i:i + len(seq)] == seq), None)
                if at is None:
                    break
                args = args[:at] + args[at + len(seq):]
        return args

    dev_binds = [["--dev-bind", f"{root}/dev/{n}", f"/dev/{n}"] for n, _, _ in DEV_NODES]
    return {
        "bare": bare,
        "rein": full,
        "rein without the 6 --dev-bind": without(full, *dev_binds),
        "rein without --seccomp": without(full, ["--seccomp", "3"]),
        "rein without --remount-ro /": without(full, ["--remount-ro", "/"]),
        "rein without the .git placeholder": without(
            full, ["--size", "4096", "--tmpfs", "/workspace/.git"],
            ["--remount-ro", "/workspace/.git"]),
        "rein without the /tmp tmpfs": without(full, ["--size", "268435456", "--tmpfs", "/tmp"]),
        "rein without --disable-userns": without(full, ["--disable-userns"]),
    }


def run(root, args):
    seccomp = os.open(f"{root}/allow.bpf", os.O_RDONLY)
    read_end, write_end = os.pipe()
    start = time.perf_counter()
    pid = os.posix_spawn(args[0], args, {}, file_actions=[
        (os.POSIX_SPAWN_DUP2, seccomp, 3), (os.POSIX_SPAWN_DUP2, write_end, 4)])
    _, status = os.waitpid(pid, 0)
    took = time.perf_counter() - start
    for fd in (seccomp, read_end, write_end):
        os.close(fd)
    if status != 0:
        raise SystemExit(f"bwrap failed ({status}): {' '.join(args)}")
    return took * 1000


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=60)
    rounds = parser.parse_args().rounds
    root = tempfile.mkdtemp(prefix="rein-bwrap-args-")
    try:
        stage(root)
        kinds = variants(root)
        for args in kinds.values():
            run(root, args)  # warm up
        times = {k: [] for k in kinds}
        for _ in range(rounds):
            for k, args in kinds.items():
                times[k].append(run(root, args))
        print(f"{rounds} rounds; load average {os.getloadavg()[0]:.2f}")
        for k in kinds:
            to_bare = statistics.median(a / b for a, b in zip(times[k], times["bare"]))
            to_rein = statistics.median(a / b for a, b in zip(times[k], times["rein"]))
            print(f"{k:36s} p50 {statistics.median(times[k]):7.2f} ms   / bare {to_bare:.2f}x"
                  f"   / rein {to_rein:.2f}x")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
