#!/bin/bash
# The installed package as a user meets it: memprof installed into a fresh
# prefix, the example of examples/own-loop copied out, configured and built
# against that prefix and the torch package folder alone (nothing of
# memprof's source or build tree), then run:
# - on 1 rank, and on 2 ranks under torchrun --no-python: on every rank
#   weights, gradients and optimizer state (and on 2 ranks the Reducer's
#   buckets) measured equal their prediction to the byte, and nothing is
#   unattributed;
# - `memprof report` renders both runs; a baseline from run A gates run B
#   (exit 0), and the example with conv2 wider fails the gate (exit 1);
# - the example's own GoogleTest test (own_loop_test.cc, on
#   memprof::gtest_main) passes under its memory limits, silently, and is
#   the one the guide "Memory limits in your tests" shows, word for word.
# Usage: own_loop_test.sh CMAKE CXX MEMPROF_BUILD_DIR EXAMPLE_DIR TORCH_PREFIX WORKDIR
set -euo pipefail
cmake=$1 cxx=$2 memprof_build=$3 example=$4 torch_prefix=$5 work=$6
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }
# Runs "$@", its output in $work/$1.log (the name of the step), and shows
# that log when the command fails.
step() {
  local name=$1 code=0
  shift
  "$@" > "$work/$name.log" 2>&1 || code=$?
  if [ "$code" -ne 0 ]; then cat "$work/$name.log"; fi
  return "$code"
}

prefix=$work/prefix
step install "$cmake" --install "$memprof_build" --prefix "$prefix" ||
  fail "cmake --install into $prefix failed"
for file in include/memprof/memprof.h include/memprof/gtest.h bin/memprof \
    bin/memprof-profile lib/cmake/memprof/memprofConfig.cmake \
    lib/cmake/memprof/memprofConfigVersion.cmake \
    lib/cmake/memprof/memprofGTestTargets.cmake; do
  [ -e "$prefix/$file" ] || fail "the install has no $file"
done
private=$(find "$prefix/include" -name '*.h' ! -path '*/memprof/memprof.h' \
  ! -path '*/memprof/gtest.h')
[ -z "$private" ] || fail "private headers installed: $private"

cp -r "$example" "$work/src"
step configure env -u CMAKE_PREFIX_PATH "$cmake" -S "$work/src" \
  -B "$work/build" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=Release \
  "-DCMAKE_PREFIX_PATH=$prefix;$torch_prefix" ||
  fail "the example does not configure against the installed package"
step build "$cmake" --build "$work/build" -j 2 ||
  fail "the example does not build against the installed package"
example_bin=$work/build/own-loop

# The example's own test, and the guide's copy of it.
guide=$example/../../docs/test-limits.md
python3 - "$guide" "$example/own_loop_test.cc" <<'PY' ||
import re, sys
guide, test = (open(path).read() for path in sys.argv[1:])
blocks = re.findall(r"```cpp\n(.*?)```", guide, re.S)
sys.exit(0 if blocks and blocks[0] == test else 1)
PY
  fail "the first cpp block of docs/test-limits.md is not own_loop_test.cc"
[ -x "$work/build/own-loop-test" ] ||
  fail "the example's test was not built: the package has no memprof::gtest_main"
step own_test timeout 120 "$work/build/own-loop-test" ||
  fail "the example's own test failed against the installed package"
grep -q '\[  PASSED  \] 2 tests' "$work/own_test.log" ||
  fail "the example's own test did not run its 2 tests: $(cat "$work/own_test.log")"
! grep -q memprof "$work/own_test.log" ||
  fail "the example's passing test printed memprof output: $(cat "$work/own_test.log")"
memprof=$prefix/bin/memprof

