#!/usr/bin/env bash
# Note [Reading a live run]: `memprof report`, `baseline` and `check` on a
# run still writing its --out refuse with exit 2 and write nothing, both
# under memprof's own lock (a local run) and under a rank's hold on its
# capture (a rank started by torchrun's variables); once the run is gone,
# `report` recovers it. A rank report that belongs to another run is not
# taken for the killed rank's: it is recovered from the capture.
#   live_run_test.sh MEMPROF CONFIG WORKDIR
set -euo pipefail
memprof="$1" config="$2" work="$3"
source_dir="$(cd "$(dirname "$0")/../.." && pwd)"
profile="$(dirname "$memprof")/memprof-profile"
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }
pid=""
trap '[ -z "$pid" ] || kill -9 "$pid" 2>/dev/null || true' EXIT

wait_for_capture() {  # DIR: the session has begun when its capture exists
  for _ in $(seq 600); do
    [ -s "$1/capture-0.bin" ] && return 0
    sleep 0.05
  done
  fail "no capture in $1"
}

refused() {  # WHAT DIR EXPECTED: the three readers refuse, writing nothing
  local dir="$2" rc
  for command in "report --run $dir" \
    "baseline --run $dir --out $work/baseline.json" \
    "check --baseline $source_dir/reports/baselines/mlp-tiny-ws1.json --run $dir"; do
    rc=0
    # shellcheck disable=SC2086
    "$memprof" $command >"$work/out" 2>&1 || rc=$?
    [ "$rc" -eq 2 ] && grep -q "$3" "$work/out" ||
      fail "$1: memprof $command: exit $rc, expected 2 and '$3': $(cat "$work/out")"
  done
  for file in rank-0.json report.md; do
    [ ! -e "$dir/$file" ] || fail "$1: $file written during the run"
  done
  [ ! -e "$work/baseline.json" ] || fail "$1: a baseline of a live run"
  echo "$1: report, baseline and check refused: $(head -1 "$work/out")"
}

recovered() {  # WHAT DIR: after the kill, report recovers the rank
  local rc=0
  "$memprof" report --run "$2" >"$work/out" 2>&1 || rc=$?
  [ "$rc" -eq 0 ] && grep -q '"killed_by"' "$2/rank-0.json" ||
    fail "$1: report after the kill: exit $rc: $(cat "$work/out")"
  echo "$1: recovered once the rank was gone"
}

# A local run: memprof's lock on its --out.
"$profile" profile --config "$config" --steps 100000 --out "$work/local" \
  >"$work/local.log" 2>&1 &
pid=$!
wait_for_capture "$work/local"
refused "local run" "$work/local" "a memprof run is still writing there"
kill -9 "$pid" && wait "$pid" 2>/dev/null || true
pid=""
recovered "local run" "$work/local"

# A rank started by torchrun's variables takes no lock on --out: its hold
# on its capture tells.
port=$(python3 -c "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 \
  MASTER_PORT="$port" "$profile" profile --config "$config" --steps 100000 \
  --out "$work/torchrun" >"$work/torchrun.log" 2>&1 &
pid=$!
wait_for_capture "$work/torchrun"
refused "torchrun rank" "$work/torchrun" "rank 0 is still running"
kill -9 "$pid" && wait "$pid" 2>/dev/null || true
pid=""
recovered "torchrun rank" "$work/torchrun"

# Another run's rank-0.json beside the capture: not the killed rank's.
mkdir -p "$work/foreign"
cp "$work/torchrun/capture-0.bin" "$work/foreign/"
cp "$source_dir/tests/data/run-mlp-tiny-ws2/rank-0.json" "$work/foreign/"
"$memprof" report --run "$work/foreign" >"$work/out" 2>&1 ||
  fail "foreign report: $(cat "$work/out")"
grep -q "is not the report of capture-0.bin" "$work/out" ||
  fail "foreign report kept silently: $(cat "$work/out")"
python3 - "$work/foreign/rank-0.json" "$work/torchrun/rank-0.json" <<'PY' ||
import json, sys
foreign, own = (json.load(open(p)) for p in sys.argv[1:])
assert foreign.get("post_mortem"), "the other run's report was kept"
assert foreign["context"]["pid"] == own["context"]["pid"], "not the rank's pid"
PY
  fail "another run's rank-0.json taken for the killed rank's"
echo "foreign rank-0.json: replaced by the capture's recovery"

# A finished run's rank-0.json beside an older capture (a leftover, or one
# copied in): the report stays, the capture is named as the leftover.
mkdir -p "$work/stale"
cp "$work/torchrun/capture-0.bin" "$work/stale/"
python3 - "$source_dir/tests/data/run-mlp-tiny-ws2/rank-0.json" \
  "$work/stale/rank-0.json" <<'PY'
import json, sys, time
report = json.load(open(sys.argv[1]))
report["context"]["session_start_unix_us"] = int(time.time() * 1e6) + 10**6
json.dump(report, open(sys.argv[2], "w"))
PY
cp "$work/stale/rank-0.json" "$work/stale.json"
"$memprof" report --run "$work/stale" >"$work/out" 2>&1 || true
grep -q "capture-0.bin is older than .*: a leftover of another run, not recovered" \
  "$work/out" || fail "stale capture: $(cat "$work/out")"
cmp -s "$work/stale/rank-0.json" "$work/stale.json" ||
  fail "a finished run's rank-0.json replaced by an older capture's recovery"
echo "stale capture: the newer rank-0.json kept"
