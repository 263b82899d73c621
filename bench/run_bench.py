#!/usr/bin/env python3
"""rein's benchmark orchestrator: runs every benchmark phase (each under a timeout, in its own
process group), gathers their `BENCH<TAB>key<TAB>value<TAB>unit` lines and prints one table of
ratios against their targets, then every figure; writes the same into BENCHMARKS.md.

    bench/run_bench.py --root bazel-bin [--quick] [--out BENCHMARKS.md] [--phases a,b]

`--root` is the folder that holds the built binaries under their package paths (bazel-bin, or a
test's runfiles). A phase whose binary is not there is reported as "not built" and skipped; a
phase that overruns its timeout is killed with its process group and reported as "timed out".
The orchestrator never asserts a speed: it prints figures and whether each target is met.

Adding a phase is one line in PHASES; adding a ratio is one line in RATIOS.
"""

import argparse
import datetime
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_ROOT = os.path.dirname(HERE)
LANGGRAPH_DIR = os.path.join(HERE, "langgraph")


def floor_args(f, prefix=""):
    """floor_bench sized by what router_bench measured in the same run (its figures under
    `prefix`)."""
    m = {"decide_request": "decide_request", "decide_response": "decide_response",
         "execute_request": "execute_request", "execute_response": "execute_response",
         "evaluate_request": "evaluate_request", "evaluate_response": "evaluate_response",
         "state": "state", "events_per_iteration": "events_per_it"}
    return ["--%s=%d" % (flag, f[prefix + "router.payload." + key][0])
            for flag, key in m.items() if prefix + "router.payload." + key in f]


def node_loop(threads, iterations, quick_iterations, normal=False):
    """LangGraph.js's loop: `threads` threads of `iterations` (`quick_iterations` when quick)."""
    return lambda root, quick, f: [
        "node", os.path.join(LANGGRAPH_DIR, "loop.mjs"), "--threads", str(threads),
        "--iterations", str(quick_iterations if quick else iterations)] + (
            ["--synchronous_normal"] if normal else [])


def binary(path, *args):
    return lambda root, quick, f: [os.path.join(root, path)] + list(args) + (
        ["--quick"] if quick else [])


class Phase:
    """name, the command (a function of root, quick and the figures so far), the file that must
    exist, the timeout in seconds (full, quick), and an optional preparation step."""

    def __init__(self, name, command, needs, timeout, prepare=None, group=None, prefix=""):
        self.name, self.command, self.needs, self.timeout, self.prepare = (
            name, command, needs, timeout, prepare)
        # `--phases` selects a phase by its name or its group; its figures are stored under
        # `prefix` + the key the binary printed.
        self.group, self.prefix = group, prefix
        self.full_only = False  # skipped with --quick


