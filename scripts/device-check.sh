#!/usr/bin/env bash
# The GPU check of memprof's CUDA backend, in two halves:
#
#   scripts/device-check.sh pack [BUILD]   here, after a CUDA build (BUILD,
#       default build/): copies the stripped binaries and the shared
#       libraries a bare GPU machine lacks (Boost.Program_options, xxHash,
#       the CUDA runtime) into .device/ (git-ignored, about 15 MiB).
#   scripts/device-check.sh run            there, in the repository root,
#       with .device/ carried: LibTorch comes from that machine's own
#       PyTorch wheel (python3's torch; the same 2.11.0+cu130 these binaries
#       were built against). Runs the CUDA tests, profiles gpt2-small at
#       T = 1024, B = 4 on the GPU (with the hook and without it, for the
#       step-time ratio), a 2-rank Gloo job sharing the GPU, NCCL refusing
#       two ranks on one GPU, a run under --memory-limit and one under
#       bf16 autocast (its weight casts on the GPU); writes the
#       rank reports, the log and summary.txt to $OUT (default
#       device-out/). About 3 minutes on one H200.
set -uo pipefail

cd "$(dirname "$0")/.."

pack() {
  local build=${1:-build}
  rm -rf .device && mkdir -p .device/lib
  for bin in memprof memprof-profile tests/memprof_cuda_tests; do
    [ -x "$build/$bin" ] || {
      echo "device-check: $build/$bin missing: build with the CUDA parts" \
        "(cmake -DMEMPROF_CUDA=ON) first" >&2
      exit 2
    }
    strip -o ".device/$(basename "$bin")" "$build/$bin"
  done
  # The libraries the binaries need that are neither LibTorch's nor the
  # C library's.
  ldd .device/memprof-profile .device/memprof_cuda_tests |
    awk '/=> \//{print $3}' |
    grep -E 'libboost_program_options|libxxhash|libcudart|libgtest' |
    sort -u | xargs -r -I{} cp -L {} .device/lib/
  grep -qx '/.device/' .git/info/exclude 2>/dev/null ||
    echo '/.device/' >>.git/info/exclude
  du -sh .device
}

run() {
  local out=${OUT:-$PWD/device-out} log bin=.device torch
  mkdir -p "$out"
  log=$out/device-check.log
  torch=$(python3 -c 'import os, torch; print(os.path.dirname(torch.__file__))')
  export LD_LIBRARY_PATH=$PWD/.device/lib:$torch/lib:${LD_LIBRARY_PATH:-}
  local runs=/tmp/memprof-device
  rm -rf "$runs" && mkdir -p "$runs"
  local gpt=(--config configs/gpt2-small.ini --train.device cuda
    --micro-batch 4 --gpt.seq_len 1024)
  step() { echo "== $*" | tee -a "$log"; }
  {
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
    python3 -c 'import torch; print("torch", torch.__version__)'
  } >>"$log" 2>&1

  step "gpt2-small on the GPU, hook on"
  timeout 120 "$bin/memprof" profile "${gpt[@]}" --steps 8 \
    --out "$runs/hook" >>"$log" 2>&1
  echo "hook_exit=$?" >>"$out/exits"
  cp "$runs/hook/rank-0.json" "$out/gpt2-small-rank-0.json"
  step "gpt2-small on the GPU, hook off"
  timeout 120 "$bin/memprof" profile "${gpt[@]}" --steps 8 --no-hook \
    --out "$runs/nohook" >>"$log" 2>&1
  echo "nohook_exit=$?" >>"$out/exits"

  step "--memory-limit 6GiB on the GPU"
  timeout 120 "$bin/memprof" profile "${gpt[@]}" --steps 4 \
    --memory-limit 6GiB --out "$runs/oom" >>"$log" 2>&1
  echo "oom_exit=$?" >>"$out/exits"
  cp "$runs/oom/rank-0.json" "$out/oom-rank-0.json"

  step "gpt2-small on the GPU under bf16 autocast"
  timeout 120 "$bin/memprof" profile "${gpt[@]}" --steps 4 \
    --train.dtype bf16-autocast --out "$runs/autocast" >>"$log" 2>&1
  echo "autocast_exit=$?" >>"$out/exits"
  cp "$runs/autocast/rank-0.json" "$out/autocast-rank-0.json"

  step "2 ranks sharing the GPU over Gloo"
  timeout 150 "$bin/memprof" profile "${gpt[@]}" --steps 4 --world-size 2 \
    --ddp.backend gloo --out "$runs/gloo" >>"$log" 2>&1
  echo "gloo_exit=$?" >>"$out/exits"
  cp "$runs/gloo/rank-0.json" "$out/gloo-rank-0.json"
  cp "$runs/gloo/rank-1.json" "$out/gloo-rank-1.json"

  step "2 ranks on one GPU over NCCL (refused)"
  timeout 30 "$bin/memprof" profile "${gpt[@]}" --world-size 2 \
    --ddp.backend nccl --out "$runs/nccl" >>"$log" 2>&1
  echo "nccl2_exit=$?" >>"$out/exits"

  step "predict"
  "$bin/memprof" predict "${gpt[@]}" --json >"$out/predict.json" 2>>"$log"

  step "CUDA tests"
  timeout 120 "$bin/memprof_cuda_tests" >>"$log" 2>&1
  echo "cuda_tests_exit=$?" >>"$out/exits"

  python3 scripts/device_summary.py "$out" "$runs" >"$out/summary.txt" 2>&1
  cat "$out/exits" "$out/summary.txt"
}

case "${1:-}" in
  pack) shift; pack "$@" ;;
  run) run ;;
  *)
    echo "usage: scripts/device-check.sh pack [BUILD] | run" >&2
    exit 2
    ;;
esac
