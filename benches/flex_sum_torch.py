#!/usr/bin/env python3
"""PyTorch's counterpart of `crates/burn-unpool/examples/flex_sum.rs`: the same shapes
(`[N, 64, 180, 240]` f32, 11, 44 and 177 MB), the same timings and the same Markdown table.

For each shape, after `--warmup` untimed rounds, each of `--runs` rounds times:

- **sum**: `x.sum().item()` (the forward, read back);
- **backward**: `loss.backward()` of `loss = x.sum()` with `x` a leaf that requires grad, then
  `x.grad` and one of its values read back (the forward runs before the timer starts).
  Autograd's backward of `sum()` expands the scalar gradient to `x`'s shape as a view (stride 0,
  nothing written); storing it as the leaf's `.grad` writes it once at `x`'s shape;
- **backward of (2x).sum()**: the same with `loss = (x * 2).sum()`, where the expanded gradient
  of `sum()` feeds the multiplication's backward, which writes `x`'s gradient.

Prints medians, with GB/s of the tensor read (sum) or of the gradient written (backward).

    ~/torchenv/bin/python benches/flex_sum_torch.py [--runs 20] [--warmup 3] [--batches 1,4,16]
        [--threads N]   (default: the machine's cores, os.cpu_count())
"""

import argparse
import os
import statistics
import time

import torch


def time_backward(x, scale):
    """The backward alone of `loss = x.sum()` (`scale` 1) or `(x * scale).sum()`, `x.grad` and one
    of its values read back, in ms."""
    loss = x.sum() if scale == 1.0 else (x * scale).sum()
    loss.item()
    start = time.perf_counter()
    loss.backward()
    first = x.grad[0, 0, 0, 0].item()
    elapsed = (time.perf_counter() - start) * 1e3
    assert first == scale
    x.grad = None
    return elapsed


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--batches", default="1,4,16")
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    print(f"pytorch {torch.__version__}, CPU ({torch.backends.cpu.get_cpu_capability()}), "
          f"{torch.get_num_threads()} threads, f32, medians of {args.runs} runs after "
          f"{args.warmup} warm-up runs; sum: `x.sum().item()`, backward: `loss.backward()` and "
          f"`x.grad` of `loss = x.sum()` or `loss = (x * 2.0).sum()` (forward not included); GB/s "
          f"of the tensor read (sum) or the gradient written (backward)\n")
    print("| shape | MB | device | sum ms | sum GB/s | backward ms | backward GB/s "
          "| backward of (2x).sum() ms |")
    print("|---|---|---|---|---|---|---|---|")
    for batch in (int(b) for b in args.batches.split(",")):
        shape = [batch, 64, 180, 240]
        n = batch * 64 * 180 * 240
        nbytes = n * 4
        # The values of the Rust program: (i % 1000) * 1e-3.
        x = ((torch.arange(n, dtype=torch.int64) % 1000).to(torch.float32) * 1e-3).reshape(shape)
        x.requires_grad_(True)
        sums, backwards, chains = [], [], []
        for round_ in range(args.warmup + args.runs):
            with torch.no_grad():
                start = time.perf_counter()
                total = x.sum().item()
                sum_ms = (time.perf_counter() - start) * 1e3
            assert total == total
            backward_ms = time_backward(x, 1.0)
            chain_ms = time_backward(x, 2.0)
            if round_ >= args.warmup:
                sums.append(sum_ms)
                backwards.append(backward_ms)
                chains.append(chain_ms)

        s, b = statistics.median(sums), statistics.median(backwards)
        c = statistics.median(chains)
        gbs = lambda ms: nbytes / ms / 1e6  # noqa: E731
        print(f"| {shape} | {nbytes / 1e6:.1f} | PyTorch | {s:.2f} | {gbs(s):.1f} | {b:.2f} | "
              f"{gbs(b):.1f} | {c:.2f} |")


if __name__ == "__main__":
    main()
