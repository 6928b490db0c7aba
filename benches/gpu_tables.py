#!/usr/bin/env python3
"""Every GPU figure of docs/benchmarks.md in one command, on a machine that has a GPU but no Rust
toolchain and no package registry.

Here (with cargo), pack a bundle: the `timings`, `pools` and `step` bench binaries built with wgpu,
xz-compressed, the Vulkan loader's Debian package, and the Python scripts that run PyTorch beside
them:

    python3 benches/gpu_tables.py pack BUNDLE [--dev] [--no-loader]

There (Python 3 and dpkg; PyTorch with CUDA and numpy for the peer figures, which stay empty
without them), run it:

    python3 BUNDLE/gpu_tables.py run --out DIR [--quick] [--batches 1,4,12] [--runs 15] [--calls 50]
        [--pool-runs 5] [--pool-calls 20] [--step-batches 4] [--step-runs N] [--timeout 1800]
        [--deadline SECONDS]
        [--vulkan-loader auto|bundle]

`run` unpacks the binaries, uses the machine's Vulkan loader or else the bundle's (into the bundle's
folder, not the system's), and writes DIR/gpu-tables.md: the unpooling table and the pool table on
the default wgpu device beside PyTorch on CUDA (`compare_peers.py --gpu`, `--pools --gpu`), and the
SegNet-Basic training step (`step` with pool indices and with raw indices, beside
`segnet_basic_torch.py`). Each table is written as soon as it is done; each command's output goes to
DIR/*.log; `nvidia-smi`'s readings during the run, where it exists, to DIR/gpu-monitor.csv (a
memory figure that rises while the binaries run shows the wgpu device is the NVIDIA GPU).

`--dev` builds the binaries in the test profile with the feature set of the workspace's test build
(what CI has built already, so only the three bench binaries compile): for a dry run, not for
figures. `--quick` is a dry run's size: batch 1, one run, two calls, the smallest shapes. Without a
CUDA device, PyTorch's side runs on the CPU and the tables say so (CI dry-runs on lavapipe this way).
"""

import argparse
import datetime
import json
import lzma
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCHES = ("timings", "pools", "step")
# The Vulkan loader, and the GL dispatch libraries NVIDIA's Vulkan driver (libGLX_nvidia) links to:
# a machine with the driver but no desktop packages lacks both.
LOADER_PACKAGES = ["libvulkan1", "libglvnd0", "libglx0", "libgl1", "libegl1", "libopengl0", "libgles2"]
SCRIPTS = {
    "compare_peers.py": "crates/burn-unpool/benches/compare_peers.py",
    "segnet_basic_torch.py": "examples/segnet/benches/segnet_basic_torch.py",
}


def say(message):
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def pack(args):
    bundle = Path(args.bundle).resolve()
    # Nothing of an earlier pack survives: old binaries or a mix of packages' versions.
    for stale in ("bin", "debs", "root"):
        shutil.rmtree(bundle / stale, ignore_errors=True)
    (bundle / "bin").mkdir(parents=True, exist_ok=True)
    targets = [arg for name in BENCHES for arg in ("--bench", name)]
    if args.dev:
        cargo = ["cargo", "test", "--no-run", "--workspace", "--features", "burn-unpool-tests/wgpu"]
    else:
        features = "burn-unpool/ndarray,burn-unpool/wgpu,segnet/wgpu"
        cargo = ["cargo", "bench", "--no-run", "-p", "burn-unpool", "-p", "segnet", "--features", features]
    cargo += targets + ["--message-format=json-render-diagnostics"]
    say("building: " + " ".join(cargo))
    built = subprocess.run(cargo, cwd=ROOT, check=True, stdout=subprocess.PIPE, text=True).stdout
    executables = {}
    for line in built.splitlines():
        message = json.loads(line)
        target = message.get("target", {})
        if message.get("reason") == "compiler-artifact" and message.get("executable") \
                and "bench" in target.get("kind", []) and target.get("name") in BENCHES:
            executables[target["name"]] = message["executable"]
    missing = set(BENCHES) - set(executables)
    if missing:
        sys.exit(f"cargo built no executable for the benches {sorted(missing)}")
    for name, path in sorted(executables.items()):
        target = bundle / "bin" / f"{name}.xz"
        say(f"compressing {path} ({os.path.getsize(path) / 2**20:.1f} MiB) into {target}")
        # A dry run's binaries are larger and travel nowhere: the fastest preset.
        with open(path, "rb") as source, lzma.open(target, "wb", preset=0 if args.dev else 6) as sink:
            shutil.copyfileobj(source, sink)
    for name, path in SCRIPTS.items():
        shutil.copy(ROOT / path, bundle / name)
    shutil.copy(Path(__file__), bundle / "gpu_tables.py")
    if not args.no_loader:
        (bundle / "debs").mkdir(exist_ok=True)
        # The GPU's driver brings its own ICD. Packages of this machine's distribution: they need a
        # glibc of its age or newer.
        download = lambda: subprocess.run(["apt-get", "download", "-q"] + LOADER_PACKAGES, cwd=bundle / "debs")
        got = download()
        if got.returncode != 0 and os.geteuid() == 0:
            say("apt-get download failed: updating the package lists once")
            subprocess.run(["apt-get", "update", "-q"], check=True)
            got = download()
        if got.returncode != 0:
            sys.exit(f"apt-get download {' '.join(LOADER_PACKAGES)} failed (run `apt-get update` "
                     "first, or pass --no-loader where the GPU machine has libvulkan.so.1)")
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip() or "unknown"
    rustc = subprocess.run(["rustc", "--version"], capture_output=True, text=True).stdout.strip()
    (bundle / "MANIFEST").write_text(json.dumps({
        "commit": commit, "profile": "test (dry run)" if args.dev else "bench (release)",
        "rustc": rustc, "packed": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }) + "\n")
    size = sum(f.stat().st_size for f in bundle.rglob("*") if f.is_file())
    say(f"bundle {bundle}: {size / 2**20:.1f} MiB")


