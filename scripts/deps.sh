#!/usr/bin/env bash
# Installs what memprof builds and tests with, when missing: Debian packages
# system-wide, LibTorch from PyPI's torch wheel into a project-local
# environment (.deps/, kept across `rm -rf build/`).
# Sourced by scripts/run.sh and scripts/test.sh; safe to run again.
set -euo pipefail

# The one place the LibTorch version is pinned. The nvidia-* wheels carry
# the CUDA libraries the torch libraries load, at the versions torch
# 2.11.0's metadata pins (directly, or through cuda-toolkit==13.0.2's);
# the torch libraries find them through their RPATH. Where the machine has
# the CUDA 13 toolkit, it supplies every CUDA library but three; where it
# has none, every one comes from PyPI and memprof builds without its CUDA
# parts (docs/NOTES-libtorch.md).
MEMPROF_TORCH_VERSION=2.11.0
MEMPROF_TORCHRUN_WHEELS=(
  typing_extensions==4.15.0      # the one module torchrun needs besides torch
)
# What the Llama reference test (tests/models/llama_reference.py) imports
# through torch: building a model on the meta device imports torch._dynamo,
# which imports sympy.
MEMPROF_REFERENCE_WHEELS=(
  sympy==1.14.0
  mpmath==1.3.0                  # sympy's one dependency
)
# What libtorch_cuda.so needs that the CUDA 13 toolkit lacks.
MEMPROF_CUDA_WHEELS_WITH_TOOLKIT=(
  nvidia-cusparselt-cu13==0.8.0  # libcusparseLt.so.0
  nvidia-nvshmem-cu13==3.4.5     # libnvshmem_host.so.3
  nvidia-cufile==1.15.1.6        # libcufile.so.0
)
# Without the toolkit: libtorch_cpu.so, which every memprof binary links,
# needs the runtime and CUPTI; `import torch` (torchrun) loads
# libtorch_cuda.so and with it every other one (NVTX, which torch also
# pins, it loads only if present).
MEMPROF_CUDA_WHEELS_WITHOUT_TOOLKIT=(
  "${MEMPROF_CUDA_WHEELS_WITH_TOOLKIT[@]}"
  'nvidia-cuda-runtime==13.0.96.*'  # libcudart.so.13
  'nvidia-cuda-cupti==13.0.85.*'    # libcupti.so.13
  'nvidia-cublas==13.1.0.3.*'
  'nvidia-cufft==12.0.0.61.*'
  'nvidia-curand==10.4.0.35.*'
  'nvidia-cusolver==12.0.4.66.*'
  'nvidia-cusparse==12.6.3.3.*'
  'nvidia-nvjitlink==13.0.88.*'
  'nvidia-cuda-nvrtc==13.0.88.*'
  nvidia-cudnn-cu13==9.19.0.56
  nvidia-nccl-cu13==2.28.9
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

# The CUDA toolkit's nvcc, searched for where LibTorch's CMake config
# looks (CUDA_TOOLKIT_ROOT, CUDA_PATH, CUDA_BIN_PATH, PATH, /usr/local/cuda,
# /opt/cuda); prints its path, or fails where there is none.
memprof_find_nvcc() {
  local dir nvcc
  for dir in "${CUDA_TOOLKIT_ROOT:-}" "${CUDA_PATH:-}" "${CUDA_BIN_PATH:-}"; do
    [ -n "$dir" ] || continue
    for nvcc in "$dir/bin/nvcc" "$dir/bin64/nvcc"; do
      [ -x "$nvcc" ] && { echo "$nvcc"; return 0; }
    done
  done
  command -v nvcc && return 0
  for nvcc in /usr/local/cuda/bin/nvcc /usr/cuda/bin/nvcc /opt/cuda/bin/nvcc; do
    [ -x "$nvcc" ] && { echo "$nvcc"; return 0; }
  done
  return 1
}

memprof_install_packages() {
  local missing=()
  if ! command -v dpkg-query >/dev/null; then
    echo "memprof: this is not a Debian system (no dpkg-query); install" \
      "${MEMPROF_PACKAGES[*]} or their equivalents, then run again" >&2
    return 1
  fi
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
  if [ "$(id -u)" -ne 0 ]; then
    if ! command -v sudo >/dev/null; then
      echo "memprof: missing Debian packages ${missing[*]}, and no sudo to" \
        "install them: run as root 'apt-get install ${missing[*]}', then" \
        "run again" >&2
      return 1
    fi
    sudo="sudo"
  fi
  echo "memprof: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get install -y --no-install-recommends "${missing[@]}" ||
    { $sudo apt-get update && $sudo apt-get install -y --no-install-recommends "${missing[@]}"; } ||
    { echo "memprof: could not install the Debian packages ${missing[*]}" \
        "(apt-get's message above): memprof needs them from Debian 12's" \
        "main archive; check the apt sources, then run again" >&2
      return 1; }
}

# The torch wheel, the nvidia-* wheels this machine needs, what torchrun
# imports and what the Llama reference test imports, without torch's other
# Python dependencies (the C++ build and run need none of them), into a
# venv. The stamp holds the list it was made
# from, so installing or removing the CUDA toolkit makes a new one.
memprof_install_torch() {
  local wheels=("torch==${MEMPROF_TORCH_VERSION}") nvcc
  if nvcc="$(memprof_find_nvcc)"; then
    wheels+=("${MEMPROF_CUDA_WHEELS_WITH_TOOLKIT[@]}")
  else
    wheels+=("${MEMPROF_CUDA_WHEELS_WITHOUT_TOOLKIT[@]}")
  fi
  wheels+=("${MEMPROF_TORCHRUN_WHEELS[@]}" "${MEMPROF_REFERENCE_WHEELS[@]}")
  local stamp="$MEMPROF_TORCH_ENV/.memprof-installed"
  [ "$(cat "$stamp" 2>/dev/null)" = "${wheels[*]}" ] && return 0
  if [ -n "$nvcc" ]; then
    echo "memprof: installing LibTorch ${MEMPROF_TORCH_VERSION} from PyPI into" \
      "$MEMPROF_TORCH_ENV, with the CUDA toolkit at ${nvcc%/bin/*}" >&2
  else
    echo "memprof: installing LibTorch ${MEMPROF_TORCH_VERSION} from PyPI into" \
      "$MEMPROF_TORCH_ENV, with the CUDA libraries it loads (no CUDA toolkit" \
      "here: memprof builds without its CUDA parts)" >&2
  fi
  rm -rf "$MEMPROF_TORCH_ENV"
  python3 -m venv "$MEMPROF_TORCH_ENV"
  "$MEMPROF_TORCH_ENV/bin/python" -m pip install --quiet --disable-pip-version-check \
    --no-deps --only-binary=:all: "${wheels[@]}" ||
    { echo "memprof: could not install ${wheels[*]} from PyPI (pip's message" \
        "above): memprof needs the LibTorch in the torch wheel, which needs" \
        "access to PyPI (and PIP_CERT where a proxy re-signs it) and a" \
        "Python for which PyPI has the wheel (3.10 to 3.14)" >&2
      return 1; }
  echo "${wheels[*]}" > "$stamp"
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
    case " ${MEMPROF_CMAKE_ARGS:-} " in
      *" -DMEMPROF_CUDA=ON "*)
        if ! memprof_find_nvcc >/dev/null; then
          echo "memprof: MEMPROF_CMAKE_ARGS asks for -DMEMPROF_CUDA=ON, which" \
            "needs the CUDA 13 toolkit (nvcc), and there is none (not on PATH," \
            "in CUDA_PATH or in /usr/local/cuda): install it, or leave" \
            "-DMEMPROF_CUDA=ON out to build without the CUDA parts" >&2
          return 1
        fi ;;
    esac
    # shellcheck disable=SC2086  # MEMPROF_CMAKE_ARGS is a list of words
    cmake -S "$MEMPROF_ROOT" -B "$MEMPROF_ROOT/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DCMAKE_PREFIX_PATH="$(memprof_torch_prefix)" ${MEMPROF_CMAKE_ARGS:-}
  fi
  cmake --build "$MEMPROF_ROOT/build" -j "$(nproc)"
}
