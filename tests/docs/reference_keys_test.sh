#!/usr/bin/env bash
# Every flag and config key the parser accepts is in the reference guide:
# the list comes from the program itself (the flag that opens each option
# line of each command's --help), not from a copy. A flag counts as documented when the guide writes it in inline
# code, `--flag` (alone or with its value), and a config key when the guide
# writes `section.key` or `key`. Then the same check must fail on a copy of
# the guide with one key taken out.
#   tests/docs/reference_keys_test.sh MEMPROF_BINARY REFERENCE_MD
set -euo pipefail
memprof="$1"
reference="$2"
commands=(profile predict fit sweep check baseline report)

flags=$(for command in "${commands[@]}"; do
  "$memprof" "$command" --help
done | grep -oE -- '^ *(-[a-z] \[ )?--[a-z][a-z0-9_.-]*[a-z0-9]' |
  grep -oE -- '--[a-z][a-z0-9_.-]*' | sort -u)
count=$(wc -l <<< "$flags")
# A parser that lost its help would leave nothing to check.
if [ "$count" -lt 40 ] || ! grep -qx -- '--ddp.zero_stage' <<< "$flags"; then
  echo "FAIL: only $count flags read from '$memprof COMMAND --help':"
  echo "$flags"
  exit 1
fi

# missing GUIDE: the flags and keys GUIDE does not document, one a line.
missing() {
  local flag key
  while read -r flag; do
    key="${flag#--}"
    grep -qF -- "\`$flag\`" "$1" && continue
    grep -qF -- "\`$flag " "$1" && continue
    grep -qF -- "\`$key\`" "$1" && continue
    echo "$flag"
  done <<< "$flags"
}

absent=$(missing "$reference")
if [ -n "$absent" ]; then
  echo "FAIL: accepted by memprof but not in $reference (add each to its table):"
  echo "$absent"
  exit 1
fi

# The check must be able to fail: take one key out of the guide.
copy=$(mktemp)
trap 'rm -f "$copy"' EXIT
sed 's/`ddp\.zero_stage`//g' "$reference" > "$copy"
if [ "$(missing "$copy")" != "--ddp.zero_stage" ]; then
  echo "FAIL: a guide without ddp.zero_stage was not refused for it:"
  missing "$copy"
  exit 1
fi
echo "reference keys: all $count flags and keys of ${commands[*]} are in $reference;" \
  "a copy without ddp.zero_stage is refused"
