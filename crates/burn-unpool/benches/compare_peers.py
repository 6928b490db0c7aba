#!/usr/bin/env python3
"""Times burn-unpool beside ONNX Runtime and PyTorch (CPU) on the SegNet decoder shapes, in one run,
and prints medians and ratios; with `--gpu`, burn-unpool on the default wgpu device beside PyTorch
CUDA, timed two ways: latency (each call followed by a device sync) and throughput (`--calls` calls
queued back to back, one sync at the end, per call).

"pooled" is burn-unpool with the indices of its own pool (no index check, one-pass kernels where the
windows cannot overlap); "raw" with a plain index tensor, checked (on a GPU one word is read back
before the op runs).

burn-unpool's medians come from the `timings` bench (run here, in the same invocation); ONNX Runtime
runs its `MaxUnpool` single-threaded and reuses its output buffer (IO binding); PyTorch runs
`F.max_unpool2d` and its autograd backward with the same thread count as burn-unpool's rayon pool.
Indices are drawn uniformly inside each pool window, as `benches/support` does (global for ONNX
Runtime).

"step" is the op's share of a training step, the same on both sides: the op under autodiff, its
output reduced to a loss with `sum()`, `backward()`, and the gradient of `x` read with a `sum()`.

With `--pools`, the max pools with indices instead: burn-unpool's pools (the `pools` bench, Flex and
NdArray) beside Burn's own `max_pool2d_with_indices` on the same devices and PyTorch CPU
`max_pool2d`/`max_pool3d(return_indices=True)` with as many threads, forward and forward + autograd
backward, at the SegNet encoder shapes (2-d) and at volumetric shapes (3-d, beside the composition of
Burn tensor ops the crate runs on devices without kernels); and ONNX `MaxPool` with `Indices`
(`max_pool_onnx`, f32 and i32 values) beside `max_pool_with_indices` from the same bench run.

With `--threads 1,2,4`, the scaling table instead: the unpooling forward and backward (pool
indices) and the pools' forward and forward + backward, ours on Flex with `RAYON_NUM_THREADS` at
each count beside PyTorch CPU with `torch.set_num_threads` at the same count, each with its speed-up
over the first count and PyTorch's time over ours (`--pools-binary` and `--timings` as below).

"copy" is the memory anchor, timed in the same run: one thread copying as many bytes as the op
reads and writes (the `timings` bench's `copy_same_bytes` for unpooling; numpy's `copyto` for the
pools), between buffers allocated once; "ours/copy" is the op's time as a multiple of it. The
unpooling's forward and backward touch the same bytes (the forward reads `x` and the indices and
writes the output; the backward reads the output gradient and the indices and writes `dx`), so one
copy anchors both: "fwd/copy", "bwd raw/copy", "bwd pooled/copy".

Usage: python crates/burn-unpool/benches/compare_peers.py [--batches 1,4] [--runs 15] [--gpu] [--calls 50]
    [--pools] [--only s1,v1]  (only the workloads of these names; GPU tables and the scaling table)
    [--threads 1,2,4,8,16]  (the scaling table)
    [--repeat 3]       (CPU tables: each cell the median of 3 runs, ours and the peers' alternated;
                        "torch/ours per run" gives the forward ratio of each run)
    [--timings PATH]   (a built `timings` bench binary, for a machine without cargo; with `--gpu`
                        it must be built with `--features wgpu`)
Needs: numpy, onnx, onnxruntime, torch (see tests/scripts/README.md); `--gpu` needs torch with CUDA
for its peer figures, and without torch (or numpy) prints ours alone, the peer columns empty.
"""

import argparse
import json
import os
import platform
import statistics
import subprocess
import time

try:
    import numpy as np
    import torch
    import torch.nn.functional as F
except ImportError:  # the GPU tables without a peer (a dry run where PyTorch is not installed)
    np = torch = F = None

STAGES = [("s1", 64, 180, 240, 360, 480), ("s2", 128, 90, 120, 180, 240), ("s3", 256, 45, 60, 90, 120), ("s4", 512, 22, 30, 45, 60)]


