#!/bin/bash
# memprof configures where there is no CUDA toolkit. The toolkit this
# machine may have is hidden from CMake (a PATH without it, its folders
# ignored, no CUDA_PATH), then:
# - MEMPROF_CUDA=AUTO builds LibTorch's CPU library alone, says so, no
#   binary links a CUDA library, and the package it installs finds LibTorch
#   the same way;
# - MEMPROF_CUDA=ON stops with an error that names the remedy.
# Usage: configure_without_toolkit_test.sh CMAKE SOURCE_DIR TORCH_PREFIX WORKDIR
set -euo pipefail
cmake=$1 src=$2 prefix=$3 work=$4
rm -rf "$work" && mkdir -p "$work"

# Every folder CMake would find an nvcc in (and the folder it links to).
hidden="/usr/local/cuda/bin;/opt/cuda/bin"
for dir in ${PATH//:/ } /usr/local/bin /usr/local/cuda*/bin /opt/cuda/bin; do
  if [ -x "$dir/nvcc" ]; then
    hidden="$hidden;$dir;$(dirname "$(readlink -f "$dir/nvcc")")"
  fi
done
configure() {  # MEMPROF_CUDA value; the build folder and log take its name
  env -u CUDA_PATH -u CUDA_TOOLKIT_ROOT -u CUDA_BIN_PATH PATH=/usr/bin:/bin \
    "$cmake" -S "$src" -B "$work/$1" -DCMAKE_PREFIX_PATH="$prefix" \
    -DMEMPROF_CUDA="$1" -DMEMPROF_BUILD_TESTS=OFF -DMEMPROF_BUILD_BENCH=OFF \
    "-DCMAKE_IGNORE_PATH=$hidden" > "$work/$1.log" 2>&1
}
fail() { cat "$work/$2.log"; echo "FAIL: $1"; exit 1; }
# Whether the log of configure $1 says $2 (CMake wraps long messages).
said() { tr -s ' \n' '  ' < "$work/$1.log" | grep -q -- "$2"; }

configure AUTO || fail "MEMPROF_CUDA=AUTO did not configure without a toolkit" AUTO
said AUTO 'no CUDA toolkit here) at .*; CUDA parts: OFF (MEMPROF_CUDA=AUTO)' ||
  fail "AUTO without a toolkit did not say it builds the CPU parts alone" AUTO
link="$work/AUTO/profiler/cli/CMakeFiles/memprof-profile.dir/link.txt"
grep -q 'libtorch_cpu\.so' "$link" || fail "memprof-profile does not link libtorch_cpu.so" AUTO
if grep -E -q 'libtorch_cuda|libc10_cuda|libcudart|cuda/lib' "$link"; then
  fail "memprof-profile links a CUDA library: $(cat "$link")" AUTO
fi

# The package it installs finds LibTorch the same way: its CPU library alone.
grep -q '^set(MEMPROF_CUDA OFF)$' "$work/AUTO/memprofConfig.cmake" ||
  fail "the installed memprofConfig.cmake would not find LibTorch without a toolkit" AUTO

if configure ON; then fail "MEMPROF_CUDA=ON configured without a toolkit" ON; fi
said ON 'MEMPROF_CUDA=ON needs the CUDA 13 toolkit' ||
  fail "ON without a toolkit did not say what it needs" ON
said ON 'install the CUDA 13 toolkit, or configure with -DMEMPROF_CUDA=AUTO or OFF' ||
  fail "ON without a toolkit did not name the remedy" ON
echo "ok: without a toolkit, AUTO builds the CPU parts alone and ON names the remedy"
