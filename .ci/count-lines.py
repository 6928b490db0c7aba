#!/usr/bin/env python3
"""Counts the library's lines and comment lines outside its `#[cfg(test)]` items.

`python3 .ci/count-lines.py [--max-lines N] [--max-comments N] [--per-file]`, from the workspace
root. A line counts when it is outside an item marked `#[cfg(test)]` (blank lines included); it is
a comment line when any part of it is a comment (`//`, `///`, `//!`, `/* */`, trailing ones too)
or belongs to a `#[doc ...]` attribute. Exits 1, naming the count, when a limit is passed.
"""

import argparse
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
LIBRARY = ROOT / "crates" / "burn-unpool" / "src"


def closing(tokens, start, opening, close):
    """The index of the token that closes the `opening` token at `start`."""
    depth = 0
    for index in range(start, len(tokens)):
        if tokens[index][0] == opening:
            depth += 1
        elif tokens[index][0] == close:
            depth -= 1
            if depth == 0:
                return index
    return len(tokens) - 1


def classify(text):
    """Per line of `text`: (excluded, comment). A small Rust lexer: strings, raw strings, char
    literals and nested block comments are skipped whole, so a `//` or a brace inside them is no
    comment and no nesting."""
    n = len(text)
    line_of = []
    line = 0
    for ch in text:
        line_of.append(line)
        if ch == "\n":
            line += 1
    lines = line + 1
    comment = [False] * lines
    excluded = [False] * lines

    # Code tokens worth knowing: braces, semicolons, `#` attributes. Collected with their offsets.
    tokens = []
    i = 0
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            comment[line_of[i]] = True
            i = j
            continue
        if text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            for k in range(line_of[i], line_of[min(j, n) - 1] + 1):
                comment[k] = True
            i = j
            continue
        prev = text[i - 1] if i else " "
        raw = c == "r" or (c == "b" and text.startswith("br", i))
        if raw and not (prev.isalnum() or prev == "_"):
            j = i + (2 if c == "b" else 1)
            hashes = 0
            while j < n and text[j] == "#":
                hashes, j = hashes + 1, j + 1
            if j < n and text[j] == '"':
                end = text.find('"' + "#" * hashes, j + 1)
                tokens.append(("str", i, end + 1 + hashes))
                i = end + 1 + hashes
                continue
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            tokens.append(("str", i, j + 1))
            i = j + 1
            continue
        if c == "'":
            # A char literal ('a', '\n', '\u{..}') or a lifetime ('a without a closing quote).
            if i + 2 < n and text[i + 1] == "\\":
                j = text.find("'", i + 3)
                i = j + 1
                continue
            if i + 2 < n and text[i + 2] == "'":
                i += 3
                continue
            i += 1
            continue
        if c in "{};[]#":
            tokens.append((c, i, i + 1))
        i += 1

    # Attributes: `#[doc ...]` lines are comment lines; `#[cfg(test)]` excludes the item after it.
    t = 0
    while t < len(tokens):
        kind, start, _ = tokens[t]
        if kind != "#":
            t += 1
            continue
        k = t + 1
        if k >= len(tokens) or tokens[k][0] != "[":
            t += 1
            continue
        m = closing(tokens, k, "[", "]")
        body = "".join(text[tokens[k][2]:tokens[m][1]].split())
        first, last = line_of[start], line_of[tokens[m][1]]
        if body.startswith("doc"):
            for x in range(first, last + 1):
                comment[x] = True
        if body == "cfg(test)":
            # The item: up to its first `;` or through the `{ }` that opens first.
            q = m + 1
            while q < len(tokens) and tokens[q][0] not in "{;":
                q += 1
            end = tokens[q][1]
            if tokens[q][0] == "{":
                end = tokens[closing(tokens, q, "{", "}")][1]
            for x in range(first, line_of[end - 1] + 1):
                excluded[x] = True
            while t < len(tokens) and tokens[t][1] < end:
                t += 1
            continue
        t = m + 1
    # A file ends with a newline: the empty "line" after it is none.
    if text.endswith("\n"):
        lines -= 1
    return [(excluded[x], comment[x]) for x in range(lines)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-lines", type=int)
    parser.add_argument("--max-comments", type=int)
    parser.add_argument("--per-file", action="store_true")
    args = parser.parse_args()

    total = comments = 0
    for path in sorted(LIBRARY.rglob("*.rs")):
        rows = classify(path.read_text())
        kept = [c for (x, c) in rows if not x]
        file_lines, file_comments = len(kept), sum(kept)
        total += file_lines
        comments += file_comments
        if args.per_file:
            print(f"{file_lines:6} {file_comments:5}  {path.relative_to(LIBRARY)}")
    print(
        f"crates/burn-unpool/src outside #[cfg(test)] items: {total} lines, "
        f"{comments} comment lines ({100 * comments / max(total, 1):.1f} %)"
    )
    failed = False
    if args.max_lines is not None and total > args.max_lines:
        print(f"more than {args.max_lines} lines: {total}", file=sys.stderr)
        failed = True
    if args.max_comments is not None and comments > args.max_comments:
        print(f"more than {args.max_comments} comment lines: {comments}", file=sys.stderr)
        failed = True
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
