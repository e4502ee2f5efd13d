#!/usr/bin/env bash
# The documentation check must be able to fail: on a copy of README.md and
# docs/ (the rest of the tree linked in) it passes unchanged, then refuses,
# naming file, line and target, a link to a missing file, a link to a
# missing heading, a Note name in a user guide, a guide the README does not
# link, and a README over 200 lines.
#   tests/docs/check_docs_selftest.sh [ROOT]
set -euo pipefail
root="$(cd "${1:-$(dirname "$0")/../..}" && pwd)"
check="$root/tests/docs/check_docs.py"
copy=$(mktemp -d)
trap 'rm -rf "$copy"' EXIT
for entry in "$root"/*; do
  case "$(basename "$entry")" in
    README.md|docs|build) ;;
    *) ln -s "$entry" "$copy/" ;;
  esac
done

fresh() {  # a clean copy of the documents
  rm -rf "$copy/README.md" "$copy/docs"
  cp "$root/README.md" "$copy/"
  cp -r "$root/docs" "$copy/"
}

# expect_refusal WHAT PATTERN: the check fails and prints PATTERN.
expect_refusal() {
  local out
  if out=$(python3 "$check" "$copy"); then
    echo "FAIL: $1 passed:"; echo "$out"; exit 1
  fi
  grep -q -- "$2" <<< "$out" ||
    { echo "FAIL: $1 not named ($2):"; echo "$out"; exit 1; }
  echo "refused, as it must: $1"
  grep -- "$2" <<< "$out" | sed 's/^/  /'
}

fresh
python3 "$check" "$copy" > /dev/null ||
  { echo "FAIL: the unchanged documents are refused"; python3 "$check" "$copy"; exit 1; }

fresh
lines=$(wc -l < "$copy/README.md")
echo 'See [the guide](docs/no-such-guide.md).' >> "$copy/README.md"
expect_refusal "a link to a missing file" \
  "README.md:$((lines + 1)): link 'docs/no-such-guide.md': no such file"

fresh
lines=$(wc -l < "$copy/docs/reference.md")
echo 'See [fit](will-it-fit.md#no-such-heading).' >> "$copy/docs/reference.md"
expect_refusal "a link to a missing heading" \
  "docs/reference.md:$((lines + 1)): link 'will-it-fit.md#no-such-heading': no heading"

fresh
echo 'See [below](#no-such-section).' >> "$copy/docs/reference.md"
expect_refusal "a link to a missing heading in the same file" \
  "link '#no-such-section': no heading '#no-such-section' in docs/reference.md"

fresh
echo 'The limit is enforced as Note [Memory limit] says.' >> "$copy/docs/will-it-fit.md"
expect_refusal "a Note name in a user guide" "names 'Note \[Memory limit\]'"

fresh
printf '# Orphan\n\nA guide no one links to.\n' > "$copy/docs/orphan.md"
expect_refusal "a guide the README does not link" \
  "docs/orphan.md: not linked from README.md"

fresh
for _ in $(seq 1 200); do echo >> "$copy/README.md"; done
expect_refusal "a README over 200 lines" "README.md: [0-9]* lines, more than 200"

echo "check_docs self-test: every broken link and rule above is refused; the documents pass"