def window_indices(rng, n, c, h, w, oh, ow, k=2, s=2, p=0):
    """Per-plane indices: one uniform position inside each (clipped) window."""
    def axis(count, limit):
        start = np.arange(count) * s - p
        lo = np.maximum(start, 0)
        hi = np.minimum(start + k, limit)
        return lo[None, :] + (rng.integers(0, 1 << 30, size=(n * c, count)) % (hi - lo)[None, :])
    rows = axis(h, oh).reshape(n * c, h, 1)
    cols = axis(w, ow).reshape(n * c, 1, w)
    return (rows * ow + cols).reshape(n, c, h, w).astype(np.int64)


def median_ms(fn, runs, warmup=2):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def ort_session(shape, out_shape):
    import onnxruntime as ort
    from onnx import TensorProto, helper

    node = helper.make_node("MaxUnpool", ["x", "i", "s"], ["y"], kernel_shape=[2, 2], strides=[2, 2])
    graph = helper.make_graph(
        [node],
        "unpool",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape)),
            helper.make_tensor_value_info("i", TensorProto.INT64, list(shape)),
            helper.make_tensor_value_info("s", TensorProto.INT64, [4]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(out_shape))],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)])
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def onnxruntime():
    """The onnxruntime module, or None where this Python has none (a GPU machine may not): its
    columns then read nan."""
    try:
        import onnx  # noqa: F401 (the model is built with it)
        import onnxruntime as ort
    except ImportError:
        return None
    return ort


def peers(batch, runs, threads):
    ort = onnxruntime()
    rows = {}
    rng = np.random.default_rng(7)
    torch.set_num_threads(threads)
    for name, c, h, w, oh, ow in STAGES:
        shape, out_shape = (batch, c, h, w), (batch, c, oh, ow)
        x = stage_values(shape)
        idx = window_indices(rng, batch, c, h, w, oh, ow)
        plane = oh * ow
        global_idx = idx + (np.arange(batch * c, dtype=np.int64) * plane).reshape(batch, c, 1, 1)

        rows[(name, "onnxruntime_forward")] = float("nan")
        if ort:
            session = ort_session(shape, out_shape)
            binding = session.io_binding()
            binding.bind_cpu_input("x", x)
            binding.bind_cpu_input("i", global_idx)
            binding.bind_cpu_input("s", np.array(out_shape, dtype=np.int64))
            y = ort.OrtValue.ortvalue_from_numpy(np.zeros(out_shape, dtype=np.float32))
            binding.bind_ortvalue_output("y", y)
            rows[(name, "onnxruntime_forward")] = median_ms(lambda: session.run_with_iobinding(binding), runs)

        fwd, bwd, step = torch_medians(torch.from_numpy(x), torch.from_numpy(idx), [oh, ow], runs, lambda: None)
        rows[(name, "pytorch_forward")], rows[(name, "pytorch_backward")] = fwd, bwd
        rows[(name, "pytorch_step")] = step
    return rows


def median_of_runs(runs):
    """Each key's median over `runs` (dicts of medians in ms, one per run of the same workloads)."""
    return {key: statistics.median(run[key] for run in runs) for key in runs[0]}


def stage_values(shape):
    """Deterministic values in [0, 100), a tenth apart, as `benches/support` makes them."""
    return ((np.arange(np.prod(shape), dtype=np.uint64) * 2654435761 % 1000) / 10).astype(np.float32).reshape(shape)


def torch_medians(tx, ti, size, runs, sync, calls=1, with_step=True):
    """Median ms per call of `F.max_unpool2d`, of its autograd backward and (`with_step`) of a
    training step's share: `calls` calls, then `sync` (latency: one call; throughput: many)."""

    def forward():
        for _ in range(calls):
            F.max_unpool2d(tx, ti, 2, 2, output_size=size)
        sync()

    xg = tx.clone().requires_grad_(True)
    out = F.max_unpool2d(xg, ti, 2, 2, output_size=size)
    grad = torch.ones_like(out)

    def backward():
        for _ in range(calls):
            xg.grad = None
            out.backward(grad, retain_graph=True)
        sync()

    def step():
        for _ in range(calls):
            xs = tx.clone().requires_grad_(True)
            F.max_unpool2d(xs, ti, 2, 2, output_size=size).sum().backward()
            xs.grad.sum().item()
        sync()

    step_ms = median_ms(step, runs) / calls if with_step else None
    return median_ms(forward, runs) / calls, median_ms(backward, runs) / calls, step_ms


