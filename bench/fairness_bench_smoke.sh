#!/bin/bash
# Runs fairness_bench small (50 flood runs, short delays) against the real router and checks
# that it prints its figures as well-formed BENCH lines (never their values: a benchmark
# asserts no speed).
set -euo pipefail
fail() { echo "FAIL: $*" >&2; exit 1; }
out=$(timeout 120 bench/fairness_bench --router_binary=router_service/rein-router \
  --flood_runs=50 --iterations=4 --ungated_iterations=3 --planner_delay=5ms \
  --executor_delay=1ms --phase_timeout_seconds=60) || { echo "$out"; fail "fairness_bench failed"; }
echo "$out"
while IFS= read -r line; do
  [[ "$line" == BENCH* ]] || continue
  [[ "$line" =~ ^BENCH$'\t'[a-z0-9_.]+$'\t'[0-9.e+-]+$'\t'[a-z0-9_/]+$ ]] || fail "bad line: $line"
done <<<"$out"
for mode in gated ungated; do
  for key in alone.p50 alone.p99 beside_flood.p50 beside_flood.p99 ratio_p50 ratio_p99 \
    planner_calls_per_s; do
    grep -q "^BENCH"$'\t'"fairness.$mode.$key"$'\t' <<<"$out" || fail "no fairness.$mode.$key"
  done
done
