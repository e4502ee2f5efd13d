#!/usr/bin/env bash
# How `memprof predict` scales with the layer count: wall-clock medians of
# 5 runs and callgrind's instruction count, for llama, gpt and mlp models
# of tiny width at 1,000, 2,500 and 10,000 layers (10,000 is the most a
# config takes). Linear in the layers is the target: 10,000 layers of
# llama took 213 s while a table's rows were summed once per block stage
# and a parameter's predecessor was looked up by scanning the forward
# order (both in the layers squared).
#
#   bench/predict_scaling.sh [--build DIR]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$root/build"
if [ "${1:-}" = --build ]; then build="$(cd "$2" && pwd)"; fi
memprof="$build/memprof"
[ -x "$memprof" ] || { echo "predict_scaling.sh: $memprof is missing: build first (scripts/test.sh)" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "predict_scaling.sh: valgrind is not installed (scripts/deps.sh installs it)" >&2; exit 2; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

words() {  # MODEL LAYERS
  case "$1" in
    llama) echo "--model llama --llama.num_hidden_layers $2 --llama.hidden_size 8 --llama.intermediate_size 8 --llama.num_attention_heads 1 --llama.vocab_size 8 --llama.seq_len 4" ;;
    gpt) echo "--model gpt --gpt.layers $2 --gpt.d_model 4 --gpt.heads 1 --gpt.seq_len 2 --gpt.vocab 4" ;;
    mlp) echo "--model mlp --mlp.depth $2 --mlp.input 4 --mlp.hidden 4 --mlp.output 2" ;;
  esac
}

printf '%-6s %7s %10s %16s\n' model layers "median ms" instructions
for model in llama gpt mlp; do
  for layers in 1000 2500 10000; do
    # shellcheck disable=SC2046
    set -- $(words "$model" "$layers") --micro-batch 1
    times=()
    for _ in 1 2 3 4 5; do
      start=$(date +%s%N)
      "$memprof" predict "$@" >/dev/null
      times+=("$((($(date +%s%N) - start) / 1000000))")
    done
    median=$(printf '%s\n' "${times[@]}" | sort -n | sed -n 3p)
    valgrind --tool=callgrind --callgrind-out-file="$work/cg" \
      "$memprof" predict "$@" >/dev/null 2>"$work/err"
    instructions=$(awk '/^totals: /{print $2}' "$work/cg")
    printf '%-6s %7s %10s %16s\n' "$model" "$layers" "$median" "$instructions"
  done
done
