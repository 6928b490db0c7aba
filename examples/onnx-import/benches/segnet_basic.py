#!/usr/bin/env python3
"""SegNet-Basic imported from ONNX, against the same network built from burn-unpool's modules and
against ONNX Runtime on the same files: forward time and peak memory, on Flex and NdArray.

1. Exports, from PyTorch, SegNet-Basic (4 encoder stages of a 7x7 convolution, batch norm and
   ReLU, each pooled 2x2 with ceil mode keeping indices; 4 decoder stages unpooling with them; a
   1x1 classifier over 11 classes; batch norm folded into the convolutions by the exporter) and its
   skeleton (the 4 pools and 4 unpools alone, on SegNet's first activation [N, 64, H, W]: the
   share of pools and unpools), with the legacy exporter and the custom `MaxUnpool` symbolic
   (examples/onnx-import/model/export.py), and with the dynamo exporter, at each batch size.
2. Builds `cargo bench -p onnx-import --bench segnet_basic` with ONNX_IMPORT_BENCH_MODELS pointing
   at them: build.rs imports each file twice, with PyTorch's index arithmetic recognised (the
   default) and node by node (`ModelGen::recognise_index_arithmetic(false)`).
3. Runs every Burn variant in its own process (peak memory is per process) and ONNX Runtime (CPU,
   as many threads as Burn's pool), and prints one table.

Usage: python examples/onnx-import/benches/segnet_basic.py [--size 360x480] [--runs 3]
           [--nets segnet_basic,skeleton] [--out target/segnet-basic-onnx] [--skip-export]
(batches 1 and 4, the ones `build.rs` imports).
Needs numpy, torch, onnx, onnxruntime and onnxscript (the dynamo exporter).
"""

import argparse
import json
import os
import pathlib
import platform
import subprocess
import sys

import numpy as np
import onnxruntime as ort
import torch
from torch import nn

ROOT = pathlib.Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "examples" / "onnx-import" / "model"))
sys.path.insert(0, str(ROOT / "examples" / "segnet" / "benches"))
from export import OPSET, register_unpool_symbolic  # noqa: E402
# The network of the SegNet training-step peer, whose output sizes are Python ints.
from segnet_basic_torch import SegNetBasic  # noqa: E402


class Skeleton(nn.Module):
    """SegNet-Basic's pools and unpools alone, on its first activation."""

    def __init__(self, stages=4):
        super().__init__()
        self.stages = stages
        self.pool = nn.MaxPool2d(2, 2, ceil_mode=True, return_indices=True)
        self.unpool = nn.MaxUnpool2d(2, 2)

    def forward(self, x):
        trail = []
        for _ in range(self.stages):
            size = [int(s) for s in x.shape[2:]]
            x, indices = self.pool(x)
            trail.append((indices, size))
        for indices, size in reversed(trail):
            x = self.unpool(x, indices, output_size=size)
        return x


def inputs(net, batch, height, width):
    channels = 3 if net == "segnet_basic" else 64
    return torch.randn(batch, channels, height, width, generator=torch.Generator().manual_seed(1))


def export(out, batches, height, width):
    register_unpool_symbolic()
    out.mkdir(parents=True, exist_ok=True)
    for net in ("segnet_basic", "skeleton"):
        for batch in batches:
            torch.manual_seed(0)
            model = (SegNetBasic(64, 11) if net == "segnet_basic" else Skeleton()).eval()
            x = inputs(net, batch, height, width)
            for exporter in ("legacy", "dynamo"):
                path = out / f"{net}_{exporter}_b{batch}.onnx"
                if exporter == "legacy":
                    torch.onnx.export(model, (x,), path, dynamo=False, opset_version=OPSET,
                                      input_names=["x"], output_names=["y"])
                else:
                    path.with_suffix(".onnx.data").unlink(missing_ok=True)
                    torch.onnx.export(model, (x,), path, dynamo=True, opset_version=18,
                                      input_names=["x"], output_names=["y"], external_data=True)
                print(f"exported {path.name}", file=sys.stderr)


