#!/bin/bash
# Runs token_bench and prompt_bench with --quick and checks that they print their figures as
# well-formed BENCH lines (never their values: a benchmark asserts no speed or size).
set -euo pipefail
fail() { echo "FAIL: $*" >&2; exit 1; }
check() {  # NAME OUTPUT KEY...
  local name=$1 out=$2
  shift 2
  while IFS= read -r line; do
    [[ "$line" == BENCH* ]] || continue
    [[ "$line" =~ ^BENCH$'\t'[a-z0-9_.]+$'\t'[0-9.]+$'\t'[a-z_]+$ ]] || fail "$name: bad line: $line"
  done <<<"$out"
  for key in "$@"; do
    grep -q "^BENCH"$'\t'"$key"$'\t' <<<"$out" || fail "$name: no $key"
  done
}
out=$(timeout 60 bench/token_bench --quick) || fail "token_bench --quick failed"
check token_bench "$out" tokens.small_reads.requests tokens.small_reads.requests.plan \
  tokens.small_reads.requests.decide tokens.small_reads.requests.evaluate \
  tokens.small_reads.input tokens.small_reads.output tokens.small_reads.cache_read \
  tokens.small_reads.cache_write tokens.small_reads.priced_input tokens.4kb_reads.priced_input \
  tokens.small_reads_full_plan.requests.plan tokens.small_reads_full_plan.priced_input \
  tokens.small_reads_no_plan_decide.priced_input tokens.small_reads_separate.priced_input \
  tokens.4kb_reads_full_plan.priced_input tokens.react.small_reads.requests \
  tokens.react.small_reads.input tokens.react.small_reads.cache_read \
  tokens.react.small_reads.cache_write tokens.react.small_reads.priced_input \
  tokens.react.4kb_reads.priced_input tokens.small_reads.priced_vs_react \
  tokens.small_reads_full_plan.priced_vs_react tokens.4kb_reads.priced_vs_react \
  tokens.4kb_reads_full_plan.priced_vs_react
out=$(timeout 60 bench/prompt_bench --quick) || fail "prompt_bench --quick failed"
check prompt_bench "$out" prompt.plan.it2.bytes prompt.plan.it50.tokens prompt.decide.it10.tokens \
  prompt.evaluate.it50.bytes prompt.plan.growth_2_50 prompt.decide.growth_2_50 \
  prompt.evaluate.growth_2_50
echo PASS