def torch_device():
    """PyTorch's GPU peer: CUDA where this PyTorch has it, else the CPU (a dry run of the GPU
    tables, on a machine without a GPU: the figures then compare nothing); None without PyTorch."""
    if torch is None:
        return None
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def torch_sync(device):
    """A device sync on `device`: what ours does after each call (latency) or each batch of calls."""
    return torch.cuda.synchronize if device.type == "cuda" else (lambda: None)


def torch_label(device):
    if device is None:
        return "no peer (PyTorch is not installed: its columns are empty)"
    name = torch.cuda.get_device_name() if device.type == "cuda" else "CPU (no CUDA: a dry run)"
    cuda = f", CUDA {torch.version.cuda}" if device.type == "cuda" else ""
    return f"PyTorch {torch.__version__}{cuda} on {name}"


def cell(value, digits=3):
    """A table cell: `value` rounded, or "-" where there is none (no peer)."""
    return "-" if value is None else f"{value:.{digits}f}"


def ratio(numerator, denominator):
    return "-" if numerator is None else f"{numerator / denominator:.2f}x"


def wanted(name, only):
    """Whether the workload `name` is among `only` (comma-separated names; None: all)."""
    return only is None or name in only.split(",")


def gpu_peers(batch, runs, calls, only):
    """PyTorch's forward and autograd backward on its GPU device, in latency and throughput mode
    (as ours), and a training step's share in latency mode; none without PyTorch."""
    rows = {}
    device = torch_device()
    if device is None:
        return rows
    rng = np.random.default_rng(7)
    sync = torch_sync(device)
    for name, c, h, w, oh, ow in STAGES:
        if not wanted(name, only):
            continue
        tx = torch.from_numpy(stage_values((batch, c, h, w))).to(device)
        ti = torch.from_numpy(window_indices(rng, batch, c, h, w, oh, ow)).to(device)
        for mode, n in (("latency", 1), ("throughput", calls)):
            fwd, bwd, step = torch_medians(tx, ti, [oh, ow], runs, sync, n, with_step=mode == "latency")
            rows[(name, f"pytorch_forward@{mode}")], rows[(name, f"pytorch_backward@{mode}")] = fwd, bwd
            rows[(name, f"pytorch_step@{mode}")] = step
    return rows


def ours(batch, runs, gpu, binary, calls=50, only=None, extra=(), threads=None):
    """The `timings` bench's medians at `batch`, keyed (shape, what@backend@index@mode); `extra`
    flags are passed on (`--ops`, `--backends`); `threads` sets its thread pool's size."""
    flags = ["--json", "--batches", str(batch), "--runs", str(runs), "--calls", str(calls)] + (["--gpu"] if gpu else [])
    flags += (["--only", only] if only else []) + list(extra)
    if binary:
        cmd = [binary, "--bench"] + flags
    else:
        features = ["--features", "ndarray,wgpu" if gpu else "ndarray"]
        cmd = ["cargo", "bench", "-q", "-p", "burn-unpool", *features, "--bench", "timings", "--"] + flags
    out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True, env=thread_env(threads)).stdout
    rows = {}
    for line in out.splitlines():
        if line.startswith("{"):
            r = json.loads(line)
            if r["shape"] != "overlap":
                rows[(r["shape"], f'{r["what"]}@{r["backend"]}@{r["index"]}@{r["mode"]}')] = r["median_ms"]
    return rows


def thread_env(threads):
    """The environment of a bench run with `threads` threads in its rayon pool (None: as is)."""
    return None if threads is None else dict(os.environ, RAYON_NUM_THREADS=str(threads))


