#!/usr/bin/env bash
# Builds memprof and runs the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
memprof_install_deps
memprof_build
cd build
ctest --output-on-failure -j "$(nproc)" "$@"
