#!/usr/bin/env python3
"""Every GPU figure of docs/benchmarks.md in one command, on a machine that has a GPU but no Rust
toolchain and no package registry.

Here (with cargo), pack a bundle: the `timings`, `pools` and `step` bench binaries built with wgpu
and Burn's autotune, the cross-crate suites' cases in one test binary (`gpu_suites`), the `segnet`
example's binary, the `step` bench again in the other builds a user can pick (SPIR-V through
`vulkan`, and both compilers without autotune, for comparison), xz-compressed, the Vulkan loader's
Debian package, and the Python scripts that run PyTorch beside them:

    python3 benches/gpu_tables.py pack BUNDLE [--dev] [--no-loader] [--builds step,step-spirv,...]

There (Python 3 and dpkg; PyTorch with CUDA and numpy for the peer figures, which stay empty
without them), run it:

    python3 BUNDLE/gpu_tables.py run --out DIR [--quick] [--batches 1,4,12] [--runs 10] [--calls 30]
        [--pool-runs 5] [--pool-calls 20] [--step-batches 4,1] [--step-runs 5] [--timeout 1800]
        [--deadline 480] [--vulkan-loader auto|bundle]

`run` unpacks the binaries, uses the machine's Vulkan loader or else the bundle's (into the bundle's
folder, not the system's), and writes DIR/gpu-tables.md, what has never run on a GPU first: the
suites' cases on Flex, NdArray and the wgpu device (each failure named); `segnet train` at the
paper's size; the SegNet-Basic training step at every `--step-batches` (in micro-batches where the device needs them) in every
configuration the bundle has (WGSL and SPIR-V, with and without autotune, f32, f16 and bf16; pool
indices and raw indices; the first step's time apart; whether each trains) beside
`segnet_basic_torch.py` in the same dtype, the step part by part (convolution forward, input and
weight gradients, batch norm, pools and unpools, loss, optimizer) in the tuned builds beside
PyTorch's parts, and the kernels autotune picked with their times (DIR/kernels-*/, CubeCL's own
logs); the unpooling and pool tables on the CPU at the machine's core count beside PyTorch
(`compare_peers.py`, `--pools`) and how both scale from 1 thread to the machine's cores
(`--threads`); then the unpooling table and the pool table on the default wgpu
device beside PyTorch on CUDA (`--gpu`, `--pools --gpu`). Each table is written as soon as it is
done; each command's output goes to DIR/*.log;
`nvidia-smi`'s readings during the run, where it exists, to DIR/gpu-monitor.csv (a memory figure
that rises while the binaries run shows the wgpu device is the NVIDIA GPU). `--deadline` (480 s by
default: a machine lent for minutes) shares the time among the tables; a table cut short keeps the
rows it printed.

`--dev` builds the binaries in the test profile with the feature set of the workspace's test build
(what CI has built already, so only the three bench binaries compile) and, by default, no other
build (`--builds` names more; SPIR-V cannot run on lavapipe: docs/lavapipe-spirv.md): for a dry
run, not for figures. Every build packed as tuned is checked to have Burn's autotune
(`.ci/gpu-builds-tuned.py --check`). `--quick` is a dry run's size: batch 1, one run, two calls, the smallest shapes. Without a
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
# The SegNet step in each build a user can pick: binary -> (compiler, autotune, segnet's feature).
# `step` is built with the timings and pools benches (burn-unpool's `wgpu`, tuned through its
# benches' dev-dependency); the others alone.
STEP_BUILDS = {
    "step": ("WGSL", True, "wgpu"),
    "step-spirv": ("SPIR-V", True, "vulkan"),
    "step-untuned": ("WGSL", False, "wgpu-device"),
    "step-untuned-spirv": ("SPIR-V", False, "vulkan-device"),
}
# The step configurations run, most telling first: binary, float, whether the step is also timed
# part by part, and its weight in the time left (the first pays the first compilations and
# tunings too, and the parts); a deadline skips the last.
STEP_CONFIGS = [
    ("step", "f32", True, 3),
    # The only build with a matrix-core path; it has never produced a step: time to tune.
    ("step-spirv", "f16", False, 2),
    ("step-spirv", "f32", True, 2),
    ("step", "f16", False, 1),
    ("step-spirv", "bf16", False, 1),
    ("step-untuned", "f32", False, 1),
    ("step-untuned-spirv", "f32", False, 1),
]
# The step bench's exit status where the device cannot compute in the asked float dtype.
UNSUPPORTED_FLOAT = 3
# The thread counts of the CPU scaling table (those up to the machine's cores).
THREAD_COUNTS = (1, 2, 4, 8, 16, 32, 64)

# The weight the step configurations leave to the sections after them (the kernel logs, the CPU
# tables, the GPU tables), against theirs (3, 2 and 1 each).
AFTER_STEPS = 6
# The step's and the kernel logs' network in a dry run (`--quick`): SegNet-Basic at its smallest.
QUICK_SHAPE = ["--size", "48x64", "--width", "8"]
# A command the deadline leaves less time than this is skipped, not started.
MIN_SECONDS = 5
SKIPPED = "skipped: the deadline had passed"
# The Vulkan loader, and the GL dispatch libraries NVIDIA's Vulkan driver (libGLX_nvidia) links to:
# a machine with the driver but no desktop packages lacks both.
LOADER_PACKAGES = ["libvulkan1", "libglvnd0", "libglx0", "libgl1", "libegl1", "libopengl0", "libgles2"]
SCRIPTS = {
    "compare_peers.py": "crates/burn-unpool/benches/compare_peers.py",
    "segnet_basic_torch.py": "examples/segnet/benches/segnet_basic_torch.py",
}


def say(message):
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def cargo_executables(cargo, names, kind="bench"):
    """Runs `cargo` (a build that prints JSON messages) and returns {target name: executable} for
    the targets of `kind` (bench, test, bin) in `names`."""
    say("building: " + " ".join(cargo))
    built = subprocess.run(cargo, cwd=ROOT, check=True, stdout=subprocess.PIPE, text=True).stdout
    executables = {}
    for line in built.splitlines():
        message = json.loads(line)
        target = message.get("target", {})
        if message.get("reason") == "compiler-artifact" and message.get("executable") \
                and kind in target.get("kind", []) and target.get("name") in names \
                and (kind != "bin" or not message.get("profile", {}).get("test")):
            executables[target["name"]] = message["executable"]
    missing = set(names) - set(executables)
    if missing:
        sys.exit(f"cargo built no executable for the {kind} targets {sorted(missing)}")
    return executables


def check_tuned(package, features, tuned=True):
    """Exits unless `package` with `features` builds Burn with autotune (without, for `tuned`
    False)."""
    check = "--check" if tuned else "--check-untuned"
    subprocess.run([sys.executable, str(ROOT / ".ci" / "gpu-builds-tuned.py"), check, package, features],
                   cwd=ROOT, check=True)


def pack(args):
    bundle = Path(args.bundle).resolve()
    # Nothing of an earlier pack survives: old binaries or a mix of packages' versions.
    for stale in ("bin", "debs", "root"):
        shutil.rmtree(bundle / stale, ignore_errors=True)
    (bundle / "bin").mkdir(parents=True, exist_ok=True)
    builds = args.builds.split(",") if args.builds else (["step"] if args.dev else list(STEP_BUILDS))
    unknown = set(builds) - set(STEP_BUILDS)
    if unknown or "step" not in builds:
        sys.exit(f"--builds: {sorted(unknown) or 'step is required'} (builds: {', '.join(STEP_BUILDS)})")
    targets = [arg for name in BENCHES for arg in ("--bench", name)]
    json_messages = ["--message-format=json-render-diagnostics"]
    if args.dev:
        cargo = ["cargo", "test", "--no-run", "--workspace", "--features", "burn-unpool-tests/wgpu"]
        check_tuned("burn-unpool-tests", "wgpu")
    else:
        features = "burn-unpool/ndarray,burn-unpool/wgpu,segnet/wgpu"
        cargo = ["cargo", "bench", "--no-run", "-p", "burn-unpool", "-p", "segnet", "--features", features]
        check_tuned("burn-unpool", "wgpu")
        check_tuned("segnet", "wgpu")
    executables = cargo_executables(cargo + targets + json_messages, BENCHES)
    # The cross-crate suites' cases in one test binary, on the devices the suites run (wgpu
    # included), and the segnet example's binary with its tuned wgpu build.
    suites = ["cargo", "test", "--no-run", "--features", "burn-unpool-tests/wgpu,burn-unpool-tests/gpu-suites",
              "--test", "gpu_suites"]
    # A dry run: the workspace's test build (only this target compiles); else a release build.
    suites += ["--workspace"] if args.dev else ["--release", "-p", "burn-unpool-tests"]
    executables["gpu_suites"] = cargo_executables(suites + json_messages, ["gpu_suites"], kind="test")["gpu_suites"]
    segnet = ["cargo", "build", "-p", "segnet", "--features", "segnet/wgpu", "--bin", "segnet"]
    if args.dev:
        segnet = ["cargo", "test", "--no-run", "--workspace", "--features", "burn-unpool-tests/wgpu"]
    else:
        segnet.append("--release")
    executables["segnet"] = cargo_executables(segnet + json_messages, ["segnet"], kind="bin")["segnet"]
    # The other builds of the step: segnet alone, so that nothing else's features join its own.
    for name in builds:
        if name == "step":
            continue
        compiler, tuned, feature = STEP_BUILDS[name]
        check_tuned("segnet", feature, tuned)
        build = ["cargo", "test" if args.dev else "bench", "--no-run", "-p", "segnet", "--features",
                 f"segnet/{feature}", "--bench", "step"]
        executables[name] = cargo_executables(build + json_messages, ["step"])["step"]
    for name, path in sorted(executables.items()):
        target = bundle / "bin" / f"{name}.xz"
        # Without symbols and debug information (a third of a release binary, most of a test
        # one): the bundle travels to a GPU machine, often with a limit on its size.
        stripped = bundle / "bin" / name
        subprocess.run(["strip", "--strip-all", "-o", str(stripped), path], check=True)
        say(f"compressing {path} ({os.path.getsize(path) / 2**20:.1f} MiB, "
            f"{stripped.stat().st_size / 2**20:.1f} MiB stripped) into {target}")
        # A dry run's binaries travel nowhere: the fastest preset.
        with open(stripped, "rb") as source, lzma.open(target, "wb", preset=0 if args.dev else 9) as sink:
            shutil.copyfileobj(source, sink)
        stripped.unlink()
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
        "builds": sorted(executables),
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
    for packed in sorted((bundle / "bin").glob("*.xz")):
        name = packed.name[:-len(".xz")]
        binary = bundle / "bin" / name
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

    def command(self, name, command, timeout, log_name=None, share=1.0, cwd=None, statuses=(0,)):
        """Runs `command` (in `cwd`), logging its output to LOG_NAME.log (NAME.log); its stdout, or
        None if it ended with a status outside `statuses`, or ran past `timeout` seconds, or past
        `share` of the time left to the deadline (the rest is kept for the commands after it)."""
        status, stdout = self.run_command(name, command, timeout, log_name, share, cwd)
        if status == SKIPPED:
            self.write(f"\n**{name}**: {SKIPPED}.\n")
            return None
        if status not in statuses:
            self.failed.append(name)
            if stdout.strip():
                self.write(stdout)
            ended = f"exit status {status}" if isinstance(status, int) else status
            self.write(f"\n**{name} failed** ({ended}); see {log_name or name}.log.\n")
            return None
        return stdout

    def run_command(self, name, command, timeout, log_name, share, cwd):
        """`command`'s status (an int, or how it was stopped: "timed out ...", or SKIPPED where
        the deadline left it less than MIN_SECONDS) and stdout."""
        if self.deadline:
            timeout = min(timeout, int((self.deadline - time.monotonic()) * share))
            if timeout < MIN_SECONDS:
                say(f"{name}: skipped, {timeout} s left to it before the deadline")
                return SKIPPED, ""
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
                                     text=True, start_new_session=True, cwd=cwd)
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
        return status, stdout


def step_medians(output):
    """The step bench's output read: {path: median ms}, {path: "trains" or "DOES NOT TRAIN" with
    the losses}, {part: ms} (the last median of each path: the one timed after the most steps),
    {path: ms of its first step} (the first of each path: the one that compiled and tuned)."""
    times, training, parts, first_steps = {}, {}, {}, {}
    for line in output.splitlines():
        found = re.match(r"^(.*?)\s+([\d.]+) ms the first step", line)
        if found:
            first_steps.setdefault(found.group(1), float(found.group(2)))
        found = re.match(r"^(.*?)\s+([\d.]+) ms per step", line)
        if found:
            times[found.group(1)] = float(found.group(2))
        found = re.match(r"^(.*?)\s+loss ([-\w.]+) at the first step, ([-\w.]+) at step \d+: (.*)$", line)
        if found:
            training[found.group(1)] = f"{found.group(4)} ({found.group(2)} to {found.group(3)})"
        found = re.match(r"^part (\S+)\s+(-?[\d.]+) ms", line)
        if found:
            parts[found.group(1)] = float(found.group(2))
    return times, training, parts, first_steps


def config_label(binary, float_):
    compiler, tuned, _ = STEP_BUILDS[binary]
    return f"{compiler}, {'autotune' if tuned else 'no autotune'}, {float_}"


def step_section(report, binaries, bundle, out, args, torch):
    """The SegNet-Basic step in every configuration the bundle has, beside PyTorch in the same
    dtype; the parts of the tuned f32 steps beside PyTorch's."""
    shape = QUICK_SHAPE if args.quick else []
    version, cuda = torch
    device = "cuda" if cuda else "cpu" if version else None
    net = "SegNet-Basic " + ("width 8, 48x64" if args.quick else "width 64, 360x480")
    report.write(f"{net}; ours on the default wgpu device, PyTorch {device or '(not installed)'}; ms per step, "
                 "medians. \"trains\": the loss of the first and last step (at least 8) on the same batch.\n")
    report.write("| configuration | batch | first step | ours, pool indices | ours, raw indices (checked) | raw / pool | "
                 "trains | PyTorch, same dtype | torch/ours (pool indices) |")
    report.write("|---|---|---|---|---|---|---|---|---|")
    absent = sorted({config[0] for config in STEP_CONFIGS} - set(binaries))
    runs = ["--runs", str(args.step_runs), "--warmup", "3" if not args.quick else "1"]
    parts, torch_ms = {}, {}
    # Configuration by configuration, each at every batch: the most telling first.
    runs_left = [(batch, config) for config in STEP_CONFIGS if config[0] in binaries
                 for batch in [int(b) for b in args.step_batches.split(",")]]
    while runs_left:
        (batch, (binary, float_, with_parts, weight)), runs_left = runs_left[0], runs_left[1:]
        # This configuration's share of the time left, the later ones (every batch's) theirs, and
        # AFTER_STEPS for the sections after the step's.
        share = weight / (weight + sum(config[3] for _, config in runs_left) + AFTER_STEPS)
        common = ["--batch", str(batch)] + shape
        label = config_label(binary, float_)
        name = f"step-{binary}-{float_}-b{batch}"
        command = [binaries[binary], "--device", "wgpu", "--float", float_, "--paths", "pooled,raw"] \
            + common + runs + (["--parts", "--part-runs", str(args.step_runs)] if with_parts else [])
        status, stdout = report.run_command(name, command, args.timeout, "step", share, None)
        if status == UNSUPPORTED_FLOAT:
            report.write(f"| {label} | {batch} | not on this device: see step.log | | | | | | |")
            continue
        times, training, timed_parts, first_steps = step_medians(stdout)
        split = re.search(r"in micro-batches of (\d+)", stdout)
        batch_cell = f"{batch} (micro-batches of {split.group(1)})" if split else str(batch)
        pooled, raw = times.get("pool indices"), times.get("raw indices, checked")
        ended = f"exit status {status}" if isinstance(status, int) else status
        if pooled is None or raw is None or status not in (0, 1) and not isinstance(status, str):
            if status != SKIPPED:
                report.failed.append(name)
            report.write(f"| {label} | {batch_cell} | {'failed' if status != SKIPPED else ''} ({ended}): see step.log "
                         "| | | | | | |")
            continue
        # Stopped by its time after both paths were timed (during the parts): the row stands.
        note = f" ({ended} after both paths)" if isinstance(status, str) else ""
        if status == 1:
            report.failed.append(f"{name} (does not train)")
        if timed_parts:
            parts[(label, batch)] = timed_parts | {"step": pooled}
        trains = training.get("pool indices", "-")
        if training.get("raw indices, checked", "").split(" ")[0] != trains.split(" ")[0]:
            trains += f"; raw indices: {training.get('raw indices, checked', '-')}"
        key = (float_, batch)
        if device and key not in torch_ms:
            torch_command = [sys.executable, str(bundle / "segnet_basic_torch.py"), "--device", device,
                             "--float", float_, "--runs", str(args.step_runs)] + common
            if float_ == "f32":
                torch_command += ["--parts", "--part-runs", str(args.step_runs)]
            torch_status, theirs = report.run_command(f"step-torch-{float_}-b{batch}", torch_command, args.timeout,
                                                      "step", share, None)
            torch_ms[key] = None
            if torch_status == 0 and "median step " in theirs:
                median = float(theirs.split("median step ")[1].split()[0])
                torch_ms[key] = median
                if float_ == "f32":
                    parts[("PyTorch", batch)] = step_medians(theirs)[2] | {"step": median}
            elif torch_status != SKIPPED:
                report.failed.append(f"step-torch-{float_}-b{batch}")
        theirs = torch_ms.get(key)
        torch_cells = f"{theirs:.1f} | {theirs / pooled:.3f}x" if theirs else \
            "- (see step.log) | -" if device else "- | -"
        first = first_steps.get("pool indices")
        first_cell = f"{first:.1f}" if first is not None else "-"
        report.write(f"| {label} | {batch_cell} | {first_cell} | {pooled:.1f}{note} | {raw:.1f} | {raw / pooled:.2f}x | "
                     f"{trains} | {torch_cells} |")
    if absent:
        report.write(f"\nNot in this bundle: {'; '.join(config_label(b, 'f32').rsplit(',', 1)[0] for b in absent)} "
                     "(`pack --builds`).")
    if parts:
        report.write("\n### The step part by part\n")
        columns = sorted(parts, key=lambda key: (key[1], key[0] == "PyTorch", key[0]))
        report.write("| part | " + " | ".join(f"{label} (b{batch})" for label, batch in columns) + " |")
        report.write("|---|" + "---|" * len(columns))
        names = ["conv-forward", "conv-input-grad", "conv-weight-grad", "batch-norm-relu", "pools-unpools",
                 "loss", "optimizer", "sum", "rest", "step"]
        for part in names:
            cells = [f"{parts[c][part]:.3f}" if part in parts[c] else "-" for c in columns]
            report.write(f"| {part} | " + " | ".join(cells) + " |")