def prepare_langgraph(log):
    """Installs bench/langgraph's pinned packages with `npm ci` unless they already are.
    Returns None when ready, else why the phase is skipped."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        return "node or npm is not installed (./dev setup installs nodejs)"
    lock = os.path.join(LANGGRAPH_DIR, "package-lock.json")
    stamp = os.path.join(LANGGRAPH_DIR, "node_modules", ".package-lock.json")
    if os.path.exists(stamp) and os.path.getmtime(stamp) >= os.path.getmtime(lock):
        return None
    log("installing LangGraph.js with npm ci (once; pinned by bench/langgraph/package-lock.json)")
    try:
        proc = subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=LANGGRAPH_DIR,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              timeout=900, start_new_session=True)
    except subprocess.TimeoutExpired:
        return "npm ci did not finish in 15 minutes (is the npm registry reachable?)"
    if proc.returncode != 0:
        tail = " ".join(proc.stdout.strip().splitlines()[-3:])
        return "npm ci failed (is the npm registry reachable?): " + tail[:300]
    return None


# The phases, in order. floor runs after router because it takes router's payload sizes.
PHASES = [
    Phase("router", lambda root, quick, f: [
        os.path.join(root, "bench/router_bench"),
        "--router_binary=" + os.path.join(root, "router_service/rein-router")] + (
            ["--quick"] if quick else []), "bench/router_bench", (420, 100)),
    Phase("floor", lambda root, quick, f: [os.path.join(root, "bench/floor_bench")] + floor_args(f) + (
        ["--quick"] if quick else []), "bench/floor_bench", (120, 60)),
    Phase("router_pg", lambda root, quick, f: [
        os.path.join(root, "bench/router_bench"), "--store=postgres", "--memory_runs=0", "--watchers=0",
        "--router_binary=" + os.path.join(root, "router_service/rein-router")] + (
            ["--quick", "--large_runs=0"] if quick else []), "bench/router_bench", (300, 90)),
    Phase("langgraph", node_loop(1, 300, 50), None, (120, 60), prepare_langgraph),
    Phase("langgraph.c100", node_loop(100, 30, 5), None, (240, 90), prepare_langgraph),
    Phase("langgraph.normal", node_loop(1, 300, 50, normal=True), None, (120, 60),
          prepare_langgraph),
    Phase("langgraph.normal.c100", node_loop(100, 30, 5, normal=True), None, (240, 90),
          prepare_langgraph),
    Phase("memory", binary("bench/abuse_bench"), "bench/abuse_bench", (420, 120)),
    Phase("sandbox", lambda root, quick, f: [
        os.path.join(root, "bench/sandbox_bench"),
        "--executor_binary=" + os.path.join(root, "executor_service/rein-executor")] + (
            ["--quick"] if quick else []), "bench/sandbox_bench", (240, 90)),
    Phase("tokens", binary("bench/token_bench"), "bench/token_bench", (240, 90)),
    Phase("prompt", binary("bench/prompt_bench"), "bench/prompt_bench", (240, 90)),
]

# Side-by-side pairs: the three figures whose targets are ratios between two phases measured
# again, PAIRS times, one right after the other (rein's 1 run and 100 runs, the floor, LangGraph.js
# at 100 runs), so that each pair sees the machine in the same state; PAIRED rows report the
# median of the pairs' ratios and their range. The phases above measure each figure once, minutes
# apart, on a machine whose speed drifts (see bench/ANALYSIS.md).
PAIRS = 3


def pair_phases(i):
    """The phases of pair `i` (figures under "pair<i>.")."""
    prefix = "pair%d." % i
    return [
        Phase(prefix + "router", lambda root, quick, f: [
            os.path.join(root, "bench/router_bench"), "--watchers=0", "--large_runs=0",
            "--memory_runs=0",
            "--router_binary=" + os.path.join(root, "router_service/rein-router")] + (
                ["--quick"] if quick else []), "bench/router_bench", (180, 60), group="pairs",
            prefix=prefix),
        Phase(prefix + "floor", lambda root, quick, f: [
            os.path.join(root, "bench/floor_bench")] + floor_args(f, prefix) + (
                ["--quick"] if quick else []), "bench/floor_bench", (120, 60), group="pairs",
            prefix=prefix),
        Phase(prefix + "langgraph.c100", node_loop(100, 30, 5), None, (240, 90),
              prepare_langgraph, group="pairs", prefix=prefix),
    ]


for _i in range(1, PAIRS + 1):
    for _phase in pair_phases(_i):
        _phase.full_only = _i > 1  # --quick runs one pair
        PHASES.append(_phase)

PAIRED = [
    ("rein overhead per iteration p50 / floor (1 run), median of the side-by-side pairs",
     "router.1run.p50", "floor.iteration.p50", "<=", 2.0),
    ("rein overhead per iteration p99 / floor (1 run), median of the side-by-side pairs",
     "router.1run.p99", "floor.iteration.p50", "<=", 4.0),
    ("rein it/s at 100 runs / LangGraph.js it/s at 100, median of the side-by-side pairs",
     "router.c100.it_per_s", "langgraph.c100.it_per_s", ">=", 10.0),
]

# Ratio rows: label, numerator key, denominator key (or a number), "<=" / ">=" / None (no
# target), target. A row whose figures are missing says which one.
RATIOS = [
    ("rein overhead per iteration p50 / floor (1 run)", "router.1run.p50", "floor.iteration.p50",
     "<=", 2.0),
    ("rein overhead per iteration p99 / floor (1 run)", "router.1run.p99", "floor.iteration.p50",
     "<=", 4.0),
    ("same, p50 with one live WatchRun stream on the run / floor", "router.1run_watched.p50",
     "floor.iteration.p50", None, None),
    ("rein it/s at 100 runs / LangGraph.js it/s at 100", "router.c100.it_per_s",
     "langgraph.c100.it_per_s", ">=", 10.0),
    ("rein it/s at 100 runs / LangGraph.js at synchronous=NORMAL", "router.c100.it_per_s",
     "langgraph.normal.c100.it_per_s", None, None),
    ("rein p50 / LangGraph.js p50 (1 run)", "router.1run.p50", "langgraph.1run.p50", None, None),
    ("router CPU per iteration / LangGraph.js CPU per iteration (100 runs)",
     "router.c100.cpu_per_it", "langgraph.c100.cpu_per_it", None, None),
    ("router + the bench's fake planner, executor and client, CPU per iteration / LangGraph.js "
     "(100 runs)", "router.c100.all_cpu_per_it", "langgraph.c100.cpu_per_it", None, None),
    ("rein it/s at 1,000 runs / at 100 runs", "router.c1000.it_per_s", "router.c100.it_per_s",
     ">=", 0.9),
    ("per-run iteration p99 / p50 at 1,000 runs", "router.c1000.p99", "router.c1000.p50", "<=",
     2.0),
    ("router RSS with 1,000 runs in flight (MiB) / 64 MiB", "router.rss.in_flight", 64.0, "<=",
     1.0),
    ("PostgreSQL: overhead per iteration p50 / floor (1 run)", "router_pg.1run.p50",
     "floor.iteration.p50", None, None),
    ("PostgreSQL: rein it/s at 100 runs / LangGraph.js at 100", "router_pg.c100.it_per_s",
     "langgraph.c100.it_per_s", ">=", 10.0),
    ("PostgreSQL: it/s at 1,000 runs / at 100 runs", "router_pg.c1000.it_per_s",
     "router_pg.c100.it_per_s", ">=", 0.9),
    ("PostgreSQL: per-run iteration p99 / p50 at 1,000 runs", "router_pg.c1000.p99",
     "router_pg.c1000.p50", "<=", 2.0),
    ("router RSS 10 s after abuse / idle", "memory.router.after_10s_mib", "memory.router.idle_mib",
     "<=", 2.0),
    ("planner RSS 10 s after abuse / idle", "memory.planner.after_10s_mib",
     "memory.planner.idle_mib", "<=", 2.0),
    ("executor RSS 10 s after abuse / idle", "memory.executor.after_10s_mib",
     "memory.executor.idle_mib", "<=", 2.0),
    ("router RSS with 1,000 runs in flight after abuse / 64 MiB",
     "memory.router.inflight_1000_mib", 64.0, "<=", 1.0),
    ("run_command (fresh sandbox per command) p50 / bare bwrap p50", "sandbox.run_command.p50",
     "sandbox.bwrap.p50", "<=", 1.5),
    ("run_command / bare bwrap, median of the rounds' ratios (one call of each, back to back)",
     "sandbox.run_command_vs_bwrap.round_median", 1.0, "<=", 1.5),
    ("run_command p99 / its p50", "sandbox.run_command.p99", "sandbox.run_command.p50", "<=", 2.0),
    ("run_command p50 / fork+exec p50", "sandbox.run_command.p50", "sandbox.forkexec.p50", None,
     None),
    ("run_command --sandbox_resident p50 / bare bwrap p50",
     "sandbox.run_command_resident.p50", "sandbox.bwrap.p50", None, None),
    ("decide prompt tokens, iteration 50 / iteration 2", "prompt.decide.growth_2_50", 1.0, "<=",
     1.2),
    ("plan prompt tokens, iteration 50 / iteration 2", "prompt.plan.growth_2_50", 1.0, "<=", 1.05),
    ("evaluate prompt tokens, iteration 50 / iteration 2", "prompt.evaluate.growth_2_50", 1.0,
     "<=", 1.05),
    # The ReAct side is measured in the same token_bench run: a ReAct loop with prompt caching
    # doing the same reads with the same tools on the same fake (bench/token_run.h).
    ("rein priced input tokens, 50 small reads / ReAct with caching",
     "tokens.small_reads.priced_input", "tokens.react.small_reads.priced_input", "<=", 1.0),
    ("rein priced input tokens, 50 reads of 4 KB / ReAct with caching",
     "tokens.4kb_reads.priced_input", "tokens.react.4kb_reads.priced_input", "<=", 0.5),
    ("same, small reads, rein planning up to 20 subtasks per reply / ReAct",
     "tokens.small_reads_full_plan.priced_input", "tokens.react.small_reads.priced_input", None,
     None),
    ("same, reads of 4 KB, rein planning up to 20 subtasks per reply / ReAct",
     "tokens.4kb_reads_full_plan.priced_input", "tokens.react.4kb_reads.priced_input", None,
     None),
]

BENCH_LINE = re.compile(r"^BENCH\t([a-z0-9_.]+)\t([-+0-9.eE]+|nan|inf)\t(\S+)\s*$")


class Runner:
    def __init__(self, args):
        self.args = args
        self.figures = {}  # key -> (value, unit, phase)
        self.status = []   # (phase, status, seconds, note)
        self.child = None
        self.lock = threading.Lock()

    def log(self, msg):
        print("==> " + msg, flush=True)

    def kill_child(self):
        with self.lock:
            child = self.child
        if child is None or child.poll() is not None:
            return
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(child.pid, sig)
            except ProcessLookupError:
                return
            try:
                child.wait(timeout=3)
                return
            except subprocess.TimeoutExpired:
                pass

    def run_phase(self, phase):
        root, quick = self.args.root, self.args.quick
        if phase.needs and not os.access(os.path.join(root, phase.needs), os.X_OK):
            self.log("%s: not built (%s missing), skipped" % (phase.name, phase.needs))
            self.status.append((phase.name, "not built", 0.0, phase.needs + " missing"))
            return
        if phase.prepare:
            why = phase.prepare(self.log)
            if why:
                self.log("%s: skipped: %s" % (phase.name, why))
                self.status.append((phase.name, "skipped", 0.0, why))
                return
        argv = phase.command(root, quick, self.figures)
        timeout = self.args.timeout or phase.timeout[1 if quick else 0]
        self.log("%s: %s (timeout %d s)" % (phase.name, " ".join(argv), timeout))
        start = time.monotonic()
        out = open(os.path.join(self.args.log_dir, phase.name + ".log"), "w")
        try:
            child = subprocess.Popen(argv, cwd=root, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, errors="replace",
                                     start_new_session=True)
        except OSError as e:
            self.status.append((phase.name, "failed", 0.0, str(e)))
            return
        with self.lock:
            self.child = child
        count = [0]

        def pump():
            for line in child.stdout:
                out.write(line)
                m = BENCH_LINE.match(line)
                if m:
                    self.figures[phase.prefix + m.group(1)] = (float(m.group(2)), m.group(3),
                                                               phase.name)
                    count[0] += 1
                else:
                    sys.stdout.write("    " + line)
                    sys.stdout.flush()

        reader = threading.Thread(target=pump, daemon=True)
        reader.start()
        try:
            rc = child.wait(timeout=timeout)
            state, note = ("ok", "") if rc == 0 else ("failed", "exit status %d" % rc)
        except subprocess.TimeoutExpired:
            self.kill_child()
            state, note = "timed out", "killed after %d s" % timeout
        reader.join(timeout=5)
        out.close()
        with self.lock:
            self.child = None
        seconds = time.monotonic() - start
        if state == "ok" and count[0] == 0:
            state, note = "failed", "no BENCH lines"
        self.log("%s: %s in %.0f s (%d figures)" % (phase.name, state, seconds, count[0]))
        self.status.append((phase.name, state, seconds, note))

    def run(self):
        wanted = set(self.args.phases.split(",")) if self.args.phases else None
        for phase in PHASES:
            if wanted is not None and phase.name not in wanted and phase.group not in wanted:
                continue
            if phase.full_only and self.args.quick:
                continue
            self.run_phase(phase)


def fmt(v):
    if v != v:  # nan
        return "nan"
    a = abs(v)
    if a >= 100:
        return "{:,.0f}".format(v)
    if a >= 10:
        return "%.1f" % v
    return "%.2f" % v


def ratio_rows(figures):
    rows = []
    for label, num, den, op, target in RATIOS:
        missing = [k for k in (num, den) if isinstance(k, str) and k not in figures]
        target_text = "" if op is None else ("%s %s" % ("≤" if op == "<=" else "≥", fmt(target)))
        if missing:
            rows.append((label, "n/a (no %s)" % ", ".join(missing), target_text, ""))
            continue
        n = figures[num][0]
        d = figures[den][0] if isinstance(den, str) else den
        if d == 0:
            rows.append((label, "n/a (%s is 0)" % den, target_text, ""))
            continue
        r = n / d
        dunit = figures[den][1] if isinstance(den, str) else figures[num][1]
        shown = "%s× (%s / %s %s)" % (fmt(r), fmt(n), fmt(d), dunit)
        rows.append((label, shown, target_text, verdict(r, op, target)))
    return rows


def verdict(r, op, target):
    if op is None:
        return "(for reference)"
    return "met" if (r <= target if op == "<=" else r >= target) else "NOT met"


def paired_rows(figures):
    """PAIRED rows: the median of the pairs' ratios, their range and the median pair's figures;
    a row with no complete pair says so."""
    rows = []
    for label, num, den, op, target in PAIRED:
        target_text = "%s %s" % ("≤" if op == "<=" else "≥", fmt(target))
        pairs = []
        for i in range(1, PAIRS + 1):
            n, d = figures.get("pair%d.%s" % (i, num)), figures.get("pair%d.%s" % (i, den))
            if n is not None and d is not None and d[0] != 0:
                pairs.append((n[0] / d[0], n[0], d[0], d[1]))
        if not pairs:
            rows.append((label, "n/a (no complete pair)", target_text, ""))
            continue
        pairs.sort()
        r, n, d, unit = pairs[(len(pairs) - 1) // 2]
        if len(pairs) % 2 == 0:
            r = (r + pairs[len(pairs) // 2][0]) / 2
        if len(pairs) == 1:
            shown = "%s× (1 pair: %s / %s %s)" % (fmt(r), fmt(n), fmt(d), unit)
        else:
            shown = "%s× (%d pairs: %s–%s×; the middle one %s / %s %s)" % (
                fmt(r), len(pairs), fmt(pairs[0][0]), fmt(pairs[-1][0]), fmt(n), fmt(d), unit)
        rows.append((label, shown, target_text, verdict(r, op, target)))
    return rows


def table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for r in rows:
        lines.append("| " + " | ".join(str(c) for c in r) + " |")
    return "\n".join(lines)


def machine():
    def read(path):
        try:
            with open(path) as f:
                return f.read()
        except OSError:
            return ""
    cpu = re.search(r"model name\s*:\s*(.*)", read("/proc/cpuinfo"))
    mem = re.search(r"MemTotal:\s*(\d+)", read("/proc/meminfo"))
    try:
        rev = subprocess.run(["git", "-C", SOURCE_ROOT, "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", SOURCE_ROOT, "status", "--porcelain", "-uno", "--",
                                ".", ":!BENCHMARKS.md"],  # the file this writes
                               capture_output=True, text=True, timeout=10).stdout.strip()
        if dirty:
            rev += " (with uncommitted changes)"
    except (OSError, subprocess.TimeoutExpired):
        rev = "unknown"
    load = " ".join(read("/proc/loadavg").split()[:3])
    return [
        ("date", datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")),
        ("git revision", rev or "unknown"),
        ("nproc", str(os.cpu_count())),
        ("CPU", cpu.group(1).strip() if cpu else platform.processor() or "unknown"),
        ("kernel", platform.release()),
        ("RAM", "%.1f GiB" % (int(mem.group(1)) / 1048576) if mem else "unknown"),
        ("load average at the end (1, 5, 15 min)", load or "unknown"),
    ]


NOTES = """\
## What each figure is

