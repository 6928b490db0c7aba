#!/usr/bin/env python3
"""Checks every `cargo` command written in the project's Markdown files and Rust doc comments.

Each command is read as cargo would read it and checked against `cargo metadata`: the package
exists, every feature exists, the named bench/example/bin/test exists, and the features the
command enables satisfy the target's `required-features` (cargo refuses the command otherwise).
The short ones also run: `cargo run ... --help` and the ONNX example (`SHORT`), in the dev profile.

Usage: .ci/documented-commands.py [--run-short]. Exits 1, listing each refused command and why.
"""

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Subcommands whose package, features and targets are checked.
CHECKED = {"run", "test", "bench", "build", "check", "clippy", "doc", "package"}
# Commands that finish in seconds once the test build exists: these run too.
SHORT = [re.compile(r"^cargo run .*--help\b"), re.compile(r"^cargo run -p onnx-import\s*$")]
# The README's test command's features: the short commands' binaries are built with them.
TEST_FEATURES = "burn-unpool-tests/wgpu"


def documented_commands():
    """Every `cargo ...` command in a Markdown file or a Rust comment, with where it was found."""
    files = subprocess.run(
        ["git", "ls-files", "*.md", "*.rs", "*.py"], cwd=ROOT, check=True, capture_output=True,
        text=True,
    ).stdout.split()
    for name in files:
        text = (ROOT / name).read_text()
        if name.endswith((".rs", ".py")):
            # Comment lines only, their markers removed, so that inline spans can be joined.
            lines = [re.sub(r"^\s*(//[!/]?|#)\s?", "", line) for line in text.splitlines()
                     if re.match(r"^\s*(//|#)", line)]
            text = "\n".join(lines)
        in_shell_block = False
        lines = text.splitlines()
        for number, line in enumerate(lines, 1):
            fence = re.match(r"^\s*```\s*(\w*)", line)
            if fence:
                in_shell_block = not in_shell_block and fence.group(1) in ("sh", "bash", "console", "shell")
                continue
            if in_shell_block and line.strip().startswith("cargo "):
                command = line.split(" #")[0].strip()
                # A command continued on the next lines (a trailing backslash) is one command.
                follow = number
                while command.endswith("\\") and follow < len(lines):
                    command = command[:-1].rstrip() + " " + lines[follow].split(" #")[0].strip()
                    follow += 1
                yield name, number, command
        # Inline code spans, which may wrap across lines.
        for match in re.finditer(r"`(cargo [^`]+)`", text):
            command = " ".join(match.group(1).split())
            if command.startswith("cargo ") and "<" not in command and "..." not in command:
                number = text.count("\n", 0, match.start()) + 1
                yield name, number, command


def parse(command):
    """The subcommand, options and features of one `cargo` command (arguments after `--` dropped)."""
    words = shlex.split(command)[1:]
    if "--" in words:
        words = words[: words.index("--")]
    parsed = {"sub": words[0] if words else "", "packages": [], "features": [], "targets": [],
              "no_default": False, "all_features": False, "workspace": False}
    it = iter(words[1:])
    for word in it:
        key, _, inline = word.partition("=")
        value = lambda: inline or next(it)
        if key in ("-p", "--package"):
            parsed["packages"].append(value())
        elif key in ("-F", "--features"):
            parsed["features"] += [f for f in re.split(r"[ ,]+", value()) if f]
        elif key in ("--bench", "--example", "--bin", "--test"):
            parsed["targets"].append((key[2:], value()))
        elif key == "--no-default-features":
            parsed["no_default"] = True
        elif key == "--all-features":
            parsed["all_features"] = True
        elif key == "--workspace":
            parsed["workspace"] = True
    return parsed


