#!/usr/bin/env bash
# Instruction counts of the hook, repeatable on a noisy machine: callgrind
# counts the instructions of measured regions (callgrind client requests in
# bench/instruction_bench and in the training loop, Note [Instruction
# counts]), so two runs in a row give the same figures where wall-clock
# timings differ by tens of percent.
#
#   bench/instructions.sh [--build DIR] [--steps N]
#       the hook per allocate+free pair (hooked minus bare, and the
#       straightforward design beside it), 64 B to 64 MiB; the CUDA trace
#       callback per event; and one training step of gpt-tiny and
#       resnet-tiny with the hook against --no-hook (steps 3..N alone); and
#       the public API's marks per step (Step, the five phases, two named
#       scopes) around no work, beside those steps
#   bench/instructions.sh --gate BOUND_FILE [--build DIR]
#       the hot-path gate (a ctest): fails (exit 1) when the hook's added
#       instructions per pair, at the median over sizes, exceed the bound
#       in BOUND_FILE (bench/hot_path_bound.txt) by more than 10%
#   bench/instructions.sh --bound N [--build DIR]
#       the same gate against the bound N
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$root/build"
steps=6
gate=""
bound=""
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build="$(cd "$2" && pwd)"; shift 2 ;;
    --steps) steps="$2"; shift 2 ;;
    --gate) gate="$2"; shift 2 ;;
    --bound) bound="$2"; gate="--bound $2"; shift 2 ;;
    *) echo "usage: bench/instructions.sh [--build DIR] [--steps N] [--gate BOUND_FILE | --bound N]" >&2; exit 2 ;;
  esac
done
command -v valgrind >/dev/null || {
  echo "instructions.sh: valgrind is not installed (apt-get install valgrind; scripts/deps.sh does)" >&2
  exit 2
}
bench="$build/bench/instruction_bench"
[ -x "$bench" ] || { echo "instructions.sh: $bench is missing: build first (scripts/test.sh)" >&2; exit 2; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# Runs a command under callgrind, every process it starts included, and
# prints "<label>\t<instructions>" for each client-request dump.
counts() {
  local dir="$work/$1"
  shift
  mkdir -p "$dir"
  OMP_NUM_THREADS=1 valgrind --tool=callgrind --trace-children=yes \
    --callgrind-out-file="$dir/cg.%p" "$@" >"$dir/stdout" 2>"$dir/stderr" || {
    echo "instructions.sh: failed under callgrind: $*" >&2
    tail -20 "$dir/stderr" >&2
    exit 1
  }
  awk '/^desc: Trigger: Client Request: /{sub(/^desc: Trigger: Client Request: /, ""); label=$0}
       /^totals: /{if (label != "") print label "\t" $2; label=""}' "$dir"/cg.*
}

# The hook's pair table from instruction_bench's dumps ("pairs <variant>
# <bytes> <n>\t<instructions>"): bytes, bare, hooked, added, naive added.
pair_table() {
  awk -F'\t' '{split($1, f, " "); per[f[2] " " f[3]] = $2 / f[4]; sizes[f[3]] = 1}
    END {for (b in sizes) printf "%d %.1f %.1f %.1f %.1f\n", b, per["bare " b],
         per["hook " b], per["hook " b] - per["bare " b], per["naive " b] - per["bare " b]}' |
    sort -n
}

median_added() {
  awk '{print $4}' | sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}

if [ -n "$gate" ]; then
  if [ -z "$bound" ]; then
    [ -r "$gate" ] || { echo "instructions.sh: cannot read the bound file $gate" >&2; exit 2; }
    bound="$(awk '$1 == "added_instructions_per_pair" {print $2}' "$gate")"
    [ -n "$bound" ] || { echo "instructions.sh: $gate has no 'added_instructions_per_pair N' line" >&2; exit 2; }
  fi
  [[ "$bound" =~ ^[0-9]+(\.[0-9]+)?$ ]] || { echo "instructions.sh: the bound '$bound' is not a number of instructions" >&2; exit 2; }
  table="$(counts gate "$bench" hook | pair_table)"
  median="$(median_added <<<"$table")"
  printf "%10s %10s %10s %10s\n" bytes bare hooked added
  awk '{printf "%10d %10.1f %10.1f %10.1f\n", $1, $2, $3, $4}' <<<"$table"
  limit="$(awk -v b="$bound" 'BEGIN {printf "%.1f", b * 1.10}')"
  if awk -v m="$median" -v l="$limit" 'BEGIN {exit !(m > l)}'; then
    echo "hot-path gate: FAIL: the hook adds $median instructions per allocate+free pair (median over sizes), above the bound $bound + 10% = $limit ($gate)"
    exit 1
  fi
  echo "hot-path gate: ok: the hook adds $median instructions per allocate+free pair (median over sizes); bound $bound + 10% = $limit ($gate)"
  exit 0
fi

echo "== the hook, instructions per allocate+free pair (callgrind, $(valgrind --version))"
all="$(counts bench "$bench" all)"
table="$(grep '^pairs ' <<<"$all" | pair_table)"
printf "%10s %10s %10s %10s %16s\n" bytes bare hooked added "naive added"
awk '{printf "%10d %10.1f %10.1f %10.1f %16.1f\n", $1, $2, $3, $4, $5}' <<<"$table"
naive_median="$(awk '{print $1, $2, $3, $5}' <<<"$table" | median_added)"
echo "median over sizes: the hook adds $(median_added <<<"$table") instructions per pair (straightforward design: $naive_median)"

echo
echo "== the CUDA trace callback, instructions per event (synthetic entries, no GPU)"
grep '^cuda-trace ' <<<"$all" | awk -F'\t' '{split($1, f, " "); printf "%10d-byte blocks: %.1f instructions per event\n", f[2], $2 / f[3]}'

echo
echo "== one training step, hook against --no-hook (steps 3..$steps, OMP_NUM_THREADS=1)"
printf "%-12s %16s %16s %8s\n" config "hook /step" "no hook /step" ratio
for config in gpt-tiny resnet-tiny; do
  args=("$build/memprof" profile --config "$root/configs/$config.ini" --steps "$steps")
  on="$(counts "$config-on" "${args[@]}" --out "$work/$config-on/out" | awk -F'\t' '/^steps /{split($1, f, " "); printf "%.0f\n", $2 / f[2]}')"
  off="$(counts "$config-off" "${args[@]}" --out "$work/$config-off/out" --no-hook | awk -F'\t' '/^steps /{split($1, f, " "); printf "%.0f\n", $2 / f[2]}')"
  awk -v c="$config" -v on="$on" -v off="$off" 'BEGIN {printf "%-12s %16d %16d %8.4f\n", c, on, off, on / off}'
done

echo
echo "== the public API's marks per step (Step, Inputs, Forward with two named scopes, Backward, OptimizerStep, ZeroGrad; no work inside)"
marks_bench="$build/bench/session_marks_bench"
[ -x "$marks_bench" ] || { echo "instructions.sh: $marks_bench is missing: build first" >&2; exit 2; }
counts marks "$marks_bench" "$work/marks/out" |
  awk -F'\t' '/^marks /{split($1, f, " "); printf "%.0f instructions per step of marks\n", $2 / f[2]}'