def gpu_table(args):
    device = torch_device()
    print(f"burn-unpool on the default wgpu device beside {torch_label(device)}; medians of {args.runs} "
          f"runs, f32, ms; throughput: {args.calls} calls queued, one sync, per call; step: latency only")
    print()
    header = ("shape", "batch", "mode", "ours fwd pooled", "ours fwd raw i64", "torch fwd", "torch/ours fwd",
              "copy same bytes", "ours fwd/copy", "ours bwd pooled", "ours bwd raw i64", "torch bwd",
              "torch/ours bwd", "ours step", "torch step", "torch/ours step")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for batch in [int(b) for b in args.batches.split(",")]:
        mine = ours(batch, args.runs, True, args.timings, args.calls, args.only)
        theirs = gpu_peers(batch, args.runs, args.calls, args.only)
        for mode in ("latency", "throughput"):
            for name, *_ in STAGES:
                if not wanted(name, args.only):
                    continue
                m = lambda what, index: mine[(name, f"{what}@wgpu@{index}@{mode}")]
                fwd, bwd = m("forward_pooled", "i32"), m("backward_pooled", "i32")
                copy = m("copy_same_bytes", "i32")
                t, tb = theirs.get((name, f"pytorch_forward@{mode}")), theirs.get((name, f"pytorch_backward@{mode}"))
                cells = [name, batch, mode, f"{fwd:.3f}", f'{m("forward", "i64"):.3f}', cell(t), ratio(t, fwd),
                         f"{copy:.3f}", f"{fwd / copy:.2f}x", f"{bwd:.3f}", f'{m("backward", "i64"):.3f}', cell(tb),
                         ratio(tb, bwd)]
                if mode == "latency":
                    step, ts = mine[(name, "step@wgpu@i64@latency")], theirs.get((name, "pytorch_step@latency"))
                    cells += [f"{step:.3f}", cell(ts), ratio(ts, step)]
                else:
                    cells += ["-", "-", "-"]
                print("| " + " | ".join(map(str, cells)) + " |")


POOL_STAGES = [("s1", 64, 360, 480), ("s2", 128, 180, 240), ("s3", 256, 90, 120), ("s4", 512, 45, 60)]
VOLUMES = [("v1", (1, 16, 32, 64, 64), 2, 2, 0), ("v2", (2, 32, 16, 32, 32), 2, 2, 0), ("v3", (1, 16, 32, 32, 32), 3, 2, 1)]


def pool_key(shape):
    """A pool workload's shape as the `pools` bench writes it in its JSON rows: `[1, 64, 360, 480]`."""
    return str(list(shape)).replace(" ", "").replace(",", ", ")


def torch_pool_medians(shape, kernel, stride, padding, runs, device=None, calls=1, with_step=True):
    """Median ms per call of PyTorch's max pool with indices on `device` (the CPU by default):
    forward, forward + autograd backward, and (`with_step`) a training step's share; `calls` calls,
    then a device sync."""
    device = device or torch.device("cpu")
    pool = F.max_pool2d if len(shape) == 4 else F.max_pool3d
    x = torch.from_numpy(stage_values(shape)).to(device)
    sync = torch_sync(device)

    def forward():
        # The results live until the sync, as ours do in throughput mode.
        kept = [pool(x, kernel, stride, padding, return_indices=True) for _ in range(calls)]
        sync()
        return kept

    def forward_backward():
        for _ in range(calls):
            xg = x.clone().requires_grad_(True)
            out, _ = pool(xg, kernel, stride, padding, return_indices=True)
            out.backward(torch.ones_like(out))
        sync()

    def step():
        xg = x.clone().requires_grad_(True)
        out, _ = pool(xg, kernel, stride, padding, return_indices=True)
        out.sum().backward()
        xg.grad.sum().item()

    step_ms = median_ms(step, runs) if with_step else None
    return median_ms(forward, runs) / calls, median_ms(forward_backward, runs) / calls, step_ms


def copy_ms(shape, out_shape, runs):
    """Median ms of one thread copying as many bytes as a pool reads (f32 input) and writes (f32
    values, i32 indices), between buffers allocated once: the memory anchor of the pool tables."""
    nbytes = 4 * int(np.prod(shape)) + 8 * int(np.prod(out_shape))
    source, target = np.ones(nbytes, dtype=np.uint8), np.zeros(nbytes, dtype=np.uint8)
    return median_ms(lambda: np.copyto(target, source), runs)


def ours_pools(batches, runs, binary, gpu=False, calls=20, only=None, extra=(), threads=None):
    """The `pools` bench's medians, keyed (shape, what, backend[, mode]); `extra` and `threads` as
    for `ours`."""
    flags = ["--json", "--batches", batches, "--runs", str(runs), "--calls", str(calls)] + (["--gpu"] if gpu else [])
    flags += (["--only", only] if only else []) + list(extra)
    if binary:
        cmd = [binary, "--bench"] + flags
    else:
        features = "ndarray,wgpu" if gpu else "ndarray"
        cmd = ["cargo", "bench", "-q", "-p", "burn-unpool", "--features", features, "--bench", "pools", "--"] + flags
    out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True, env=thread_env(threads)).stdout
    rows = {}
    for line in out.splitlines():
        if line.startswith("{"):
            r = json.loads(line)
            key = (r["dims"], r["what"], r["backend"])
            rows[key if r["mode"] == "latency" else key + (r["mode"],)] = r["median_ms"]
    return rows


