#!/usr/bin/env python3
"""What the call journal's two flushes cost on a file system, as made today and with the reply's
file preallocated (bench/ANALYSIS.md, "Not adopted").

Alternates two ways of making one call's records, with a snapshot's worth of directories and
files made and removed between the claim and the reply (as the executor does):
  today:        claim = create the empty reply file, fsync the directory;
                reply = write the record (the file grows), fdatasync.
  preallocated: claim = create the reply file with 4 KiB of zeros, fsync it and the directory;
                reply = overwrite the zeros in place, fdatasync (no size change).
Prints the median of each step. Run on the file system of the executor's --workspace_root:
    python3 bench/journal_flush_probe.py [--dir /tmp] [--calls 300]
"""
import argparse
import os
import shutil
import statistics
import tempfile
import time


def churn(d, i):
    snap = f"{d}/snap{i}"
    os.mkdir(snap)
    for j in range(3):
        with open(f"{snap}/f{j}", "wb") as f:
            f.write(b"x" * 100)
    with open(f"{d}/size{i}", "w") as f:
        f.write("1 2")
    if i >= 16:  # retention
        shutil.rmtree(f"{d}/snap{i - 16}")
        os.unlink(f"{d}/size{i - 16}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dir", default="/tmp")
    parser.add_argument("--calls", type=int, default=300)
    args = parser.parse_args()
    d = tempfile.mkdtemp(prefix="journal-flush-", dir=args.dir)
    dfd = os.open(d, os.O_RDONLY)
    data = b'{"x":' + b"1" * 300 + b"}"
    res = {k: [] for k in ("claim today", "reply today", "claim preallocated",
                           "reply preallocated")}
    try:
        for i in range(args.calls):
            kind = "preallocated" if i % 2 == 0 else "today"
            path = f"{d}/r{i}"
            t = time.perf_counter()
            fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
            if kind == "preallocated":
                os.write(fd, b"\0" * 4096)
                os.fsync(fd)
            os.fsync(dfd)
            res[f"claim {kind}"].append(time.perf_counter() - t)
            os.close(fd)
            churn(d, i)
            fd = os.open(path, os.O_WRONLY)
            t = time.perf_counter()
            os.pwrite(fd, data, 0)
            os.fdatasync(fd)
            res[f"reply {kind}"].append(time.perf_counter() - t)
            os.close(fd)
    finally:
        os.close(dfd)
        shutil.rmtree(d)
    print(f"{args.calls // 2} calls each; load average {os.getloadavg()[0]:.2f}")
    for k, v in res.items():
        print(f"{k:20s} p50 {statistics.median(v) * 1e3:7.3f} ms")


if __name__ == "__main__":
    main()
