#!/usr/bin/env bash
# Smoke test of the benchmark command: run_bench.py runs router_bench and floor_bench with
# --quick and prints the ratio table and well-formed BENCH figures (never their values); a
# phase whose binary is missing is "not built"; a phase past its timeout is killed and reported
# "timed out" without hanging.
set -euo pipefail

root="$TEST_SRCDIR/${TEST_WORKSPACE:-rein}"
tmp="${TEST_TMPDIR:-$(mktemp -d)}"
fail() { echo "FAIL: $*" >&2; exit 1; }

python3 "$root/bench/run_bench.py" --root "$root" --quick --phases router,floor,memory \
  --log_dir "$tmp/logs" --out "$tmp/BENCHMARKS.md" >"$tmp/out.txt" 2>&1 ||
  { cat "$tmp/out.txt"; fail "run_bench.py exited $?"; }
cat "$tmp/out.txt"

grep -q '^## Ratios against the targets' "$tmp/out.txt" || fail "no ratio table"
grep -q '^| router | ok |' "$tmp/out.txt" || fail "router phase not ok"
grep -q '^| floor | ok |' "$tmp/out.txt" || fail "floor phase not ok"
grep -q '^| memory | not built |' "$tmp/out.txt" || fail "a missing binary is not 'not built'"
grep -qE '^\| rein overhead per iteration p50 / floor \(1 run\) \| [0-9.,]+× .*\| (met|NOT met) \|' \
  "$tmp/out.txt" || fail "no router/floor ratio row"
for key in router.1run.p50 router.1run.p99 router.1run.cpu_per_it router.c100.it_per_s \
  router.c100.p99 router.c1000.it_per_s router.c1000.p50 router.rss.idle router.rss.in_flight \
  router.rss.paused router.payload.state floor.call.p50 floor.commit.p50 floor.iteration.p50; do
  grep -q "^| $key | " "$tmp/BENCHMARKS.md" || fail "BENCHMARKS.md lacks $key"
done
grep -q '^| nproc |' "$tmp/BENCHMARKS.md" || fail "BENCHMARKS.md lacks the machine"
# Every BENCH line the binaries printed follows the convention.
bad=$(cat "$tmp/logs/router.log" "$tmp/logs/floor.log" | grep '^BENCH' |
  grep -vcP '^BENCH\t[a-z0-9_]+(\.[a-z0-9_]+)+\t-?[0-9.]+(e[-+][0-9]+)?\t\S+$' || true)
[ "$bad" = 0 ] || fail "$bad malformed BENCH lines"

# A side-by-side pair: its figures are kept apart from the phases above (pair1.*) and its
# ratio row divides the pair's own figures.
python3 "$root/bench/run_bench.py" --root "$root" --quick --phases pair1.router,pair1.floor \
  --log_dir "$tmp/logs3" >"$tmp/out3.txt" 2>&1 || { cat "$tmp/out3.txt"; fail "pair run failed"; }
grep -qE '^\| rein overhead per iteration p50 / floor \(1 run\), median of the side-by-side pairs \| [0-9.,]+× \(1 pair: ' \
  "$tmp/out3.txt" || { cat "$tmp/out3.txt"; fail "no paired ratio row"; }
for key in pair1.router.1run.p50 pair1.floor.iteration.p50; do
  grep -q "^| $key | " "$tmp/out3.txt" || fail "the pair lacks $key"
done
grep -q '^| router.1run.p50 | ' "$tmp/out3.txt" && fail "a pair's figure was stored under the main key"
# A phase that overruns is killed and reported; the command still ends with the table.
start=$(date +%s)
python3 "$root/bench/run_bench.py" --root "$root" --quick --phases router --timeout 2 \
  --log_dir "$tmp/logs2" >"$tmp/out2.txt" 2>&1 || fail "run_bench.py failed on a timeout"
grep -q '^| router | timed out |' "$tmp/out2.txt" || { cat "$tmp/out2.txt"; fail "no timeout"; }
[ $(($(date +%s) - start)) -lt 30 ] || fail "a timed-out phase took more than 30 s to end"
echo PASS
