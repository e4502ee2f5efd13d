#!/usr/bin/env bash
# Installs what memprof builds and tests with, when missing: Debian packages
# system-wide, LibTorch from PyPI's torch wheel into a project-local
# environment (.deps/, kept across `rm -rf build/`).
# Sourced by scripts/run.sh and scripts/test.sh; safe to run again.
set -euo pipefail

# The one place the LibTorch version is pinned. The nvidia-* wheels are the
# three libraries libtorch_cuda.so needs that the CUDA 13 toolkit under
# /usr/local/cuda lacks, at the versions torch 2.11.0's metadata requires;
# every other CUDA library comes from the toolkit (docs/NOTES-libtorch.md).
MEMPROF_TORCH_VERSION=2.11.0
MEMPROF_TORCH_WHEELS=(
  "torch==${MEMPROF_TORCH_VERSION}"
  nvidia-cusparselt-cu13==0.8.0  # libcusparseLt.so.0
  nvidia-nvshmem-cu13==3.4.5     # libnvshmem_host.so.3
  nvidia-cufile==1.15.1.6        # libcufile.so.0
  typing_extensions==4.15.0      # the one module torchrun needs besides torch
)

MEMPROF_PACKAGES=(
  g++ cmake make git
  python3 python3-venv  # only to unpack the torch wheel into .deps/
  libgloo-dev           # headers c10d's ProcessGroupGloo.hpp includes (not in the wheel)
  libboost-program-options-dev
  nlohmann-json3-dev
  libgtest-dev googletest
  libbenchmark-dev
  libxxhash-dev
  valgrind              # callgrind: bench/instructions.sh and the hot-path gate
  iproute2              # ip: the two-host test joins two network namespaces
  clang libclang-rt-14-dev  # fuzz/reports_fuzzer (libFuzzer)
  chromium              # the report.html test renders the page headless
)

MEMPROF_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# Where the torch wheel is unpacked; MEMPROF_DEPS_DIR moves it.
MEMPROF_TORCH_ENV="${MEMPROF_DEPS_DIR:-$MEMPROF_ROOT/.deps}/torch-${MEMPROF_TORCH_VERSION}"

memprof_install_packages() {
  local missing=()
  for package in "${MEMPROF_PACKAGES[@]}"; do
    # A python3 that is not Debian's (pyenv, say) serves as well.
    case "$package" in
      python3) command -v python3 >/dev/null && continue ;;
      python3-venv) python3 -c 'import ensurepip, venv' 2>/dev/null && continue ;;
    esac
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

# The torch wheel, the three nvidia-* wheels and what torchrun imports,
# without torch's other Python dependencies (the C++ build and run need
# none of them), into a venv. The stamp holds the list it was made from.
memprof_install_torch() {
  local stamp="$MEMPROF_TORCH_ENV/.memprof-installed"
  [ "$(cat "$stamp" 2>/dev/null)" = "${MEMPROF_TORCH_WHEELS[*]}" ] && return 0
  echo "memprof: installing LibTorch ${MEMPROF_TORCH_VERSION} from PyPI into $MEMPROF_TORCH_ENV" >&2
  rm -rf "$MEMPROF_TORCH_ENV"
  python3 -m venv "$MEMPROF_TORCH_ENV"
  "$MEMPROF_TORCH_ENV/bin/python" -m pip install --quiet --disable-pip-version-check \
    --no-deps --only-binary=:all: "${MEMPROF_TORCH_WHEELS[@]}"
  echo "${MEMPROF_TORCH_WHEELS[*]}" > "$stamp"
}

# The folder holding torch/share/cmake, found without importing torch (its
# Python dependencies are not installed).
memprof_torch_prefix() {
  "$MEMPROF_TORCH_ENV/bin/python" -c \
    'import importlib.util, os; print(os.path.dirname(importlib.util.find_spec("torch").origin))'
}

memprof_install_deps() {
  memprof_install_packages
  memprof_install_torch
}

# Configures once (with MEMPROF_CMAKE_ARGS, e.g. -DMEMPROF_CUDA=OFF), then
# builds incrementally into build/.
memprof_build() {
  if [ ! -f "$MEMPROF_ROOT/build/CMakeCache.txt" ]; then
    # shellcheck disable=SC2086  # MEMPROF_CMAKE_ARGS is a list of words
    cmake -S "$MEMPROF_ROOT" -B "$MEMPROF_ROOT/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DCMAKE_PREFIX_PATH="$(memprof_torch_prefix)" ${MEMPROF_CMAKE_ARGS:-}
  fi
  cmake --build "$MEMPROF_ROOT/build" -j "$(nproc)"
}