# scripts/deps.sh installs torchrun beside the LibTorch it unpacks:
# <env>/lib/pythonX.Y/site-packages/torch is the prefix, <env>/bin the tools.
env_bin=$(cd "$torch_prefix/../../../../bin" 2>/dev/null && pwd) || env_bin=""
[ -n "$env_bin" ] && [ -x "$env_bin/torchrun" ] ||
  fail "no torchrun beside the LibTorch at $torch_prefix;" \
       "scripts/deps.sh installs it with the torch wheel"
python=$env_bin/python
port=$("$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

# A bad flag: exit 2, the message naming it, nothing written.
code=0
"$example_bin" --width 0 --out "$work/bad" > "$work/bad.log" 2>&1 || code=$?
[ "$code" -eq 2 ] && grep -q -- "--width must be a positive integer" "$work/bad.log" &&
  [ ! -e "$work/bad" ] || fail "--width 0 exited $code: $(cat "$work/bad.log")"

run=(--steps 3 --micro-batch 4)
step one_rank timeout 60 "$example_bin" "${run[@]}" --out "$work/a" ||
  fail "the example on 1 rank exited non-zero"
step two_ranks timeout 120 "$env_bin/torchrun" --no-python --nproc-per-node 2 \
  --master-addr 127.0.0.1 --master-port "$port" \
  "$example_bin" "${run[@]}" --out "$work/ddp" ||
  fail "the example on 2 ranks under torchrun exited non-zero"

python3 - "$work/a" 1 "$work/ddp" 2 <<'PY' || fail "the example's reports are not exact"
import json, sys
args = sys.argv[1:]
for run, world_size in zip(args[::2], map(int, args[1::2])):
    for r in range(world_size):
        report = json.load(open(f"{run}/rank-{r}.json"))
        assert report["context"]["world_size"] == world_size, report["context"]
        cats = report["categories"]
        exact = ["weights", "gradients", "optimizer_state"]
        if world_size > 1:  # the example's own Reducer
            exact.append("ddp_buckets")
        for category in exact:
            measured = cats[category]["measured_bytes"]
            predicted = cats[category]["predicted_bytes"]
            assert measured > 0 and measured == predicted, \
                (run, r, category, measured, predicted)
        unattributed = cats["unattributed"]
        assert unattributed["measured_bytes"] == 0, (run, r, unattributed)
        assert unattributed["peak_bytes"] == 0, (run, r, unattributed)
    summary = json.load(open(f"{run}/summary.json"))
    assert len(summary["ranks"]) == world_size, summary["ranks"]
    print(f"ok: {world_size} rank(s): model state to the byte, nothing unattributed")
PY

for dir in "$work/a" "$work/ddp"; do
  rm -f "$dir/report.md" "$dir/report.html" "$dir/trace.json"
  step report "$memprof" report --run "$dir" ||
    fail "memprof report --run $dir failed"
  for file in report.md report.html trace.json; do
    [ -s "$dir/$file" ] || fail "memprof report --run $dir wrote no $file"
  done
  grep -q 'optimizer_state' "$dir/report.md" ||
    fail "$dir/report.md has no optimizer_state row"
done
step baseline "$memprof" baseline --run "$work/a" --out "$work/baseline.json" ||
  fail "memprof baseline of the example's run failed"
step run_b timeout 60 "$example_bin" "${run[@]}" --out "$work/b" ||
  fail "the example's second run exited non-zero"
step check_b "$memprof" check --baseline "$work/baseline.json" --run "$work/b" ||
  fail "memprof check of an unchanged second run did not pass"
step run_wide timeout 60 "$example_bin" "${run[@]}" --width 17 --out "$work/wide" ||
  fail "the example with conv2 wider exited non-zero"
code=0
step check_wide "$memprof" check --baseline "$work/baseline.json" \
  --run "$work/wide" || code=$?
[ "$code" -eq 1 ] || fail "memprof check of the wider example exited $code, not 1"
grep -q 'regressed' "$work/check_wide.log" ||
  fail "memprof check of the wider example names no regressed figure"
echo "ok: installed, built out of tree, exact on 1 and 2 ranks, gated; its own test passes"
