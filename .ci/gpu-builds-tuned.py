#!/usr/bin/env python3
"""Fails when a GPU build of this workspace lacks Burn's `autotune`.

Without that feature Burn 0.22 runs every convolution on its direct kernels (`ConvStrategy::Direct`
in burn-cubecl) and tunes no matmul or reduction: a GPU build no user with Burn's default features
runs. For every feature of every workspace package (and each package's defaults), `cargo tree`
says whether the build has burn-cubecl (a GPU backend) and, if so, with which features; a GPU build
must show `burn-cubecl feature "autotune"`. Dev-dependencies count: they are what the package's
tests and benches are built with. The only GPU builds allowed without it are those named in
UNTUNED: the comparison builds the GPU tables make on purpose, which must lack it (else their rows
would not measure an untuned build), and a build of the kernels with no runtime.

    .ci/gpu-builds-tuned.py                                  # every package and feature
    .ci/gpu-builds-tuned.py --check PACKAGE FEATURES         # one build; exit 1 unless tuned
    .ci/gpu-builds-tuned.py --check-untuned PACKAGE FEATURES # one build; exit 1 unless untuned

The last two forms are what `benches/gpu_tables.py pack` asks of the builds it ships.
"""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Builds without autotune on purpose: the untuned rows of the GPU tables (benches/gpu_tables.py).
UNTUNED = {
    ("segnet", "wgpu-device"): "the GPU tables' untuned comparison (WGSL)",
    ("segnet", "vulkan-device"): "the GPU tables' untuned comparison (SPIR-V)",
    # The kernels compiled with no runtime: no GPU device exists in it (a user's own `burn` line
    # brings the runtime, and Burn's default autotune with it).
    ("burn-unpool", "cube"): "the CubeCL kernels without a runtime (no GPU device)",
}


def burn_cubecl_features(package, features):
    """burn-cubecl's features in the build of `package` with `features` (a comma-separated list,
    or "" for the defaults), or None where the build has no burn-cubecl."""
    command = ["cargo", "tree", "-p", package, "-e", "features", "-i", "burn-cubecl", "--depth", "1"]
    if features:
        command += ["--features", features]
    tree = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    if tree.returncode != 0:
        # cargo says so when the package does not depend on burn-cubecl at all.
        if "did not match any packages" in tree.stderr or "nothing to print" in tree.stderr:
            return None
        sys.exit(f"{' '.join(command)} failed:\n{tree.stderr}")
    if not tree.stdout.strip():
        return None
    return {line.split('"')[1] for line in tree.stdout.splitlines() if 'burn-cubecl feature "' in line}


def builds():
    """(package, features) of every workspace package: its defaults, then each feature alone."""
    metadata = json.loads(subprocess.run(
        ["cargo", "metadata", "--no-deps", "--format-version", "1"], cwd=ROOT, check=True,
        capture_output=True, text=True).stdout)
    for package in metadata["packages"]:
        yield package["name"], ""
        for feature in sorted(package["features"]):
            if feature != "default":
                yield package["name"], feature


def main():
    if len(sys.argv) == 4 and sys.argv[1] in ("--check", "--check-untuned"):
        package, features, tuned = sys.argv[2], sys.argv[3], sys.argv[1] == "--check"
        found = burn_cubecl_features(package, features)
        if found is None or ("autotune" in found) != tuned:
            sys.exit(f"{package} with features '{features}' is not a GPU build "
                     f"{'with' if tuned else 'without'} Burn's autotune (burn-cubecl features: "
                     f"{sorted(found) if found is not None else 'no burn-cubecl'})")
        print(f"{package} [{features}]: GPU build {'with' if tuned else 'without'} autotune")
        return
    if len(sys.argv) != 1:
        sys.exit(__doc__)
    untuned, checked = [], 0
    for package, feature in builds():
        found = burn_cubecl_features(package, feature)
        if found is None:
            continue
        checked += 1
        tuned = "autotune" in found
        reason = UNTUNED.get((package, feature))
        label = f"{package} [{feature or 'default features'}]"
        if tuned and reason:
            print(f"{label}: GPU build WITH autotune, named in UNTUNED as {reason}")
            untuned.append(f"{label} (a comparison build that is tuned)")
        elif tuned:
            print(f"{label}: GPU build with autotune")
        elif reason:
            print(f"{label}: GPU build without autotune, allowed: {reason}")
        else:
            print(f"{label}: GPU build WITHOUT autotune (burn-cubecl features: {', '.join(sorted(found))})")
            untuned.append(label)
    if untuned:
        sys.exit(f"{len(untuned)} GPU build(s) tuned the wrong way: {'; '.join(untuned)}. Enable "
                 "`burn/autotune` in the feature (as Burn's default features do), or, for a comparison "
                 "build, name it in UNTUNED in .ci/gpu-builds-tuned.py with the reason (and keep "
                 "autotune out of it).")
    print(f"{checked} GPU builds checked: every one has autotune or is an allowed comparison build")


if __name__ == "__main__":
    main()
