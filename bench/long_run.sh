#!/usr/bin/env bash
# Long runs (Note [Streaming analysis]): the profiler's peak RSS and the
# time it spends analysing the capture and writing its files, against the
# number of steps, side by side in one run of this script:
#   mlp-tiny at 200 / 2,000 / 20,000 steps, gpt-tiny at 300 / 3,000.
# Each run is one rank of memprof-profile under /usr/bin/time; "read" is
# what the run reports for reading its capture file (and streaming the
# snapshot out on the way), linear in the capture's records; "write" for
# the reports after it, linear in the bytes written; "train" the sum of
# its step times; "written" the bytes it left in --out.
#
#   bench/long_run.sh [--build DIR] [--quick]
#       --quick: mlp-tiny 200 / 2,000 and gpt-tiny 300 only
# Prints one row per run, then per config the RSS growth from the fewest
# to the most steps, the reading's ns per record and the writing's ms per
# MiB. Exits 1 when the RSS grows by more than 10%, or when the 2,000-step
# mlp-tiny run spends longer on its outputs (read + write) than max(its
# training, 2 s).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$root/build"
quick=0
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build="$(cd "$2" && pwd)"; shift 2 ;;
    --quick) quick=1; shift ;;
    *) echo "usage: bench/long_run.sh [--build DIR] [--quick]" >&2; exit 2 ;;
  esac
done
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
runs="mlp-tiny:200 mlp-tiny:2000 mlp-tiny:20000 gpt-tiny:300 gpt-tiny:3000"
[ "$quick" = 1 ] && runs="mlp-tiny:200 mlp-tiny:2000 gpt-tiny:300"
printf '%-9s %6s %11s %8s %9s %7s %7s %11s\n' config steps peak_RSS train_s records read_s write_s written
results="$work/results"
: >"$results"
for run in $runs; do
  config="${run%%:*}" steps="${run##*:}"
  out="$work/$config-$steps"
  /usr/bin/time -f '%M' -o "$work/rss" "$build/memprof-profile" profile \
    --config "$root/configs/$config.ini" --steps "$steps" --out "$out" \
    >"$work/log" 2>&1 || { cat "$work/log"; exit 1; }
  rss_kib=$(tail -1 "$work/rss")
  line=$(grep '^outputs: ' "$work/log")
  read_s=$(echo "$line" | awk '{print $2}')
  records=$(echo "$line" | sed 's/.*(\([0-9]*\) records).*/\1/')
  write_s=$(echo "$line" | sed 's/.*snapshot, \([0-9.]*\) s writing.*/\1/')
  train_s=$(echo "$line" | sed 's/.*training: \([0-9.]*\) s.*/\1/')
  written=$(find "$out" -type f -printf '%s\n' | awk '{s += $1} END {print s}')
  printf '%-9s %6d %8.1f MiB %8.2f %9d %7.2f %7.2f %7.2f MiB\n' "$config" \
    "$steps" "$(echo "$rss_kib / 1024" | bc -l)" "$train_s" "$records" \
    "$read_s" "$write_s" "$(echo "$written / 1048576" | bc -l)"
  echo "$config $steps $rss_kib $train_s $read_s $write_s $written $records" \
    >>"$results"
done
python3 - "$results" <<'PY'
import sys
rows = [line.split() for line in open(sys.argv[1])]
failed = False
for config in dict.fromkeys(r[0] for r in rows):
    mine = [r for r in rows if r[0] == config]
    first, last = mine[0], mine[-1]
    growth = int(last[2]) / int(first[2]) - 1
    per_record = [1e9 * float(r[4]) / int(r[7]) for r in mine]
    per_mib = [1e3 * float(r[5]) / (int(r[6]) / 2**20) for r in mine]
    print(f"{config}: peak RSS {int(first[2]) / 1024:.1f} -> "
          f"{int(last[2]) / 1024:.1f} MiB from {first[1]} to {last[1]} steps "
          f"({growth:+.1%}); reading "
          + ", ".join(f"{p:.0f}" for p in per_record) + " ns per record; "
          "writing " + ", ".join(f"{p:.0f}" for p in per_mib)
          + " ms per MiB")
    if growth > 0.10:
        print(f"FAIL: {config}'s RSS grew by more than 10%")
        failed = True
for r in rows:
    if r[0] == "mlp-tiny" and r[1] == "2000":
        bound = max(float(r[3]), 2.0)
        outputs = float(r[4]) + float(r[5])
        print(f"mlp-tiny 2,000 steps: outputs {outputs:.2f} s, bound "
              f"max(training {float(r[3]):.2f} s, 2 s) = {bound:.2f} s")
        if outputs > bound:
            print("FAIL: the outputs took longer than the bound")
            failed = True
sys.exit(1 if failed else 0)
PY
