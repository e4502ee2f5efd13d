#!/usr/bin/env bash
# Installs the Debian packages memprof builds and tests with, when missing.
# Sourced by scripts/run.sh and scripts/test.sh; safe to run again.
set -euo pipefail

MEMPROF_PACKAGES=(
  g++ cmake make git
  libtorch-dev          # LibTorch 1.13 (CPU), with c10d
  libopenblas0-pthread  # without it LibTorch falls back to reference BLAS (~10x slower)
  libgloo-dev           # headers needed by c10d's ProcessGroupGloo
  libboost-program-options-dev
  nlohmann-json3-dev
  libgtest-dev googletest
  libbenchmark-dev
  libxxhash-dev
  clang libclang-rt-14-dev  # fuzz/reports_fuzzer (libFuzzer)
  chromium              # the report.html test renders the page headless
)

memprof_install_deps() {
  local missing=()
  for package in "${MEMPROF_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null |
      grep -q "install ok installed" || missing+=("$package")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  echo "memprof: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get install -y --no-install-recommends "${missing[@]}" ||
    { $sudo apt-get update && $sudo apt-get install -y --no-install-recommends "${missing[@]}"; }
}

# Configures once, then builds incrementally into build/.
memprof_build() {
  local root
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  if [ ! -f "$root/build/CMakeCache.txt" ]; then
    cmake -S "$root" -B "$root/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo
  fi
  cmake --build "$root/build" -j "$(nproc)"
}