def gpu_pools_table(args):
    """The pools on the default wgpu device (ours and Burn's own 2-d pool; the 3-d pool beside the
    composition of Burn ops) beside PyTorch's on its GPU, latency and throughput."""
    device = torch_device()
    print(f"burn-unpool's pools and Burn's on the default wgpu device beside {torch_label(device)}; medians "
          f"of {args.runs} runs, f32, ms; throughput: {args.calls} calls queued, one sync, per call; step: "
          f"latency only")
    print()
    mine = ours_pools(args.batches, args.runs, args.pools_binary, True, args.calls, args.only)
    header = ("shape", "x", "pool", "mode", "ours fwd", "peer fwd", "torch fwd", "peer/ours", "torch/ours",
              "ours fwd+bwd", "peer fwd+bwd", "torch fwd+bwd", "peer/ours", "torch/ours", "ours step",
              "torch step", "torch/ours step")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    workloads = [(name, (int(b), c, h, w), 2, 2, 0, "burn") for b in args.batches.split(",")
                 for name, c, h, w in POOL_STAGES]
    workloads += [(name, shape, k, s, p, "composed") for name, shape, k, s, p in VOLUMES]
    for name, shape, k, s, p, peer in workloads:
        if not wanted(name, args.only):
            continue
        key = pool_key(shape)
        for mode, calls in (("latency", 1), ("throughput", args.calls)):
            suffix = () if mode == "latency" else (mode,)
            m = lambda what: mine[(key, what, "wgpu") + suffix]
            tf = tfb = ts = None
            if device is not None:
                tf, tfb, ts = torch_pool_medians(shape, k, s, p, args.runs, device, calls, mode == "latency")
            of, pf, ofb, pfb = m("ours_forward"), m(f"{peer}_forward"), m("ours_forward_backward"), m(f"{peer}_forward_backward")
            cells = [name, key, f"k{k} s{s} p{p}", mode, f"{of:.3f}", f"{pf:.3f}", cell(tf), f"{pf / of:.2f}x",
                     ratio(tf, of), f"{ofb:.3f}", f"{pfb:.3f}", cell(tfb), f"{pfb / ofb:.2f}x", ratio(tfb, ofb)]
            if mode == "latency":
                step = m("ours_step")
                cells += [f"{step:.3f}", cell(ts), ratio(ts, step)]
            else:
                cells += ["-", "-", "-"]
            print("| " + " | ".join(cells) + " |")


