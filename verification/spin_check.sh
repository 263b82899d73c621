#!/bin/bash
# Model-checks a Promela model of verification/ with spin: runs `spin -a`, compiles pan with the
# system C compiler and runs the safety check (assertions, invalid end states) and each LTL
# property (acceptance cycles), for each configuration of the model below; fails on any error.
# Then seeds bugs in copies of the model and fails unless spin finds each (so a broken harness
# cannot pass). The models:
# - stage_router (stage_router.pml with children.pml: WAITING and child runs; table.pml from
#   transitions.txt by gen_table.sh):
#   the first configuration gets every check, the larger second one the safety check only, to
#   keep the test within a few minutes;
# - child_runs (child_runs.pml: groups, carved budgets, cancel and deadline cascades, one level
#   of nesting): every check for each configuration.
# Usage: spin_check.sh [DIR] [MODEL]   (DIR holds the model; default: this script's folder;
# MODEL: stage_router (default) or child_runs). Run by `bazel test //verification:spin_check_test`
# and `//verification:child_check_test`.
set -euo pipefail

SRC="${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}"
MODEL="${2:-stage_router}"
CC="${CC:-cc}"

# The bugs seeded by seeded_bugs: NAME and the sed expression that makes it, in turn.
SEEDS=()
case "$MODEL" in
  stage_router)
    WORK="${TEST_TMPDIR:-$(mktemp -d)}/spin"
    LTL=(terminal_stays comes_to_rest cancel_ends)
    LTL_EVERY_CONFIG=0
    TABLE=1
    INCLUDES=(children.pml)
    # Limits: max_iterations, retry_budget, stagnation_window, deadline ticks,
    # max_consecutive_tool_failures, max_children, max_parallel_children.
    CONFIGS=(
      "-DM=3 -DR=1 -DW=2 -DD=2 -DF=2 -DC=2 -DP=1"
      "-DM=4 -DR=2 -DW=3 -DD=1 -DF=2 -DC=2 -DP=2"
    )
    SEED_DEFINES="-DM=4 -DR=1 -DW=2 -DD=1 -DF=2 -DC=2 -DP=2"
    # A failed attempt that spends nothing (retries never grow) lets a run retry for ever,
    # past the bound.
    SEEDS+=(retries_never_spent
      's/^  :: !(cancel_req || now >= D) -> retries++$/  :: !(cancel_req || now >= D) -> skip/')
    # The bound is exact: one commit less is refuted.
    SEEDS+=(bound_one_less
      's/^#define BOUND (4 \* M + R + D - 2)$/#define BOUND (4 * M + R + D - 3)/')
    # A cancel ends a WAITING parent at once, before its children (orphans).
    SEEDS+=(waiting_cancel_orphans
      's/^  :: in_flight || stage == WAITING ->$/  :: in_flight ->/')
    # The join does not wait for every child to end.
    SEEDS+=(join_before_children_end
      's/^  :: all_ended -> join()$/  :: true -> join()/')
    # Budgets added, not carved: each child may work all the iterations the parent has left.
    SEEDS+=(children_added_budgets
      's|^  share = (M - iteration) / kids;$|  share = M - iteration;|')
    ;;
  child_runs)
    WORK="${TEST_TMPDIR:-$(mktemp -d)}/spin-children"
    LTL=(comes_to_rest cancel_ends)
    LTL_EVERY_CONFIG=1
    TABLE=0
    INCLUDES=()
    # The root's max_iterations, the deadline in ticks, the cancels a person makes.
    CONFIGS=(
      "-DM=4 -DD=2 -DCANCELS=1"
      "-DM=6 -DD=3 -DCANCELS=2"
    )
    SEED_DEFINES="-DM=4 -DD=2 -DCANCELS=1"
    # Budgets added, not carved: each child gets all the iterations the parent has left.
    SEEDS+=(added_budgets
      's|limit\[c\] = (limit\[r\] - iter\[r\]) / k;|limit[c] = limit[r] - iter[r];|')
    # A cancel ends a WAITING parent at once, before its children.
    SEEDS+=(orphans
      's|^  :: stage\[r\] == PAUSED -> terminate(r, CANCELLED)$|  :: stage[r] == PAUSED \|\| stage[r] == WAITING -> terminate(r, CANCELLED)|')
    ;;
  *)
    echo "spin_check.sh: unknown model \"$MODEL\" (stage_router or child_runs)"
    exit 2
    ;;
esac
PML="$MODEL.pml"

command -v spin >/dev/null || { echo "spin is not installed (./dev setup installs it)"; exit 1; }

# prepare DIR DEFINES MODEL_DIR [ltl]: spin -a on the model in MODEL_DIR (with its included
# files) and compile pan (safety) and, with "ltl", panl (the LTL claims) in DIR.
prepare() {
  local dir="$1" defines="$2" models="$3" ltl="${4:-}"
  rm -rf "$dir" && mkdir -p "$dir"
  local f
  for f in "$PML" "${INCLUDES[@]}"; do cp "$models/$f" "$dir/$f"; done
  if [ "$TABLE" -eq 1 ]; then "$SRC/gen_table.sh" "$SRC/transitions.txt" >"$dir/table.pml"; fi
  (
    cd "$dir"
    # shellcheck disable=SC2086
    spin $defines -a "$PML" >spin.out 2>&1 || { cat spin.out; exit 1; }
    [ -f pan.c ] || { cat spin.out; exit 1; }
    # -O0: pan.c is large and the search short, so compiling is the slow part.
    "$CC" -O0 -w -DSAFETY -DNOCLAIM -o pan pan.c
    if [ -n "$ltl" ]; then "$CC" -O0 -w -o panl pan.c; fi
  )
}

# clean OUTPUT: 0 when pan's output reports a complete search with no error.
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
  if [ "$n" -eq 1 ] || [ "$LTL_EVERY_CONFIG" -eq 1 ]; then
    runs+=("${LTL[@]}")
    ltl=ltl
  fi
  prepare "$dir" "$defines" "$SRC" "$ltl"
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
      (cd "$dir" && spin -t -p -g "$PML" 2>&1 | tail -60) || true
      failed=1
    fi
  done
done

# seeded NAME SED_EXPR: a copy of the model with the bug must make spin report an error.
seeded() {
  local name="$1" expr="$2" mutant="$WORK/$1.src" f changed=0
  rm -rf "$mutant" && mkdir -p "$mutant"
  for f in "$PML" "${INCLUDES[@]}"; do
    sed "$expr" "$SRC/$f" >"$mutant/$f"
    cmp -s "$mutant/$f" "$SRC/$f" || changed=1
  done
  if [ "$changed" -eq 0 ]; then
    echo "FAIL  the seeded bug $name no longer applies to the model (update spin_check.sh)"
    failed=1
    return
  fi
  prepare "$WORK/$name" "$SEED_DEFINES" "$mutant"
  (cd "$WORK/$name" && ./pan -m200000 >safety.out 2>&1) || true
  if clean "$WORK/$name/safety.out"; then
    echo "FAIL  spin did not find the seeded bug $name"
    failed=1
  else
    echo "ok    seeded bug $name found: $(grep -m1 -oE 'assertion violated [^ ]*|errors: [0-9]+' "$WORK/$name/safety.out")"
  fi
}
for ((i = 0; i < ${#SEEDS[@]}; i += 2)); do seeded "${SEEDS[i]}" "${SEEDS[i + 1]}"; done

exit "$failed"
