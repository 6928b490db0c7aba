#!/usr/bin/env python3
"""Fails when a module of burn-unpool imports from a module above it (docs/design.md's layers).

Reads every `use crate::..`, `use super::..` and inline `crate::..` path in the code (comments
left out) of crates/burn-unpool/src, resolves it to the module that defines it (names the crate
root re-exports are followed to their module) and checks it against LAYERS: a module may use
modules of lower layers, and within its own layer only its own unit (a file or folder and what
lies under it). Prints each offending path and exits 1, or prints the counts and exits 0.
Also fails when docs/design.md's table of the library's files misses a file, names one that is
not there, or gives one another layer than LAYERS does.
"""
import os
import re
import sys

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "crates", "burn-unpool", "src")
DESIGN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "docs", "design.md")

# Lowest first. Each entry is one layer: the units in it (module paths) do not use each other.
LAYERS = [
    ["error", "geometry", "options"],  # the leaves: one unit (they name each other's types)
    ["plan", "diagnostics"],
    ["backend::route", "backend::composition"],
    ["backend"],  # backend/mod.rs: the trait, its default bodies and the extension macro
    ["backend::cpu", "backend::cube", "backend::autodiff"],
    ["indices", "kind"],
    ["op"],
    ["max_unpool", "max_pool"],
    ["nn", "onnx"],
    [""],  # lib.rs
]
# The leaves form one unit.
SAME_UNIT = {"error": "leaves", "geometry": "leaves", "options": "leaves"}


def module_of_file(path):
    rel = os.path.relpath(path, SRC)[: -len(".rs")].split(os.sep)
    if rel[-1] in ("mod", "lib"):
        rel = rel[:-1]
    return rel


def is_module(parts):
    base = os.path.join(SRC, *parts) if parts else SRC
    return bool(parts) and (os.path.isfile(base + ".rs") or os.path.isfile(os.path.join(base, "mod.rs")))


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return "\n".join(line.split("//")[0] if not line.strip().startswith("//") else "" for line in text.splitlines())


def expand(tree):
    """`a::{b, c::{d, e}}` -> ["a::b", "a::c::d", "a::c::e"]."""
    tree = re.sub(r"\s+", "", tree)
    depth = 0
    for i, ch in enumerate(tree):
        if ch == "{":
            if depth == 0:
                prefix, inner = tree[:i], tree[i + 1 : tree.rindex("}")]
                parts, level, start = [], 0, 0
                for j, c in enumerate(inner):
                    if c == "{":
                        level += 1
                    elif c == "}":
                        level -= 1
                    elif c == "," and level == 0:
                        parts.append(inner[start:j])
                        start = j + 1
                parts.append(inner[start:])
                out = []
                for p in parts:
                    if p:
                        out += [prefix + q if q != "self" else prefix.rstrip(":") for q in expand(p)]
                return out
            depth += 1
    return [tree.split(" as ")[0]]


def root_reexports():
    """Names lib.rs re-exports, to the module path they come from."""
    text = strip_comments(open(os.path.join(SRC, "lib.rs")).read())
    names = {}
    for tree in re.findall(r"pub use\s+([^;]+);", text):
        for path in expand(tree):
            segs = path.split("::")
            names[segs[-1]] = segs[:-1]
    return names


def resolve(parts, reexports):
    """The module a crate-absolute path names or defines its item in (None: outside the crate)."""
    while parts and not is_module(parts):
        if len(parts) == 1:
            target = reexports.get(parts[0])
            if target is None or not is_module(target[:1]):
                return None
            return resolve(target, reexports)
        parts = parts[:-1]
    return parts


def layer_of(module):
    best = None
    for index, layer in enumerate(LAYERS):
        for unit in layer:
            unit_parts = unit.split("::") if unit else []
            if module[: len(unit_parts)] == unit_parts and (best is None or len(unit_parts) > best[2]):
                best = (index, unit, len(unit_parts))
    return best[0], SAME_UNIT.get(best[1], best[1])


def design_table_errors():
    """Each way docs/design.md's table of files differs from the tree and LAYERS."""
    text = open(DESIGN).read()
    section = text.split("## The library's files", 1)[1].split("\n## ", 1)[0]
    listed = dict(re.findall(r"^\| `([^`]+\.rs)` \| (\w+) \|", section, flags=re.M))
    errors = []
    for directory, _, files in os.walk(SRC):
        for name in files:
            if not name.endswith(".rs"):
                continue
            path = os.path.join(directory, name)
            rel = os.path.relpath(path, SRC).replace(os.sep, "/")
            index, _ = layer_of(module_of_file(path))
            layer = "root" if LAYERS[index] == [""] else str(index + 1)
            if rel not in listed:
                errors.append(f"{rel} (layer {layer}) is not in docs/design.md's table")
            elif listed[rel] != layer:
                errors.append(f"{rel} is layer {layer}, docs/design.md says {listed[rel]}")
            listed.pop(rel, None)
    errors += [f"docs/design.md lists {rel}, which is not a file of the library" for rel in listed]
    return sorted(errors)


def main():
    table_errors = design_table_errors()
    for error in table_errors:
        print("design.md:", error)
    reexports = root_reexports()
    bad, checked = [], 0
    for directory, _, files in os.walk(SRC):
        for name in sorted(files):
            if not name.endswith(".rs"):
                continue
            path = os.path.join(directory, name)
            here = module_of_file(path)
            text = strip_comments(open(path).read())
            tests_at = text.find("mod tests")
            paths = []
            for match in re.finditer(r"\buse\s+((?:crate|super|self)::[^;]+);", text):
                in_tests = tests_at != -1 and match.start() > tests_at
                paths += [(p, in_tests) for p in expand(match.group(1))]
            paths += [(p, False) for p in re.findall(r"(?<![\w:])crate(?:::\w+)+", text)]
            for raw, in_tests in paths:
                segs = raw.split("::")
                if segs[0] == "crate":
                    absolute = segs[1:]
                else:
                    # Paths of a file's inline test module start one level down.
                    absolute = list(here) + (["tests"] if in_tests else [])
                    while segs and segs[0] in ("super", "self"):
                        if segs[0] == "super":
                            absolute = absolute[:-1]
                        segs = segs[1:]
                    absolute += segs
                target = resolve(absolute, reexports)
                if target is None:
                    continue
                checked += 1
                (from_layer, from_unit), (to_layer, to_unit) = layer_of(here), layer_of(target)
                if to_layer > from_layer or (to_layer == from_layer and to_unit != from_unit):
                    bad.append(f"{os.path.relpath(path, SRC)}: {raw} ({'::'.join(target) or 'crate'}, layer {to_layer}) from layer {from_layer}")
    for line in sorted(set(bad)):
        print("upward import:", line)
    print(f"{checked} crate paths checked, {len(set(bad))} upward")
    return 1 if bad or table_errors else 0


if __name__ == "__main__":
    sys.exit(main())