def pool_peers(batches, runs):
    """PyTorch's medians (forward, forward + backward, step) and the copy anchor of every pool
    workload of `pools_table`, keyed like `ours_pools`' rows."""
    rows = {}
    for _, shape, k, s, p in pool_workloads(batches):
        key = pool_key(shape)
        tf, tfb, ts = torch_pool_medians(shape, k, s, p, runs)
        rows[(key, "torch_forward")], rows[(key, "torch_forward_backward")], rows[(key, "torch_step")] = tf, tfb, ts
        out_shape = shape[:2] + tuple((d + 2 * p - k) // s + 1 for d in shape[2:])
        rows[(key, "copy")] = copy_ms(shape, out_shape, runs)
    return rows


def pools_table(args):
    threads = os.cpu_count()
    torch.set_num_threads(threads)
    print(f"machine: {platform.processor() or platform.machine()}, {threads} cores; torch {torch.__version__} "
          f"({threads} threads); medians of {args.runs} runs, f32, ms; ours and Burn's: Flex / NdArray; "
          f"each cell the median of {args.repeat} such runs (ours, then PyTorch's, alternated)")
    batches = [int(b) for b in args.batches.split(",")]
    runs = []
    for _ in range(args.repeat):
        runs.append((ours_pools(args.batches, args.runs, args.pools_binary, calls=args.calls),
                     pool_peers(batches, args.runs)))
    mine, theirs = median_of_runs([run[0] for run in runs]), median_of_runs([run[1] for run in runs])
    # The faster device's forward in each run, against PyTorch's in the same run.
    fastest = lambda run, key: min(run[0][(key, "ours_forward", "flex")], run[0][(key, "ours_forward", "ndarray")])
    torch_per_run = lambda key: "/".join(f'{run[1][(key, "torch_forward")] / fastest(run, key):.2f}' for run in runs)
    header = ("shape", "x", "ours fwd", "burn fwd", "torch fwd", "burn/ours", "torch/ours", "torch/ours per run", "copy", "ours/copy",
              "ours fwd+bwd", "burn fwd+bwd", "torch fwd+bwd", "burn/ours", "torch/ours", "ours step", "burn step",
              "torch step", "torch/ours step", "Burn's loss+read")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for batch in [int(b) for b in args.batches.split(",")]:
        for name, c, h, w in POOL_STAGES:
            shape = (batch, c, h, w)
            key = pool_key(shape)
            m = lambda what, backend: mine[(key, what, backend)]
            pair = lambda what: f'{m(what, "flex"):.2f} / {m(what, "ndarray"):.2f}'
            best = lambda what: min(m(what, "flex"), m(what, "ndarray"))
            tf, tfb, ts = (theirs[(key, what)] for what in ("torch_forward", "torch_forward_backward", "torch_step"))
            of, ofb = best("ours_forward"), best("ours_forward_backward")
            bf, bfb = best("burn_forward"), best("burn_forward_backward")
            copy = theirs[(key, "copy")]
            cells = [name, key, pair("ours_forward"), pair("burn_forward"), f"{tf:.2f}", f"{bf / of:.2f}x",
                     f"{tf / of:.2f}x", torch_per_run(key), f"{copy:.2f}", f"{of / copy:.2f}x", pair("ours_forward_backward"), pair("burn_forward_backward"), f"{tfb:.2f}",
                     f"{bfb / ofb:.2f}x", f"{tfb / ofb:.2f}x", pair("ours_step"), pair("burn_step"), f"{ts:.2f}",
                     f'{ts / best("ours_step"):.2f}x', pair("step_loss_and_read")]
            print("| " + " | ".join(cells) + " |")
    header = ("shape", "x", "max_pool_with_indices", "max_pool_onnx f32", "onnx/ours", "max_pool_onnx i32",
              "i32/f32")
    print()
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for batch in [int(b) for b in args.batches.split(",")]:
        for name, c, h, w in POOL_STAGES:
            key = pool_key((batch, c, h, w))
            m = lambda what, backend: mine[(key, what, backend)]
            pair = lambda what: f'{m(what, "flex"):.2f} / {m(what, "ndarray"):.2f}'
            best = lambda what: min(m(what, "flex"), m(what, "ndarray"))
            cells = [name, key, pair("ours_forward"), pair("onnx_forward"),
                     f'{best("onnx_forward") / best("ours_forward"):.2f}x', pair("onnx_int_forward"),
                     f'{best("onnx_int_forward") / best("onnx_forward"):.2f}x']
            print("| " + " | ".join(cells) + " |")
    header = ("shape", "x", "pool", "ours fwd", "composed fwd", "torch fwd", "torch/ours", "torch/ours per run", "copy", "ours/copy",
              "ours fwd+bwd", "composed fwd+bwd", "torch fwd+bwd", "torch/ours", "ours step", "torch step",
              "torch/ours step", "Burn's loss+read")
    print()
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for name, shape, k, s, p in VOLUMES:
        key = pool_key(shape)
        m = lambda what, backend: mine[(key, what, backend)]
        pair = lambda what: f'{m(what, "flex"):.2f} / {m(what, "ndarray"):.2f}'
        best = lambda what: min(m(what, "flex"), m(what, "ndarray"))
        tf, tfb, ts = (theirs[(key, what)] for what in ("torch_forward", "torch_forward_backward", "torch_step"))
        of, ofb = best("ours_forward"), best("ours_forward_backward")
        copy = theirs[(key, "copy")]
        cells = [name, key, f"k{k} s{s} p{p}", pair("ours_forward"), pair("composed_forward"), f"{tf:.2f}",
                 f"{tf / of:.2f}x", torch_per_run(key), f"{copy:.2f}", f"{of / copy:.2f}x", pair("ours_forward_backward"), pair("composed_forward_backward"), f"{tfb:.2f}",
                 f"{tfb / ofb:.2f}x", pair("ours_step"), f"{ts:.2f}", f'{ts / best("ours_step"):.2f}x',
                 pair("step_loss_and_read")]
        print("| " + " | ".join(cells) + " |")


# The rows of the scaling table: (table title, bench, ours' row name, PyTorch's).
SCALING_OPS = [("unpooling forward", "timings", "forward", "pytorch_forward"),
               ("unpooling backward (pool indices)", "timings", "backward_pooled", "pytorch_backward"),
               ("max pool forward", "pools", "ours_forward", "torch_forward"),
               ("max pool forward + backward", "pools", "ours_forward_backward", "torch_forward_backward")]


def scaling_runs(args, threads, batches):
    """One run at `threads` threads: ours on Flex (the `timings` and `pools` benches, rayon's pool
    of that size), then PyTorch with as many threads; medians keyed (op row, shape, batch)."""
    rows = {}
    for batch in batches:
        mine = ours(batch, args.runs, False, args.timings, args.calls, args.only,
                    ["--ops", "forward,backward_pooled", "--backends", "flex"], threads)
        for name, *_ in STAGES:
            for what in ("forward", "backward_pooled"):
                key = (name, f"{what}@flex@i32@latency")
                if key in mine:
                    rows[(what, name, batch)] = mine[key]
    pools = ours_pools(",".join(map(str, batches)), args.runs, args.pools_binary, calls=args.calls, only=args.only,
                       extra=["--ops", "ours_forward,ours_forward_backward", "--backends", "flex"], threads=threads)
    for (key, what, backend, *_), ms in pools.items():
        rows[(what, key, None)] = ms
    torch.set_num_threads(threads)
    rng = np.random.default_rng(7)
    for batch in batches:
        for name, c, h, w, oh, ow in STAGES:
            if not wanted(name, args.only):
                continue
            x, idx = stage_values((batch, c, h, w)), window_indices(rng, batch, c, h, w, oh, ow)
            fwd, bwd, _ = torch_medians(torch.from_numpy(x), torch.from_numpy(idx), [oh, ow], args.runs, lambda: None,
                                        with_step=False)
            rows[("pytorch_forward", name, batch)], rows[("pytorch_backward", name, batch)] = fwd, bwd
    for name, shape, k, s, p in pool_workloads(batches):
        if wanted(name, args.only):
            tf, tfb, _ = torch_pool_medians(shape, k, s, p, args.runs, with_step=False)
            rows[("torch_forward", pool_key(shape), None)] = tf
            rows[("torch_forward_backward", pool_key(shape), None)] = tfb
    return rows


def pool_workloads(batches):
    """The pool tables' workloads: (name, shape, kernel, stride, padding), 2-d at `batches`, then 3-d."""
    return ([(name, (b, c, h, w), 2, 2, 0) for b in batches for name, c, h, w in POOL_STAGES]
            + list(VOLUMES))


def scaling_table(args):
    """Ours on Flex and PyTorch CPU at each of `--threads` (`--repeat` runs at each, every run ours
    then PyTorch's, alternated): one row per op, shape and thread count, with the
    speed-up over the first thread count and PyTorch's time over ours. The rows of a thread count
    are printed as soon as its last round is done, so a run cut short keeps them."""
    counts = [int(t) for t in args.threads.split(",")]
    batches = [int(b) for b in args.batches.split(",")]
    first = f"{counts[0]} thread{'s' if counts[0] > 1 else ''}"
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores; torch {torch.__version__}; "
          f"ours on Flex (f32, i32 indices) with RAYON_NUM_THREADS=T, PyTorch with torch.set_num_threads(T); "
          f"medians of {args.runs} runs after 2 warm-up runs; each cell the median of {args.repeat} runs "
          f"(ours then PyTorch's, alternated); ms; speed-up: over {first}", flush=True)
    print()
    header = ("op", "shape", "threads", "ours", "ours speed-up", "torch", "torch speed-up", "torch/ours")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header), flush=True)
    baseline = None
    for t in counts:
        median = median_of_runs([scaling_runs(args, t, batches) for _ in range(args.repeat)])
        baseline = baseline or median
        for title, bench, what, theirs in SCALING_OPS:
            if bench == "timings":
                shapes = [(f"{name} b{b}", (name, b)) for b in batches for name, *_ in STAGES]
            else:
                shapes = [(f"{name} {pool_key(shape)}", (pool_key(shape), None))
                          for name, shape, *_ in pool_workloads(batches)]
            for label, key in shapes:
                if (what,) + key not in median:
                    continue
                o, p = median[(what,) + key], median[(theirs,) + key]
                o1, p1 = baseline[(what,) + key], baseline[(theirs,) + key]
                cells = [title, label, str(t), f"{o:.2f}", f"{o1 / o:.2f}x", f"{p:.2f}", f"{p1 / p:.2f}x",
                         f"{p / o:.2f}x"]
                print("| " + " | ".join(cells) + " |", flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--batches", default="1,4")
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--gpu", action="store_true")
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--timings")
    parser.add_argument("--pools", action="store_true")
    parser.add_argument("--pools-binary")
    parser.add_argument("--only")
    parser.add_argument("--repeat", type=int, default=1,
                        help="CPU tables: run ours and the peers this many times, alternated, and show each "
                             "cell's median over the runs")
    parser.add_argument("--threads", help="the scaling table instead: ours on Flex and PyTorch CPU at each of "
                                          "these thread counts, comma-separated (e.g. 1,2,4,8,16)")
    args = parser.parse_args()
    if args.threads:
        scaling_table(args)
        return
    if args.pools and args.gpu:
        gpu_pools_table(args)
        return
    if args.pools:
        pools_table(args)
        return
    if args.gpu:
        gpu_table(args)
        return
    ort = onnxruntime()
    threads = os.cpu_count()
    print(f"machine: {platform.processor() or platform.machine()}, {threads} cores; torch {torch.__version__} ({threads} threads), "
          f"onnxruntime {ort.__version__ + ' (1 thread, output buffer reused)' if ort else 'not installed (its columns: nan)'}; "
          f"medians of {args.runs} runs, f32; "
          f"each cell the median of {args.repeat} such runs (ours, then the peers', alternated)")
    header = ("shape", "batch", "ours fwd", "ORT fwd", "torch fwd", "ORT/ours", "torch/ours", "torch/ours per run", "naive/ours",
              "copy", "ours fwd/copy", "ours bwd raw", "ours bwd pooled", "bwd raw/copy", "bwd pooled/copy", "torch bwd",
              "torch/ours bwd pooled", "ours step", "torch step",
              "torch/ours step", "Burn's loss+read")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for batch in [int(b) for b in args.batches.split(",")]:
        runs = [(ours(batch, args.runs, False, args.timings), peers(batch, args.runs, threads))
                for _ in range(args.repeat)]
        mine, theirs = median_of_runs([run[0] for run in runs]), median_of_runs([run[1] for run in runs])
        for name, *_ in STAGES:
            fastest = lambda run: min(run[(name, "forward@flex@i32@latency")], run[(name, "forward@ndarray@i64@latency")])
            torch_per_run = "/".join(f'{peer[(name, "pytorch_forward")] / fastest(own):.2f}' for own, peer in runs)
            best = lambda what: min(mine[(name, f"{what}@flex@i32@latency")], mine[(name, f"{what}@ndarray@i64@latency")])
            fwd, bwd, pooled, naive = best("forward"), best("backward"), best("backward_pooled"), best("forward_naive")
            o, t, tb = theirs[(name, "onnxruntime_forward")], theirs[(name, "pytorch_forward")], theirs[(name, "pytorch_backward")]
            copy = mine[(name, "copy_same_bytes@memory@i32@latency")]
            cells = [name, batch, f"{fwd:.2f}", f"{o:.2f}", f"{t:.2f}", f"{o / fwd:.2f}x", f"{t / fwd:.2f}x", torch_per_run, f"{naive / fwd:.1f}x",
                     f"{copy:.2f}", f"{fwd / copy:.2f}x", f"{bwd:.2f}", f"{pooled:.2f}", f"{bwd / copy:.2f}x",
                     f"{pooled / copy:.2f}x", f"{tb:.2f}", f"{tb / pooled:.2f}x",
                     f'{best("step"):.2f}', f'{theirs[(name, "pytorch_step")]:.2f}',
                     f'{theirs[(name, "pytorch_step")] / best("step"):.2f}x', f'{best("step_loss_and_read"):.2f}']
            print("| " + " | ".join(map(str, cells)) + " |")


if __name__ == "__main__":
    main()