def enabled(package, features, no_default, all_features):
    """The features of `package` a command turns on, the implied ones included."""
    table = package["features"]
    if all_features:
        return set(table)
    wanted = list(features) + ([] if no_default or "default" not in table else ["default"])
    on = set()
    while wanted:
        feature = wanted.pop()
        if feature in on or feature not in table:
            continue
        on.add(feature)
        wanted += [f for f in table[feature] if not f.startswith("dep:") and "/" not in f]
    return on


def problems(command, packages):
    """Why cargo would refuse `command` (empty when it accepts it)."""
    parsed = parse(command)
    if parsed["sub"] not in CHECKED:
        return []
    found = []
    names = parsed["packages"]
    if not names:
        if parsed["sub"] == "run":
            return ["`cargo run` in a virtual workspace needs -p"]
        names = [name for name in packages] if parsed["workspace"] else []
    own_features = [f for f in parsed["features"] if "/" not in f]
    for feature in parsed["features"]:
        if "/" in feature:
            member, _, sub = feature.partition("/")
            if member not in packages or sub not in packages[member]["features"]:
                found.append(f"no feature {feature!r} in the workspace")
    for name in names:
        if name not in packages:
            found.append(f"no package {name!r} in the workspace")
            continue
        package = packages[name]
        if parsed["packages"]:
            found += [f"package {name} has no feature {f!r}" for f in own_features
                      if f not in package["features"]]
        on = enabled(package, own_features, parsed["no_default"], parsed["all_features"])
        targets = parsed["targets"]
        if parsed["sub"] == "run" and not targets:
            bins = [t for t in package["targets"] if "bin" in t["kind"]]
            if len(bins) != 1:
                found.append(f"package {name} has {len(bins)} binaries: name one with --bin")
            targets = [("bin", t["name"]) for t in bins[:1]]
        for kind, target_name in targets:
            matches = [t for t in package["targets"] if kind in t["kind"] and t["name"] == target_name]
            if not matches:
                found.append(f"package {name} has no {kind} target {target_name!r}")
                continue
            missing = sorted(set(matches[0].get("required-features", [])) - on)
            if missing:
                found.append(f"{kind} {target_name!r} of {name} requires the features {missing}")
    return found


def run_short_commands(commands, packages, target_dir):
    """Runs each command's program with its arguments; the number that failed.

    The binaries come from one build with the test command's features, so that burn is not
    compiled again for another feature set (`cargo run -p X` alone would resolve X's own).
    """
    subprocess.run(["cargo", "build", "--workspace", "--features", TEST_FEATURES, "--bins",
                    "--tests"], cwd=ROOT, check=True)
    failures = 0
    for command in commands:
        parsed = parse(command)
        words = shlex.split(command)
        args = words[words.index("--") + 1:] if "--" in words else []
        package = packages[parsed["packages"][0]]
        (binary,) = [t["name"] for t in package["targets"] if "bin" in t["kind"]]
        print(f"running `{command}` as: {binary} {' '.join(args)}", flush=True)
        result = subprocess.run([target_dir / "debug" / binary, *args], cwd=ROOT,
                                capture_output=True, text=True)
        if result.returncode != 0:
            print(result.stdout[-3000:] + result.stderr[-3000:])
            print(f"`{command}` exited with {result.returncode}")
            failures += 1
    return failures


def main():
    run_short = "--run-short" in sys.argv[1:]
    metadata = json.loads(subprocess.run(
        ["cargo", "metadata", "--no-deps", "--format-version", "1"], cwd=ROOT, check=True,
        capture_output=True, text=True,
    ).stdout)
    packages = {p["name"]: p for p in metadata["packages"]}
    commands = sorted(set(documented_commands()))
    failures = 0
    for name, number, command in commands:
        found = problems(command, packages)
        for problem in found:
            print(f"{name}:{number}: `{command}`: {problem}")
        failures += bool(found)
    print(f"{len(commands)} documented cargo commands checked, {failures} refused")
    if run_short:
        failures += run_short_commands(
            sorted({c for _, _, c in commands if any(p.search(c) for p in SHORT)}), packages,
            Path(metadata["target_directory"]),
        )
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
