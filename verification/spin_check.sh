#!/bin/bash
# Model-checks verification/stage_router.pml with spin: generates table.pml from
# transitions.txt, runs `spin -a`, compiles pan with the system C compiler and runs the safety
# check (assertions, invalid end states) and every LTL property (acceptance cycles), for each
# configuration of limits below. Fails on any error. Then seeds a bug in a copy of the model
# and fails unless spin finds it (so a broken harness cannot pass).
# Usage: spin_check.sh [DIR]   (DIR holds stage_router.pml, transitions.txt, gen_table.sh;
# default: this script's folder). Run by `bazel test //verification:spin_check_test`.
set -euo pipefail

SRC="${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}"
WORK="${TEST_TMPDIR:-$(mktemp -d)}/spin"
CC="${CC:-cc}"
LTL=(terminal_stays comes_to_rest cancel_ends)
# Limits: max_iterations, retry_budget, stagnation_window, deadline ticks,
# max_consecutive_tool_failures. The first configuration gets every check; the larger second
# one the safety check (all the assertions) only, to keep the test near a minute.
CONFIGS=(
  "-DM=3 -DR=1 -DW=2 -DD=2 -DF=2"
  "-DM=4 -DR=2 -DW=3 -DD=1 -DF=2"
)

command -v spin >/dev/null || { echo "spin is not installed (./dev setup installs it)"; exit 1; }

# prepare DIR DEFINES MODEL [ltl]: spin -a and compile pan (safety) and, with "ltl", panl
# (the LTL claims) in DIR.
prepare() {
  local dir="$1" defines="$2" model="$3" ltl="${4:-}"
  rm -rf "$dir" && mkdir -p "$dir"
  cp "$model" "$dir/stage_router.pml"
  "$SRC/gen_table.sh" "$SRC/transitions.txt" >"$dir/table.pml"
  (
    cd "$dir"
    # shellcheck disable=SC2086
    spin $defines -a stage_router.pml >spin.out 2>&1 || { cat spin.out; exit 1; }
    [ -f pan.c ] || { cat spin.out; exit 1; }
    # -O0: pan.c is large and the search short, so compiling is the slow part.
    "$CC" -O0 -w -DSAFETY -DNOCLAIM -o pan pan.c
    if [ -n "$ltl" ]; then "$CC" -O0 -w -o panl pan.c; fi
  )
}

# check NAME OUTPUT: 0 when pan's output reports a complete search with no error.
clean() {
  local out="$1"
  grep -q "errors: 0" "$out" || return 1
  # pan reports each error as "pan:N: <what>" (assertion violated, invalid end state,
  # acceptance cycle); a search cut short by the depth limit is not a proof either.
  ! grep -qE "^pan:[0-9]+: |max search depth too small|Search not completed" "$out"
}

# summary OUTPUT: states stored, depth, time.
summary() {
  local out="$1"
  printf '%s states stored, depth %s, %s s\n' \
    "$(awk '/states, stored/ {print $1; exit}' "$out")" \
    "$(sed -n 's/.*depth reached \([0-9]*\).*/\1/p' "$out" | head -1)" \
    "$(awk '/pan: elapsed time/ {print $4; exit}' "$out")"
}

failed=0
n=0
for defines in "${CONFIGS[@]}"; do
  n=$((n + 1))
  dir="$WORK/config$n"
  runs=("safety")
  ltl=""
  if [ "$n" -eq 1 ]; then
    runs+=("${LTL[@]}")
    ltl=ltl
  fi
  prepare "$dir" "$defines" "$SRC/stage_router.pml" "$ltl"
  for check in "${runs[@]}"; do
    out="$dir/$check.out"
    if [ "$check" = safety ]; then
      (cd "$dir" && ./pan -m200000 >"$out" 2>&1) || true
    else
      (cd "$dir" && ./panl -a -m200000 -N "$check" >"$out" 2>&1) || true
    fi
    if clean "$out"; then
      echo "ok    [$defines] $check: $(summary "$out")"
    else
      echo "FAIL  [$defines] $check:"
      cat "$out"
      (cd "$dir" && spin -t -p -g stage_router.pml 2>&1 | tail -60) || true
      failed=1
    fi
  done
done

# The harness must catch a seeded bug: a failed attempt that spends nothing (retries never
# grow) lets a run retry for ever, past the bound.
mutant="$WORK/mutant.pml"
sed 's/^  :: !(cancel_req || now >= D) -> retries++$/  :: !(cancel_req || now >= D) -> skip/' \
  "$SRC/stage_router.pml" >"$mutant"
if cmp -s "$mutant" "$SRC/stage_router.pml"; then
  echo "FAIL  the seeded bug no longer applies to the model (update spin_check.sh)"
  failed=1
else
  prepare "$WORK/mutant" "-DM=2 -DR=1 -DW=2 -DD=1 -DF=2" "$mutant"
  (cd "$WORK/mutant" && ./pan -m200000 >safety.out 2>&1) || true
  if clean "$WORK/mutant/safety.out"; then
    echo "FAIL  spin did not find the seeded bug (retries never spent)"
    failed=1
  else
    echo "ok    seeded bug found: $(grep -m1 -oE 'assertion violated|errors: [0-9]+' "$WORK/mutant/safety.out")"
  fi
fi

exit "$failed"
