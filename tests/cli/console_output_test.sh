#!/usr/bin/env bash
# Console output for people: memprof's standard output is line-buffered
# into a pipe (the first line arrives while the run goes on, and a killed
# run leaves every line it printed), rank 0's progress line comes on
# standard error while it trains (Note [Progress line]), and --quiet
# silences it and the launcher's list of pids. Nothing here is timed: the
# long run is read while it runs, then killed.
#   console_output_test.sh MEMPROF SOURCE_DIR WORKDIR
set -euo pipefail
memprof="$1" source_dir="$2" work="$3"
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }
pid=""
trap '[ -z "$pid" ] || kill -9 "$pid" 2>/dev/null || true' EXIT

# A gpt-tiny run that would take hours, its standard output a pipe.
coproc RUN {
  exec "$memprof" profile --config "$source_dir/configs/gpt-tiny.ini" \
    --steps 100000 --out "$work/long" 2>"$work/long.err"
}
pid=$RUN_PID
exec {from_run}<&"${RUN[0]}"
IFS= read -r -t 120 first <&"$from_run" ||
  fail "no line on standard output within 120 s: $(cat "$work/long.err")"
kill -0 "$pid" 2>/dev/null || fail "the first line came only when the run ended"
case "$first" in
  "effective config"*) ;;
  *) fail "first line: '$first'" ;;
esac
echo "first line while the run runs: $first"
# The progress line: a step past the first, while the run goes on.
progress="^memprof: step [1-9][0-9]* of 100000, [0-9:]* elapsed, live .*iB, peak so far at least .*iB$"
for _ in $(seq 1200); do
  grep -q "$progress" "$work/long.err" && break
  sleep 0.1
done
grep -q "$progress" "$work/long.err" ||
  fail "no progress line on standard error: $(cat "$work/long.err")"
kill -0 "$pid" 2>/dev/null || fail "the run ended: $(cat "$work/long.err")"
echo "progress while the run runs: $(grep '^memprof: step' "$work/long.err" | tail -1)"
kill -9 "$pid"
wait "$pid" 2>/dev/null || true
pid=""
# Killed: every line it printed arrived (the effective config ends with
# ddp.zero_stage).
rest="$(cat <&"$from_run")"
grep -q "^  ddp.zero_stage " <<<"$rest" ||
  fail "the killed run's lines did not all arrive: '$first' then '$rest'"
echo "killed: its lines arrived"

# --quiet: no progress line and no pids; the results all the same.
"$memprof" profile --config "$source_dir/configs/mlp-tiny.ini" --world-size 2 \
  --out "$work/loud" >"$work/loud.out" 2>"$work/loud.err" ||
  fail "mlp-tiny: $(cat "$work/loud.err")"
grep -q "^memprof: rank 1: pid " "$work/loud.err" ||
  fail "no pid list without --quiet: $(cat "$work/loud.err")"
grep -Eq "^memprof: trained ([0-9]+) of \1 steps in [0-9:]+, peak .*iB; writing the reports$" \
  "$work/loud.err" || fail "no closing progress line: $(cat "$work/loud.err")"
"$memprof" profile --config "$source_dir/configs/mlp-tiny.ini" --world-size 2 \
  --quiet --out "$work/quiet" >"$work/quiet.out" 2>"$work/quiet.err" ||
  fail "mlp-tiny --quiet: $(cat "$work/quiet.err")"
[ ! -s "$work/quiet.err" ] ||
  fail "--quiet printed on standard error: $(cat "$work/quiet.err")"
for file in loud quiet; do
  grep -q "^effective config" "$work/$file.out" ||
    fail "$file: no effective config: $(cat "$work/$file.out")"
  [ -s "$work/$file/summary.json" ] || fail "$file: no summary.json"
done
echo "--quiet: standard error empty, standard output and reports as without"
