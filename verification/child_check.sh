#!/bin/bash
# Model-checks verification/child_runs.pml (child runs: groups, carved budgets, cancel and
# deadline cascades, one level of nesting) with spin: the safety check (assertions, invalid end
# states) and each LTL property, for each configuration below; fails on any error. Then seeds
# two bugs in copies of the model and fails unless spin finds each.
# Usage: child_check.sh [DIR]   (DIR holds child_runs.pml; default: this script's folder).
# Run by `bazel test //verification:child_check_test`.
set -euo pipefail

SRC="${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}"
WORK="${TEST_TMPDIR:-$(mktemp -d)}/spin-children"
CC="${CC:-cc}"
LTL=(comes_to_rest cancel_ends)
# The root's max_iterations, the deadline in ticks, the cancels a person makes.
CONFIGS=(
  "-DM=4 -DD=2 -DCANCELS=1"
  "-DM=6 -DD=3 -DCANCELS=2"
)

command -v spin >/dev/null || { echo "spin is not installed (./dev setup installs it)"; exit 1; }

# prepare DIR DEFINES MODEL: spin -a, then pan (safety) and panl (LTL) in DIR.
prepare() {
  local dir="$1" defines="$2" model="$3"
  rm -rf "$dir" && mkdir -p "$dir"
  cp "$model" "$dir/child_runs.pml"
  (
    cd "$dir"
    # shellcheck disable=SC2086
    spin $defines -a child_runs.pml >spin.out 2>&1 || { cat spin.out; exit 1; }
    [ -f pan.c ] || { cat spin.out; exit 1; }
    "$CC" -O0 -w -DSAFETY -DNOCLAIM -o pan pan.c
    "$CC" -O0 -w -o panl pan.c
  )
}

clean() {
  local out="$1"
  grep -q "errors: 0" "$out" || return 1
  ! grep -qE "^pan:[0-9]+: |max search depth too small|Search not completed" "$out"
}

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
  prepare "$dir" "$defines" "$SRC/child_runs.pml"
  for check in safety "${LTL[@]}"; do
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
      (cd "$dir" && spin -t -p -g child_runs.pml 2>&1 | tail -60) || true
      failed=1
    fi
  done
done

# seeded NAME SED_EXPR: a copy of the model with the bug must make spin report an error.
seeded() {
  local name="$1" expr="$2" mutant="$WORK/$1.pml"
  sed "$expr" "$SRC/child_runs.pml" >"$mutant"
  if cmp -s "$mutant" "$SRC/child_runs.pml"; then
    echo "FAIL  the seeded bug $name no longer applies to the model (update child_check.sh)"
    failed=1
    return
  fi
  prepare "$WORK/$name" "-DM=4 -DD=2 -DCANCELS=1" "$mutant"
  (cd "$WORK/$name" && ./pan -m200000 >safety.out 2>&1) || true
  if clean "$WORK/$name/safety.out"; then
    echo "FAIL  spin did not find the seeded bug $name"
    failed=1
  else
    echo "ok    seeded bug $name found: $(grep -m1 -oE 'assertion violated [^ ]*|errors: [0-9]+' "$WORK/$name/safety.out")"
  fi
}
# Budgets added, not carved: each child gets all the iterations the parent has left.
seeded added_budgets 's|limit\[c\] = (limit\[r\] - iter\[r\]) / k;|limit[c] = limit[r] - iter[r];|'
# A cancel ends a WAITING parent at once, before its children.
seeded orphans 's|^  :: stage\[r\] == PAUSED -> terminate(r, CANCELLED)$|  :: stage[r] == PAUSED \|\| stage[r] == WAITING -> terminate(r, CANCELLED)|'

exit "$failed"