def kernel_logs(report, binaries, out, args, shape):
    """One step of each tuned f32 build with CubeCL's autotune decisions and its per-kernel
    profile written to DIR/kernels-BUILD/ (a `cubecl.toml` there): the kernels picked, for an
    upstream report."""
    for binary in ("step", "step-spirv"):
        if binary not in binaries:
            continue
        folder = out / f"kernels-{binary}"
        folder.mkdir(exist_ok=True)
        (folder / "cubecl.toml").write_text(
            "[autotune.logger]\nlevel = \"full\"\nfile = \"autotune.log\"\n\n"
            "[profiling.logger]\nlevel = \"basic\"\nfile = \"profile.log\"\n")
        command = [binaries[binary], "--device", "wgpu", "--paths", "pooled", "--runs", "1", "--warmup", "1",
                   "--batch", args.step_batches.split(",")[0]] + shape
        # Two steps: one whose loss has not yet gone down is no failure here.
        if report.command(f"kernels-{binary}", command, args.timeout, share=0.3, cwd=folder,
                          statuses=(0, 1)) is not None:
            logs = ", ".join(f"{p.name} ({p.stat().st_size // 1024} KiB)" for p in sorted(folder.glob("*.log")))
            report.write(f"\nCubeCL's logs of one step of {config_label(binary, 'f32')}: {folder.name}/ ({logs or 'none written'}).")


