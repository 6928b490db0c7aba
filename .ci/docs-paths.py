#!/usr/bin/env python3
"""Checks that what the project's Markdown names exists: every relative link's file, every
repository path written in backticks, and every `burn_unpool::` item.

A path in backticks counts when it starts at one of the repository's top-level entries
(`crates/`, `docs/`, `README.md`, ...); it must exist from the repository's root or from the
Markdown file's folder, as a link's target must. An item `burn_unpool::a::B::c` must have each
of its names defined in burn-unpool's sources (a `pub` item, a module, or a re-exported name).

Usage: .ci/docs-paths.py. Exits 1, listing each stale name with its file and line.
"""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXTENSIONS = (".rs", ".md", ".py", ".toml", ".json", ".txt", ".sh", ".html", ".js", ".c")
# Paths that are not this repository's: absolute, home, build outputs, placeholders, globs.
FOREIGN = re.compile(r"^(/|~|\$|\.\./\.\./\.\.|https?:|target/|out/|[A-Za-z]:)|[<>*{}|]|\.\.\.")
LINK = re.compile(r"\]\(([^)\s]+)\)")
CODE = re.compile(r"`([^`\n]+)`")
ITEM = re.compile(r"\bburn_unpool::[A-Za-z_][A-Za-z0-9_]*(?:::[A-Za-z_][A-Za-z0-9_]*)*")


def tracked(pattern):
    files = subprocess.run(["git", "ls-files", pattern], cwd=ROOT, check=True,
                           capture_output=True, text=True).stdout.split()
    return [ROOT / name for name in files]


def crate_names():
    """Every name burn-unpool's sources define or re-export."""
    names = set()
    for path in (ROOT / "crates/burn-unpool/src").rglob("*.rs"):
        text = path.read_text()
        names.update(re.findall(
            r"\b(?:fn|struct|enum|trait|type|const|static|mod|macro_rules!)\s+([A-Za-z_]\w*)", text))
        # Enum variants and fields: a capitalised or lower-case name at a line's start.
        names.update(re.findall(r"^\s*([A-Za-z_]\w*)\s*[({,:]", text, re.M))
        for group in re.findall(r"pub use [^;]+;", text, re.S):
            names.update(re.findall(r"\b([A-Za-z_]\w*)\b", group))
    return names


def exists(path, page):
    path = path.split("#")[0].rstrip("/")
    if not path:
        return True
    return any((base / path).exists() for base in (ROOT, page.parent))


def repository_path(span, top):
    """Whether `span` names a path of this repository: one that starts at a top-level entry."""
    if FOREIGN.search(span) or not re.fullmatch(r"\.?[\w.\-/]+", span):
        return False
    first = span.split("/")[0]
    return first in top and ("/" in span or span.endswith(EXTENSIONS))


def main():
    names = crate_names()
    top = {path.relative_to(ROOT).parts[0] for path in tracked("*")}
    stale = []
    # The changelog names what was, removed items and moved files included.
    pages = [page for page in tracked("*.md")
             if page.name != "CHANGELOG.md" and not page.is_symlink()]
    for page in pages:
        text = page.read_text()
        in_code_block = False
        for number, line in enumerate(text.splitlines(), 1):
            if line.lstrip().startswith("```"):
                in_code_block = not in_code_block
                continue
            where = f"{page.relative_to(ROOT)}:{number}"
            for item in ITEM.findall(line):
                missing = [name for name in item.split("::")[1:] if name not in names]
                if missing:
                    stale.append(f"{where}: {item}: no {', '.join(missing)} in burn-unpool")
            if in_code_block:
                continue
            for target in LINK.findall(line):
                if not FOREIGN.search(target) and not target.startswith(("#", "mailto:")) \
                        and not exists(target, page):
                    stale.append(f"{where}: link to {target}, which does not exist")
            for span in CODE.findall(line):
                if repository_path(span, top) and not exists(span, page):
                    stale.append(f"{where}: `{span}`, which does not exist")
    for entry in stale:
        print(entry)
    print(f"{len(pages)} Markdown files checked, {len(stale)} stale names")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
