#!/usr/bin/env bash
# The "Will my own model fit?" example of docs/will-it-fit.md, run as the
# guide writes it: its commands block (the fenced block after the line
# "<!-- fit-runs-example: commands -->") with `memprof` and `own-loop` on
# the PATH, in a fresh directory; it must exit 0, and every line of its
# output block (after "<!-- fit-runs-example: output -->") must be in what
# the commands printed. A copy of the guide with one figure changed must
# fail the same check.
#   tests/docs/fit_runs_example_test.sh MEMPROF OWN_LOOP GUIDE WORKDIR
set -euo pipefail
memprof=$1 own_loop=$2 guide=$3 work=$4
rm -rf "$work" && mkdir -p "$work/bin"
ln -s "$memprof" "$work/bin/memprof"
ln -s "$own_loop" "$work/bin/own-loop"

# block GUIDE MARKER: the fenced block after the marker line.
block() {
  awk -v marker="<!-- fit-runs-example: $2 -->" '
    $0 == marker { found = 1; next }
    found && /^```/ { if (inside) exit; inside = 1; next }
    inside { print }' "$1"
}
commands=$(block "$guide" commands)
expected=$(block "$guide" output)
[ -n "$commands" ] && [ -n "$expected" ] ||
  { echo "FAIL: $guide has no fit-runs-example commands and output"; exit 1; }

code=0
(cd "$work" && PATH="$work/bin:$PATH" bash -e -c "$commands") \
  > "$work/output.log" 2>&1 || code=$?
if [ "$code" -ne 0 ]; then
  cat "$work/output.log"
  echo "FAIL: the guide's commands exited $code"
  exit 1
fi

# missing EXPECTED: its lines that the output does not hold, one a line.
missing() {
  while IFS= read -r line; do
    [ -z "$line" ] && continue
    grep -qxF -- "$line" "$work/output.log" || echo "$line"
  done <<< "$1"
}
absent=$(missing "$expected")
if [ -n "$absent" ]; then
  echo "FAIL: lines of the guide's output that the commands did not print:"
  echo "$absent"
  echo "--- printed:"
  cat "$work/output.log"
  exit 1
fi
# The check itself: a figure changed in the guide must be caught.
[ -n "$(missing "${expected/176 KiB/177 KiB}")" ] ||
  { echo "FAIL: a changed figure was not caught"; exit 1; }
echo "ok: the guide's example runs and prints what the guide shows"