def vulkan_env(bundle, env, loader):
    """The machine's Vulkan loader if it has one (`loader` "auto"), else the bundle's (or always,
    with "bundle"), unpacked into the bundle; the NVIDIA driver's ICD where the loader would not
    find it. Returns what was used, in words."""
    import ctypes.util

    used = []
    if loader == "auto" and ctypes.util.find_library("vulkan"):
        used.append("the machine's Vulkan loader")
    else:
        debs = sorted((bundle / "debs").glob("*.deb"))
        if not debs:
            sys.exit("no libvulkan.so.1 on this machine and none in the bundle (packed with --no-loader)")
        root = bundle / "root"
        for deb in debs:
            subprocess.run(["dpkg", "-x", str(deb), str(root)], check=True)
        dirs = sorted({str(lib.parent) for lib in root.rglob("lib*.so.*")})
        env["LD_LIBRARY_PATH"] = ":".join(dirs + [p for p in [env.get("LD_LIBRARY_PATH")] if p])
        used.append("the bundle's Vulkan loader (" + ", ".join(deb.name for deb in debs) + ")")
    # Where the driver keeps its ICD apart from the loader's folders (a container's mounted driver),
    # add it beside whatever the loader finds: wgpu's default adapter prefers a discrete GPU.
    nvidia = Path("/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json")
    if nvidia.exists() and "VK_DRIVER_FILES" not in env:
        env["VK_ADD_DRIVER_FILES"] = str(nvidia)
        used.append(f"the driver's ICD {nvidia}")
    icds = sorted(p.name for d in ("/usr/share/vulkan/icd.d", "/etc/vulkan/icd.d") for p in Path(d).glob("*.json"))
    used.append("ICDs in the loader's folders: " + (", ".join(icds) or "none"))
    return "; ".join(used)


def unpack_binaries(bundle):
    """The bundle's binaries, decompressed afresh (never an earlier pack's)."""
    binaries = {}
    for name in BENCHES:
        packed, binary = bundle / "bin" / f"{name}.xz", bundle / "bin" / name
        with lzma.open(packed, "rb") as source, open(binary, "wb") as sink:
            shutil.copyfileobj(source, sink)
        binary.chmod(0o755)
        binaries[name] = str(binary)
    return binaries


def first_line(command):
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=60).stdout.strip().splitlines()[0]
    except (OSError, IndexError, subprocess.SubprocessError):
        return None