- **floor** (`bench/floor_bench`): in the same run, three loopback unary gRPC calls (Decide,
  Execute, Evaluate, with the request/response sizes router_bench's fakes exchanged, measured in
  this run) and three SQLite commits (a file in WAL mode at the router's `synchronous=NORMAL`:
  one upsert of a row holding the router's state size plus one event insert, in a transaction).
  `floor.iteration.p50` = 3 × call p50 + 3 × commit p50.
- **router** (`bench/router_bench`): the real `rein-router` against instant fake planner and
  executor services on the same machine (they share its cores). One iteration = Decide,
  Execute, Evaluate and their commits; its time is the gap between a run's entries into
  DECIDING, from the router's event timestamps. At 100 and 1,000 runs all runs are started at
  once and polled with GetRun until they end (no live watchers: a thousand WatchRun streams
  would measure the event stream, not the loop); throughput = iterations / (first StartRun to
  last event). Router CPU per iteration = the router process's utime + stime over the phase
  (`/proc/<pid>/stat`) / iterations. RSS from `/proc/<pid>/status` (VmRSS): idle, with 1,000
  runs each holding a Decide call open at the fake planner, and with 1,000 runs paused
  (AFTER_PLAN). `router.watch1000.*`: 1,000 runs started at once, each with its own live
  WatchRun stream (the callback client API) read to its end: throughput, per-run iteration time
  and router CPU per iteration with every run watched.
- **router_pg**: the same on PostgreSQL, a private server started by the bench (the tests'
  helper, `fsync=off`, so its figures leave out the disk).
- **langgraph** (`bench/langgraph/loop.mjs`, LangGraph.js 1.7.3 with its SQLite checkpointer,
  installed by the bench with `npm ci` from the committed lock file): the same four-node loop,
  1 thread of 300 iterations, and 100 threads of 30 iterations at once in one process sharing
  one saver. As shipped the saver runs SQLite in WAL at its default `synchronous=FULL`;
  `langgraph.normal.*` sets `synchronous=NORMAL`, rein's default, for like-for-like durability.
- **pair1** to **pair%d**: rein's 1-run and 100-run phases (`router_bench` without the 1,000-run
  and memory phases), the floor and LangGraph.js at 100 runs again, one right after the other,
  %d times (`--quick`: once). The rows "median of the side-by-side pairs" divide each pair's own
  figures, so that both sides of a ratio saw the machine in the same state, and give the median
  and the range of those ratios; the rows above them divide figures measured once, minutes apart.
