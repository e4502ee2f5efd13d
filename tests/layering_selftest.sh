#!/usr/bin/env bash
# The layering check must be able to fail: on a copy of the tree it refuses
# an include up the arrows (base including the CLI) and a command including
# another command, naming each; and it passes on the unchanged copy.
#   tests/layering_selftest.sh [ROOT]
set -euo pipefail
root="${1:-$(cd "$(dirname "$0")/.." && pwd)}"
check="$root/tests/layering.sh"
copy=$(mktemp -d)
trap 'rm -rf "$copy"' EXIT
cp -r "$root/profiler" "$root/models" "$copy/"

"$check" "$copy" > /dev/null || { echo "FAIL: the unchanged copy is refused"; exit 1; }

echo '#include "profiler/cli/launcher.h"' >> "$copy/profiler/base/category.cc"
echo '#include "profiler/cli/sweep_command.h"' >> "$copy/profiler/cli/fit_command.cc"
if out=$("$check" "$copy"); then
  echo "FAIL: wrong includes passed:"; echo "$out"; exit 1
fi
grep -q 'profiler/base/category.cc:[0-9]*: base -> cli' <<< "$out" ||
  { echo "FAIL: base -> cli not named:"; echo "$out"; exit 1; }
grep -q 'profiler/cli/fit_command.cc:[0-9]*: command -> command' <<< "$out" ||
  { echo "FAIL: command -> command not named:"; echo "$out"; exit 1; }
echo "layering self-test: the check refuses both wrong includes and passes the tree"