def burn(out, variant, net, device, batch, size, runs):
    command = [
        "cargo", "bench", "-q", "-p", "onnx-import", "--bench", "segnet_basic", "--",
        "--variant", variant, "--net", net.replace("_", "-"), "--device", device, "--batch", str(batch),
        "--size", size, "--runs", str(runs),
    ]
    env = dict(os.environ, ONNX_IMPORT_BENCH_MODELS=str(out.resolve()))
    result = subprocess.run(command, cwd=ROOT, env=env, check=True, capture_output=True, text=True)
    return json.loads(result.stdout.strip().splitlines()[-1])


def onnxruntime(path, x, runs, threads):
    """Median forward time and the growth of the process's peak RSS over the first run (a
    process of its own per file)."""
    script = f"""
import json, resource, statistics, time
import numpy as np, onnxruntime as ort
options = ort.SessionOptions()
options.intra_op_num_threads = {threads}
session = ort.InferenceSession({str(path)!r}, options, providers=["CPUExecutionProvider"])
x = np.load({str(x)!r})
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
session.run(None, {{"x": x}})
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
times = []
for _ in range({runs}):
    start = time.perf_counter()
    session.run(None, {{"x": x}})
    times.append(time.perf_counter() - start)
print(json.dumps({{"median_ms": statistics.median(times) * 1e3, "peak_bytes": peak * 1024}}))
"""
    result = subprocess.run([sys.executable, "-c", script], check=True, capture_output=True,
                            text=True)
    return json.loads(result.stdout)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", default="360x480")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--out", default=str(ROOT / "target" / "segnet-basic-onnx"))
    parser.add_argument("--nets", default="segnet_basic,skeleton",
                        help="which of segnet_basic and skeleton to time")
    parser.add_argument("--skip-export", action="store_true",
                        help="reuse the files of an earlier export (same batches and size)")
    args = parser.parse_args()
    batches = [1, 4]
    height, width = map(int, args.size.split("x"))
    out = pathlib.Path(args.out)
    if not args.skip_export:
        export(out, batches, height, width)
    threads = os.cpu_count()
    print(f"# {platform.processor() or platform.machine()}, {threads} cores; torch "
          f"{torch.__version__}, onnxruntime {ort.__version__} ({threads} threads); "
          f"SegNet-Basic {height}x{width}; medians of {args.runs} forwards after one warm-up")
    print("| net | batch | device | variant | forward ms | peak MB | vs modules (time, memory) |")
    print("|---|---|---|---|---|---|---|")
    for net in args.nets.split(","):
        for batch in batches:
            x_path = out / f"{net}_b{batch}_input.npy"
            np.save(x_path, inputs(net, batch, height, width).numpy())
            for device in ("flex", "ndarray"):
                rows = {}
                for variant in ("modules", "legacy", "dynamo", "legacy-node-by-node",
                                "dynamo-node-by-node"):
                    rows[variant] = burn(out, variant, net, device, batch, args.size, args.runs)
                base = rows["modules"]
                for variant, r in rows.items():
                    ratio = (f"{r['median_ms'] / base['median_ms']:.2f}x, "
                             f"{r['peak_bytes'] / base['peak_bytes']:.2f}x")
                    print(f"| {net} | {batch} | {device} | {variant} | {r['median_ms']:.1f} | "
                          f"{r['peak_bytes'] / 1e6:.0f} | {ratio} |", flush=True)
            for exporter in ("legacy", "dynamo"):
                r = onnxruntime(out / f"{net}_{exporter}_b{batch}.onnx", x_path, args.runs, threads)
                print(f"| {net} | {batch} | ONNX Runtime CPU | {exporter} file | "
                      f"{r['median_ms']:.1f} | {r['peak_bytes'] / 1e6:.0f} (RSS) | - |", flush=True)


if __name__ == "__main__":
    main()