class Report:
    """DIR/gpu-tables.md, written section by section; each command's output in DIR/NAME.log."""

    def __init__(self, out, env, deadline=None):
        """`deadline`: the monotonic time by which every command must have ended, or None."""
        self.out, self.env, self.failed = out, env, []
        self.deadline = deadline
        self.path = out / "gpu-tables.md"
        self.path.write_text("")

    def write(self, text):
        with open(self.path, "a") as f:
            f.write(text + "\n")
        print(text, flush=True)

    def command(self, name, command, timeout, log_name=None, share=1.0):
        """Runs `command`, logging its output to LOG_NAME.log (NAME.log); its stdout, or None if it
        failed or ran past `timeout` seconds, or past `share` of the time left to the deadline (the
        rest is kept for the commands after it)."""
        if self.deadline:
            timeout = max(1, min(timeout, int((self.deadline - time.monotonic()) * share)))
        say(f"{name}: {' '.join(command)} (at most {timeout} s)")
        start = time.monotonic()
        log_name = log_name or name
        with open(self.out / f"{log_name}.log", "a") as log:
            log.write("$ " + " ".join(command) + "\n")
            log.flush()
            # A session of its own: on a timeout the whole group goes, the bench binary that
            # compare_peers.py started included (left running, it would share the GPU with the
            # next table).
            child = subprocess.Popen(command, env=self.env, stdout=subprocess.PIPE, stderr=log,
                                     text=True, start_new_session=True)
            try:
                stdout, _ = child.communicate(timeout=timeout)
                status = child.returncode
            except subprocess.TimeoutExpired:
                os.killpg(child.pid, signal.SIGKILL)
                stdout, _ = child.communicate()
                status = f"timed out after {timeout} s"
            log.write(stdout)
        ended = f"exit status {status}" if isinstance(status, int) else status
        say(f"{name}: {ended} ({time.monotonic() - start:.0f} s)")
        if status != 0:
            self.failed.append(name)
            if stdout.strip():
                self.write(stdout)
            self.write(f"\n**{name} failed** ({status}); see {log_name}.log.\n")
            return None
        return stdout


def step_table(report, binaries, bundle, batches, runs, quick, timeout, torch):
    shape = ["--size", "48x64", "--width", "8"] if quick else []
    version, cuda = torch
    peer = version is not None
    device = "cuda" if cuda else "cpu" if peer else "no PyTorch"
    report.write("| net | batch | ours, pool indices | ours, raw indices (checked) | raw / pool | "
                 f"PyTorch ({device}) | torch/ours (pool indices) |")
    report.write("|---|---|---|---|---|---|---|")
    for batch in batches:
        common = ["--batch", str(batch), "--runs", str(runs)] + shape
        # Each path twice, alternated: a first path that still compiles kernels shows as a
        # difference between its two medians; the second of each is the one reported.
        paths = ["--warmup", "3", "--paths", "pooled,raw,pooled,raw"]
        ours = report.command(f"step-b{batch}", [binaries["step"], "--device", "wgpu"] + common + paths,
                              timeout, "step", share=0.75)
        theirs = None
        if peer:
            theirs = report.command(f"step-torch-b{batch}", [sys.executable, str(bundle / "segnet_basic_torch.py"),
                                                             "--device", device] + common, timeout, "step")
            if theirs is None:
                continue
        if ours is None:
            continue
        times = {}  # the last median of each path: the one timed after the most steps
        for line in ours.splitlines():
            found = re.match(r"^(.*?)\s+([\d.]+) ms per step", line)
            if found:
                times[found.group(1)] = float(found.group(2))
        pooled, raw = times.get("pool indices"), times.get("raw indices, checked")
        if pooled is None or raw is None:
            report.failed.append(f"step-b{batch}")
            report.write(f"\n**step-b{batch}**: no median of each path in its output; see step.log.\n")
            continue
        torch_ms = float(theirs.split("median step ")[1].split()[0]) if theirs else None
        torch_cells = f"{torch_ms:.1f} | {torch_ms / pooled:.2f}x" if theirs else "- | -"
        report.write(f"| SegNet-Basic {'width 8, 48x64' if quick else 'width 64, 360x480'} | {batch} | "
                     f"{pooled:.1f} | {raw:.1f} | {raw / pooled:.2f}x | {torch_cells} |")


def torch_peer():
    """This Python's PyTorch: its version and whether it has CUDA, or (None, False) where it has
    none (the peer columns stay empty). One import, in a child: it takes seconds."""
    found = first_line([sys.executable, "-c", "import torch; print(torch.__version__, torch.cuda.is_available())"])
    if found is None:
        return None, False
    version, cuda = found.split()
    return version, cuda == "True"


def run(args):
    started = time.monotonic()
    bundle = Path(__file__).resolve().parent
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    env = os.environ.copy()
    env["PYTHONUNBUFFERED"] = "1"  # a table cut short by its timeout keeps the rows it printed
    vulkan = vulkan_env(bundle, env, args.vulkan_loader)
    binaries = unpack_binaries(bundle)
    if args.quick:
        args.batches, args.step_batches, args.runs, args.calls = "1", "1", 1, 2
    monitor = None
    if shutil.which("nvidia-smi"):
        with open(out / "gpu-monitor.csv", "w") as readings:
            monitor = subprocess.Popen(["nvidia-smi", "--query-gpu=timestamp,utilization.gpu,memory.used",
                                        "--format=csv", "-l", "1"], stdout=readings, stderr=subprocess.DEVNULL)
    try:
        tables(args, bundle, out, env, vulkan, binaries, started)
    finally:
        if monitor:
            monitor.terminate()
            monitor.wait()


