#!/usr/bin/env bash
# Builds memprof and profiles the default config:
#   scripts/run.sh [memprof profile flags...]
# e.g. scripts/run.sh --config configs/mlp-tiny.ini --out out/tiny
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
memprof_install_deps
memprof_build
config=(--config configs/default.ini)
for arg in "$@"; do
  case "$arg" in --config|--config=*) config=() ;; esac
done
exec build/memprof profile "${config[@]}" "$@"
