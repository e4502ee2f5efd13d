#!/usr/bin/env bash
# `memprof sweep` and `fit --measure` run each point as a child
# memprof-profile (profiler/cli/profile_child.cc). Stopped or killed, they
# take the child with them: a SIGTERM or a SIGKILL to the sweep alone (not
# its process group) leaves no run training into the directory a rerun
# will use. (Not SIGINT: a script's background job ignores it, the sweep
# and its child alike; a terminal's Ctrl-C signals the whole group.)
#   stopped_sweep_test.sh MEMPROF CONFIG WORKDIR
set -euo pipefail
memprof="$1" config="$2" work="$3"
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }
sweep="" child=""
cleanup() {
  local p
  for p in $sweep $child; do kill -9 "$p" 2>/dev/null || true; done
}
trap cleanup EXIT

gone() {  # PID: absent, or a zombie nobody reaps
  local state
  state=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 0
  [ "$state" = Z ] || [ "$state" = X ]
}

for signal in TERM KILL; do
  out="$work/$signal"
  "$memprof" sweep --config "$config" --world-sizes 1 --global-batch 4 \
    --steps 100000 --out "$out" >"$work/$signal.log" 2>&1 &
  sweep=$!
  child=""
  for _ in $(seq 600); do
    child=$(pgrep -P "$sweep" || true)
    [ -n "$child" ] && [ -s "$out/ws-1/capture-0.bin" ] && break
    sleep 0.05
  done
  [ -n "$child" ] || fail "$signal: no child run: $(cat "$work/$signal.log")"
  kill -s "$signal" "$sweep"
  wait "$sweep" 2>/dev/null || true
  for _ in $(seq 100); do
    gone "$child" && break
    sleep 0.05
  done
  gone "$child" || fail "SIG$signal to the sweep left its run $child training"
done
echo "stopped sweeps leave no run behind"