- **memory** (`bench/abuse_bench`), **sandbox** (`bench/sandbox_bench`), **tokens** /
  **prompt** (`bench/token_bench`, `bench/prompt_bench`): see each binary's header comment.

Every phase runs in its own process group under a timeout; a phase that overruns is killed
and shown as "timed out", a phase whose binary is not built is shown as "not built". Figures
are wall-clock on a shared machine: compare ratios from one run, and repeat.
""" % (PAIRS, PAIRS)


# The decision log, written by hand; the report links to it rather than copying it.
ANALYSIS_LINK = ("Why each mechanism behind these figures exists, what it cost and when to remove"
                 " it: [bench/ANALYSIS.md](bench/ANALYSIS.md).\n")


def report(runner, args, seconds):
    f = runner.figures
    out = []
    out.append("## Ratios against the targets\n")
    out.append(table(["figure", "measured", "target", ""], ratio_rows(f) + paired_rows(f)))
    if args.out:
        out.append("\n" + ANALYSIS_LINK)
    out.append("\n## Phases\n")
    out.append(table(["phase", "status", "time", "note"],
                     [(p, s, "%.0f s" % t, n) for p, s, t, n in runner.status]))
    out.append("\n## Every figure\n")
    out.append(table(["key", "value", "unit", "phase"],
                     [(k, fmt(v[0]), v[1], v[2]) for k, v in sorted(f.items())]))
    body = "\n".join(out) + "\n"
    print("\n" + body, flush=True)
    if not args.out:
        return
    log_dir = os.path.relpath(args.log_dir, SOURCE_ROOT)
    if log_dir.startswith(".."):
        log_dir = args.log_dir
    busy = ""
    try:
        with open("/proc/loadavg") as f:
            load = float(f.read().split()[1])
        if load > (os.cpu_count() or 1):
            busy = ("\n**The machine was busy** (5-minute load average %.1f on %d cores): wall-clock"
                    " figures are inflated and LangGraph.js (one thread) suffers more than rein;"
                    " compare the CPU-time figures and re-run on a quiet machine.\n" % (
                        load, os.cpu_count() or 1))
    except (OSError, ValueError, IndexError):
        pass
    head = [
        "# rein benchmarks\n",
        "The latest table from `./dev bench%s` (%.0f s in all). Reproduce it with `./dev bench`"
        " (3 to 5 minutes on 2 cores; `./dev bench --quick` is a smoke run of under 2"
        " minutes that prints the table without writing this file). The raw output of each"
        " phase is in `%s`.\n%s" % (" --quick" if args.quick else "", seconds, log_dir, busy),
        "## Machine\n",
        table(["", ""], machine()),
        "",
    ]
    with open(args.out, "w") as out_file:
        out_file.write("\n".join(head) + "\n" + body + "\n" + NOTES)
    print("==> wrote %s" % args.out, flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", required=True, help="folder of the built binaries (bazel-bin)")
    parser.add_argument("--quick", action="store_true", help="smaller phases, shorter timeouts")
    parser.add_argument("--out", default="", help="write the report here (e.g. BENCHMARKS.md)")
    parser.add_argument("--phases", default="", help="comma-separated phase names (default all)")
    parser.add_argument("--timeout", type=int, default=0,
                        help="seconds for every phase, instead of each one's own")
    parser.add_argument("--log_dir", default="", help="raw output of each phase (default: new "
                        "folder under /tmp)")
    args = parser.parse_args()
    args.root = os.path.abspath(args.root)
    if not args.log_dir:
        args.log_dir = "/tmp/rein-bench-logs-%d" % os.getpid()
    os.makedirs(args.log_dir, exist_ok=True)
    runner = Runner(args)

    def on_signal(signum, frame):
        runner.kill_child()
        sys.exit(128 + signum)

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    start = time.monotonic()
    try:
        runner.run()
    finally:
        runner.kill_child()
    report(runner, args, time.monotonic() - start)
    return 0


if __name__ == "__main__":
    sys.exit(main())
