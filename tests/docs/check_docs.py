#!/usr/bin/env python3
"""Checks the user documentation: README.md and docs/*.md under ROOT.

  tests/docs/check_docs.py ROOT

- Every relative link points to an existing file or folder, and every
  '#anchor' (in the same file or another .md file) to an existing heading,
  by GitHub's slugs (lower case, punctuation dropped, spaces to hyphens, a
  repeated heading's slug suffixed -1, -2, ...).
- Every docs/*.md is linked from README.md, so every guide is reachable.
- README.md has at most 200 lines.
- User-facing files (all but docs/internals.md and docs/NOTES-libtorch.md)
  name no 'Note [...]' block and no source file (.cc, .h, .py under
  profiler/, models/, tests/, fuzz/).
Links and text inside fenced code blocks and inline code are not links.
Exit 0: all hold; 1: each problem printed as FILE:LINE: what; 2: usage.
Python standard library only.
"""
import os
import re
import sys

MAX_README_LINES = 200
INTERNAL = {"docs/internals.md", "docs/NOTES-libtorch.md"}
FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
INLINE_CODE = re.compile(r"(`+)(.+?)\1")
LINK = re.compile(r"!?\[((?:[^\[\]]|\[[^\]]*\])*)\]\(\s*<?([^()\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
NOTE = re.compile(r"Note \[[^\]]+\]")
SOURCE_PATH = re.compile(r"\b(?:profiler|models|tests|fuzz)/[\w./*<>-]*\.(?:cc|h|py)\b")


def prose_lines(text):
    """(line number, line) for every line outside fenced code blocks."""
    fenced = False
    for number, line in enumerate(text.split("\n"), start=1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            yield number, line


def slug(heading):
    """GitHub's anchor for a heading's text."""
    text = LINK.sub(lambda m: m.group(1), heading)  # a link's text only
    text = re.sub(r"[`*_~]", lambda m: "_" if m.group(0) == "_" else "", text)
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path, cache={}):
    if path not in cache:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        seen, found = {}, set()
        for _, line in prose_lines(text):
            m = HEADING.match(line)
            if not m:
                continue
            base = slug(m.group(2))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
        cache[path] = found
    return cache[path]


def check_file(root, rel, problems, targets):
    path = os.path.join(root, rel)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    links = 0
    for number, line in prose_lines(text):
        where = f"{rel}:{number}"
        bare = INLINE_CODE.sub("", line)
        if rel not in INTERNAL:
            for m in NOTE.finditer(bare):
                problems.append(f"{where}: names '{m.group(0)}'; user-facing "
                                "text describes behaviour, the notes belong "
                                "in docs/internals.md")
            for m in SOURCE_PATH.finditer(line):
                problems.append(f"{where}: names the source file "
                                f"'{m.group(0)}'; move it to "
                                "docs/internals.md")
        for m in LINK.finditer(bare):
            target = m.group(2)
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, mailto:
                continue
            links += 1
            file_part, _, anchor = target.partition("#")
            dest = (os.path.normpath(os.path.join(os.path.dirname(path),
                                                  file_part))
                    if file_part else path)
            targets.add(os.path.relpath(dest, root))
            if not os.path.exists(dest):
                problems.append(f"{where}: link '{target}': no such file "
                                f"{os.path.relpath(dest, root)}")
                continue
            if anchor and dest.endswith(".md"):
                if anchor not in anchors(dest):
                    problems.append(f"{where}: link '{target}': no heading "
                                    f"'#{anchor}' in "
                                    f"{os.path.relpath(dest, root)}")
            elif anchor:
                problems.append(f"{where}: link '{target}': an anchor into "
                                "a file that is not Markdown")
    return links


def main(argv):
    if len(argv) != 2 or not os.path.isdir(argv[1]):
        print("usage: check_docs.py ROOT (the repository: README.md, docs/)",
              file=sys.stderr)
        return 2
    root = argv[1]
    files = ["README.md"] + sorted(
        "docs/" + name for name in os.listdir(os.path.join(root, "docs"))
        if name.endswith(".md"))
    problems = []
    readme_targets = set()
    links = check_file(root, "README.md", problems, readme_targets)
    links += sum(check_file(root, rel, problems, set()) for rel in files[1:])
    for rel in files[1:]:
        if rel not in readme_targets:
            problems.append(f"{rel}: not linked from README.md; add it to "
                            "the README's guides")
    with open(os.path.join(root, "README.md"), encoding="utf-8") as f:
        readme_lines = f.read().count("\n")
    if readme_lines > MAX_README_LINES:
        problems.append(f"README.md: {readme_lines} lines, more than "
                        f"{MAX_README_LINES}; move detail into a guide "
                        "under docs/")
    for problem in problems:
        print(problem)
    if problems:
        print(f"check_docs: {len(problems)} problem(s) in {len(files)} files")
        return 1
    print(f"check_docs: {links} links in {len(files)} files resolve; "
          f"README.md has {readme_lines} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
