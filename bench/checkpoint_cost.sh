#!/usr/bin/env bash
# What activation checkpointing buys and costs, side by side in one run:
# the same config profiled plain and with checkpointed blocks, alternately,
# REPS times each; prints the activations (held from forward into backward,
# and at most), the steady-state peak, and the median steady-state step
# time of each, with their ratio and the reruns' share of the step.
#   bench/checkpoint_cost.sh [REPS] [memprof profile flags ...]
# Default: gpt2-small at T = 256, B = 2, 5 steps, 2 repetitions (the figures of
# docs/mixed-precision-and-checkpointing.md); the byte figures are identical from repetition to repetition.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
reps="${1:-2}"
shift || true
flags=("$@")
if [ ${#flags[@]} -eq 0 ]; then
  flags=(--config "$root/configs/gpt2-small.ini" --gpt.seq_len 256
         --micro-batch 2 --steps 5)
fi
memprof="$root/build/memprof"
[ -x "$memprof" ] || { echo "checkpoint_cost: build first ($memprof missing)" >&2; exit 2; }
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

for ((i = 0; i < reps; i++)); do
  for mode in none blocks; do
    "$memprof" profile "${flags[@]}" --train.activation_checkpointing "$mode" \
      --out "$out/$mode-$i" >"$out/$mode-$i.log" 2>&1 ||
      { cat "$out/$mode-$i.log" >&2; exit 1; }
  done
done

python3 - "$out" "$reps" <<'EOF'
import json, statistics, sys
out, reps = sys.argv[1], int(sys.argv[2])
rows = {}
for mode in ("none", "blocks"):
    steps, recompute, figures = [], [], set()
    for i in range(reps):
        r = json.load(open(f"{out}/{mode}-{i}/rank-0.json"))
        for s in r["steps"]:
            if s["steady_state"]:
                steps.append(s["seconds"])
                recompute.append(s["recompute_seconds"])
        held = (r["checkpointing"] or {}).get(
            "held_bytes", r["categories"]["activations"]["peak_bytes"])
        figures.add((held, r["categories"]["activations"]["peak_bytes"],
                     r["peak"]["total_bytes"]))
    assert len(figures) == 1, f"{mode}: byte figures differ between runs: {figures}"
    held, most, peak = figures.pop()
    rows[mode] = (held, most, peak, statistics.median(steps),
                  statistics.median(recompute), len(steps))
mib = lambda b: f"{b / 2**20:.1f} MiB"
print(f"{'checkpointing':<14}{'held':>12}{'at most':>12}{'peak':>12}"
      f"{'step (median)':>16}{'reruns':>10}{'steps':>7}")
for mode, (held, most, peak, step, rerun, n) in rows.items():
    print(f"{mode:<14}{mib(held):>12}{mib(most):>12}{mib(peak):>12}"
          f"{step * 1e3:>13.0f} ms{rerun * 1e3:>7.0f} ms{n:>7}")
none, blocks = rows["none"], rows["blocks"]
print(f"checkpointed / plain: activations at most {blocks[1] / none[1]:.3f}, "
      f"peak {blocks[2] / none[2]:.3f}, step time {blocks[3] / none[3]:.3f}; "
      f"the reruns are {100 * blocks[4] / blocks[3]:.1f}% of the "
      f"checkpointed step")
EOF