def tables(args, bundle, out, env, vulkan, binaries, started):
    """Every table, in order, into OUT/gpu-tables.md."""
    unpool_only, pool_only = ("s4", "s4,v3") if args.quick else (None, None)
    report = Report(out, env, started + args.deadline if args.deadline else None)
    torch = torch_peer()
    manifest = json.loads((bundle / "MANIFEST").read_text())
    gpu = first_line(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"])
    report.write(f"GPU tables, {datetime.date.today().isoformat()}: commit {manifest['commit']}, "
                 f"{manifest['profile']} build ({manifest['rustc']}); GPU: {gpu or 'no NVIDIA GPU'}; "
                 f"CPU: {platform.processor() or platform.machine()}, {os.cpu_count()} cores; PyTorch "
                 f"{torch[0] or 'not installed'} (CUDA: {torch[1]}); Vulkan: {vulkan}. "
                 f"`gpu_tables.py run{' --quick' if args.quick else ''} --batches {args.batches} "
                 f"--runs {args.runs} --calls {args.calls} --pool-runs {args.pool_runs} --pool-calls "
                 f"{args.pool_calls} --step-batches {args.step_batches}`.")
    peers = [sys.executable, str(bundle / "compare_peers.py"), "--batches", args.batches, "--runs",
             str(args.runs), "--calls", str(args.calls)]
    report.write("\n## Unpooling\n")
    table = report.command("unpool", peers + ["--gpu", "--timings", binaries["timings"]]
                           + (["--only", unpool_only] if unpool_only else []), args.timeout, share=0.5)
    if table is not None:
        report.write(table)
    report.write("\n## Max pools with indices\n")
    pool_peers = [sys.executable, str(bundle / "compare_peers.py"), "--batches", args.batches, "--runs",
                  str(min(args.runs, args.pool_runs)), "--calls", str(min(args.calls, args.pool_calls))]
    table = report.command("pools", pool_peers + ["--pools", "--gpu", "--pools-binary", binaries["pools"]]
                           + (["--only", pool_only] if pool_only else []), args.timeout, share=0.6)
    if table is not None:
        report.write(table)
    report.write("\n## SegNet-Basic training step\n")
    step_batches = [int(b) for b in args.step_batches.split(",")]
    step_table(report, binaries, bundle, step_batches, args.step_runs or args.runs, args.quick, args.timeout,
               torch)
    say(f"done in {time.monotonic() - started:.0f} s; {report.path}")
    if report.failed:
        sys.exit(f"failed: {', '.join(report.failed)}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    packing = commands.add_parser("pack", help="build the binaries here and write a bundle")
    packing.add_argument("bundle")
    packing.add_argument("--dev", action="store_true", help="test-profile binaries, for a dry run")
    packing.add_argument("--no-loader", action="store_true", help="leave the Vulkan loader out")
    running = commands.add_parser("run", help="run a bundle's benches and write the tables")
    running.add_argument("--out", required=True)
    running.add_argument("--quick", action="store_true", help="a dry run's size")
    running.add_argument("--vulkan-loader", choices=["auto", "bundle"], default="auto",
                         help="the machine's loader where it has one (auto), or the bundle's")
    running.add_argument("--batches", default="1,4,12")
    running.add_argument("--runs", type=int, default=15)
    running.add_argument("--calls", type=int, default=50)
    running.add_argument("--pool-runs", type=int, default=5, help="--runs for the pool table, at most")
    running.add_argument("--pool-calls", type=int, default=20, help="--calls for the pool table, at most "
                         "(its 3-d peer, a composition of Burn ops, takes 35 ms a call on an H200)")
    running.add_argument("--step-batches", default="4", help="the SegNet step's batch sizes")
    running.add_argument("--step-runs", type=int, help="timed SegNet steps per path [--runs]")
    running.add_argument("--timeout", type=int, default=1800, help="seconds each command may run")
    running.add_argument("--deadline", type=int, help="seconds the whole run may take: each table "
                         "keeps time for the ones after it (a machine lent for minutes)")
    args = parser.parse_args()
    pack(args) if args.command == "pack" else run(args)


if __name__ == "__main__":
    main()