def suites_section(report, binaries, args):
    """The cross-crate suites' cases (`tests/gpu_suites.rs`) on the devices they run, the GPU's
    wgpu device among them: one line per failure and the harness's totals."""
    report.write("\n## The cross-crate suites (Flex, NdArray and the default wgpu device)\n")
    if "gpu_suites" not in binaries:
        report.write("Not in this bundle (packed before the suites were).")
        return
    command = [binaries["gpu_suites"], "--test-threads", "1"] + (["conformance::"] if args.quick else [])
    status, stdout = report.run_command("suites", command, args.timeout, "suites", 0.2, None)
    failures = [line for line in stdout.splitlines() if line.startswith("test ") and line.endswith("FAILED")]
    totals = [line for line in stdout.splitlines() if line.startswith("test result:")]
    if status not in (0, SKIPPED):
        report.failed.append("suites")
    ended = f"exit status {status}" if isinstance(status, int) else status
    report.write(f"`gpu_suites --test-threads 1{' conformance::' if args.quick else ''}`: {ended}; "
                 f"{'; '.join(totals) or 'no totals printed'} (suites.log).")
    for line in failures:
        report.write(f"- {line}")


def example_section(report, binaries, out, args):
    """`segnet train` on the default wgpu device at the paper's size (SegNet-Basic width 64, batch
    4 of 360 x 480 synthetic scenes, in micro-batches where the device needs them): its lines
    about the batch and the mean training loss of each epoch, from burn-train's log."""
    report.write("\n## The SegNet example at the paper's size\n")
    if "segnet" not in binaries:
        report.write("Not in this bundle (packed before the example was).")
        return
    shape = QUICK_SHAPE if args.quick else ["--size", "360x480", "--width", "64"]
    artifacts = out / "segnet"
    shutil.rmtree(artifacts, ignore_errors=True)  # an earlier run's logs are not this one's
    scenes = ["8", "4", "4"] if args.quick else ["32", "8", "8"]
    command = [binaries["segnet"], "train", "--device", "wgpu", "--batch-size", "4", "--scenes", *scenes,
               "--epochs", "2", "--predictions", "2", "--artifacts", str(artifacts)] + shape
    stdout = report.command("segnet-train", command, args.timeout, share=0.3)
    losses = []
    for epoch in (1, 2):
        log = artifacts / "train" / f"epoch-{epoch}" / "Loss.log"
        # burn-train's log: one `loss,count` line a step, then `mean,final` for the epoch.
        rows = [line.split(",") for line in log.read_text().splitlines() if line.strip()] if log.exists() else []
        steps = [float(row[0]) for row in rows if row[-1].strip() != "final"]
        final = [float(row[0]) for row in rows if row[-1].strip() == "final"]
        mean = final[0] if final else sum(steps) / len(steps) if steps else None
        losses.append(f"epoch {epoch}: {mean:.4f} over {len(steps)} steps (first {steps[0]:.4f}, last "
                      f"{steps[-1]:.4f})" if steps else f"epoch {epoch}: no log")
    report.write(f"`segnet {' '.join(command[1:])}`: mean training loss "
                 f"{'; '.join(losses)}.")
    for line in (stdout or "").splitlines():
        if line.startswith(("micro-batches", "SegNet", "held-out", "done in")):
            report.write(f"- {line}")


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
        args.batches, args.step_batches, args.runs, args.calls, args.step_runs = "1", "1", 1, 2, 2
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
                 f"{args.pool_calls} --step-batches {args.step_batches} --step-runs {args.step_runs} "
                 f"--deadline {args.deadline}`; builds: {', '.join(manifest.get('builds', BENCHES))}.")
    # What has never been measured on a GPU first: the suites, the example at the paper's size,
    # the step (first step apart, parts at every batch) and its kernel logs, the CPU tables at
    # this machine's core count; then the GPU tables measured before.
    suites_section(report, binaries, args)
    example_section(report, binaries, out, args)
    report.write("\n## SegNet-Basic training step\n")
    step_section(report, binaries, bundle, out, args, torch)
    kernel_logs(report, binaries, out, args, QUICK_SHAPE if args.quick else [])
    peers = [sys.executable, str(bundle / "compare_peers.py"), "--batches", args.batches, "--runs",
             str(args.runs), "--calls", str(args.calls)]
    pool_peers = [sys.executable, str(bundle / "compare_peers.py"), "--batches", args.batches, "--runs",
                  str(min(args.runs, args.pool_runs)), "--calls", str(min(args.calls, args.pool_calls))]
    report.write(f"\n## Unpooling and max pools on the CPU ({os.cpu_count()} cores: ours on Flex and NdArray, "
                 "PyTorch with as many threads)\n")
    if torch[0] is None:
        report.write("Not run: the CPU tables are a comparison, and this Python has no PyTorch.")
    else:
        # The CPU tables take every shape (`--only` picks the GPU tables' workloads).
        table = report.command("unpool-cpu", peers + ["--timings", binaries["timings"]], args.timeout,
                               share=0.15)
        if table is not None:
            report.write(table)
        table = report.command("pools-cpu", pool_peers + ["--pools", "--pools-binary", binaries["pools"]],
                               args.timeout, share=0.15)
        if table is not None:
            report.write(table)
        # How ours and PyTorch's CPU kernels scale with threads, up to this machine's cores; a run
        # cut short keeps the thread counts it finished.
        counts = ",".join(str(t) for t in THREAD_COUNTS if t <= (os.cpu_count() or 1))
        report.write(f"\n### Scaling with threads ({counts})\n")
        table = report.command("scaling-cpu", pool_peers + ["--threads", counts, "--timings", binaries["timings"],
                                                            "--pools-binary", binaries["pools"]],
                               args.timeout, share=0.15)
        if table is not None:
            report.write(table)
    report.write("\n## Unpooling\n")
    table = report.command("unpool", peers + ["--gpu", "--timings", binaries["timings"]]
                           + (["--only", unpool_only] if unpool_only else []), args.timeout, share=0.5)
    if table is not None:
        report.write(table)
    report.write("\n## Max pools with indices\n")
    table = report.command("pools", pool_peers + ["--pools", "--gpu", "--pools-binary", binaries["pools"]]
                           + (["--only", pool_only] if pool_only else []), args.timeout, share=1.0)
    if table is not None:
        report.write(table)
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
    packing.add_argument("--builds", help="the step's builds to pack, comma-separated (default: all; with "
                         f"--dev, step only): {', '.join(STEP_BUILDS)}")
    running = commands.add_parser("run", help="run a bundle's benches and write the tables")
    running.add_argument("--out", required=True)
    running.add_argument("--quick", action="store_true", help="a dry run's size")
    running.add_argument("--vulkan-loader", choices=["auto", "bundle"], default="auto",
                         help="the machine's loader where it has one (auto), or the bundle's")
    running.add_argument("--batches", default="1,4,12")
    running.add_argument("--runs", type=int, default=10)
    running.add_argument("--calls", type=int, default=30)
    running.add_argument("--pool-runs", type=int, default=5, help="--runs for the pool table, at most")
    running.add_argument("--pool-calls", type=int, default=20, help="--calls for the pool table, at most "
                         "(its 3-d peer, a composition of Burn ops, takes 35 ms a call on an H200)")
    running.add_argument("--step-batches", default="4,1", help="the SegNet step's batch sizes")
    running.add_argument("--step-runs", type=int, default=5, help="timed SegNet steps per path, and runs "
                         "of each part")
    running.add_argument("--timeout", type=int, default=1800, help="seconds each command may run")
    running.add_argument("--deadline", type=int, default=480, help="seconds the whole run may take: each "
                         "table keeps time for the ones after it (a machine lent for minutes); 0 for none")
    args = parser.parse_args()
    pack(args) if args.command == "pack" else run(args)


if __name__ == "__main__":
    main()
