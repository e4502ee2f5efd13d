#!/usr/bin/env bash
# The layering check (ctest: layering): every #include "..." in profiler/
# and models/ must point down the allowed arrows, or sideways within its own
# folder; a command never includes another command. Prints each offending
# line as FILE:LINE: FROM -> TO and exits 1; exits 0 on a clean tree.
#   tests/layering.sh [ROOT]      (default: the repository this script is in)
set -euo pipefail
root="${1:-$(cd "$(dirname "$0")/.." && pwd)}"
cd "$root"

# Folder -> the folders it may include (besides itself). Keep in step with
# docs/internals.md "Architecture".
declare -A allowed=(
  [base]=""
  [capture]="base"
  [models]="base"
  [predict]="base models"
  [report]="base predict"
  [gate]="base report predict"
  [session]="base capture models predict report"
  [gtest]="base capture models predict report session"
  [train]="base capture models predict report session"
  [cli]="base capture models predict report gate session train"
)

layer_of() {  # profiler/report/x.h -> report; models/gpt.h -> models
  case "$1" in
    models/*) echo models ;;
    profiler/*/*) local rest="${1#profiler/}"; echo "${rest%%/*}" ;;
    *) echo "" ;;
  esac
}

bad=0
checked=0
while IFS= read -r file; do
  from=$(layer_of "$file")
  if [ -z "$from" ] || [ -z "${allowed[$from]+set}" ]; then
    echo "$file: in no layer (profiler/<layer>/ or models/); add it to tests/layering.sh"
    bad=1
    continue
  fi
  while IFS=: read -r line target; do
    checked=$((checked + 1))
    to=$(layer_of "$target")
    if [ -z "$to" ]; then
      echo "$file:$line: $from -> $target: not a project header"
      bad=1
      continue
    fi
    if [ "$to" != "$from" ] && [[ " ${allowed[$from]} " != *" $to "* ]]; then
      echo "$file:$line: $from -> $to ($target): $from may include only: ${allowed[$from]:-nothing}"
      bad=1
    fi
    # Commands share code through the layers below, never through each
    # other; the entry points (main.cc, profile_main.cc) dispatch to them.
    base_name=$(basename "$file")
    if [[ "$target" == profiler/cli/*_command.h ]] &&
       [[ "$base_name" != main.cc && "$base_name" != profile_main.cc ]] &&
       [[ "$(basename "$target" .h)" != "${base_name%.*}" ]]; then
      echo "$file:$line: command -> command ($target): move what both need into a layer below"
      bad=1
    fi
  done < <(grep -n '^#include "' "$file" | sed -E 's/^([0-9]+):#include "([^"]+)".*/\1:\2/')
done < <(find profiler models -name '*.h' -o -name '*.cc' | sort)

if [ "$bad" -ne 0 ]; then
  echo "layering: FAILED"
  exit 1
fi
echo "layering: $checked includes checked, every one down an allowed arrow"
