#!/usr/bin/env python3
"""Records `tests/data/pools.json`: PyTorch's `max_pool3d` with indices, for the product's 3-d pool.

Each case pools a seeded input with `torch.nn.functional.max_pool3d(..., return_indices=True)` (CPU,
one thread) and records the values, the per-plane indices and the autograd gradient of
`sum(pooled * grad_output)` for a seeded `grad_output` (PyTorch sums the gradient where overlapping
windows pick the same element). Values are recorded as float32 bit patterns, so NaNs and signed
zeros survive. Cases with ties use small integers, so the first-maximum rule decides; one case holds
NaNs, which PyTorch reports as maxima (the last NaN of a window).

Usage: python tests/scripts/pools.py  (needs numpy and torch; see tests/scripts/README.md)
"""

import json
import pathlib

import numpy as np
import torch
import torch.nn.functional as F

torch.set_num_threads(1)
OUT = pathlib.Path(__file__).resolve().parents[1] / "data" / "pools.json"


def bits(array):
    return np.ascontiguousarray(array, dtype=np.float32).view(np.uint32).ravel().tolist()


def case(name, shape, kernel, stride, padding=0, dilation=1, ceil_mode=False, values="normal"):
    rng = np.random.default_rng(sum(map(ord, name)) * 7919)
    if values == "normal":
        x = rng.standard_normal(shape).astype(np.float32)
    elif values == "ties":
        x = rng.integers(0, 3, size=shape).astype(np.float32)
    elif values == "nan":
        x = rng.standard_normal(shape).astype(np.float32)
        x.ravel()[rng.choice(x.size, size=x.size // 6, replace=False)] = np.nan
    x = torch.tensor(x, requires_grad=True)
    pooled, indices = F.max_pool3d(x, kernel, stride, padding, dilation, ceil_mode=ceil_mode, return_indices=True)
    grad_output = torch.tensor(rng.integers(-4, 5, size=pooled.shape).astype(np.float32))
    (pooled * grad_output).sum().backward()
    triple = lambda v: list(v) if isinstance(v, (list, tuple)) else [v] * 3
    return {
        "name": name,
        "shape": list(shape),
        "kernel": triple(kernel),
        "stride": triple(stride),
        "padding": triple(padding),
        "dilation": triple(dilation),
        "ceil_mode": ceil_mode,
        "x": bits(x.detach().numpy()),
        "pooled_shape": list(pooled.shape),
        "pooled": bits(pooled.detach().numpy()),
        "indices": indices.numpy().ravel().tolist(),
        "grad_output": bits(grad_output.numpy()),
        # With NaNs PyTorch's gradient is still defined (it flows to the reported NaN).
        "grad_x": bits(x.grad.numpy()),
    }


def main():
    cases = [
        case("disjoint_2x2x2", (1, 2, 4, 6, 6), 2, 2),
        case("odd_sizes_floor", (2, 3, 5, 7, 9), 2, 2),
        case("odd_sizes_ceil", (1, 2, 5, 7, 9), 2, 2, ceil_mode=True),
        case("overlapping_k3_s2_p1", (1, 2, 7, 8, 9), 3, 2, 1),
        case("anisotropic", (2, 1, 4, 9, 6), (1, 3, 2), (1, 2, 2), (0, 1, 0)),
        case("dilated", (1, 2, 7, 7, 8), 2, 1, 0, 2),
        case("dilated_padded_ceil", (1, 1, 9, 8, 7), 3, 2, 1, 2, ceil_mode=True),
        case("ties_overlapping", (1, 2, 6, 6, 6), 3, 1, 1, values="ties"),
        case("ties_disjoint", (2, 2, 4, 4, 4), 2, 2, values="ties"),
        case("nans", (1, 2, 6, 6, 6), 2, 2, values="nan"),
    ]
    OUT.write_text(json.dumps({"generator": "tests/scripts/pools.py", "torch": torch.__version__, "cases": cases}))
    print(f"wrote {len(cases)} cases to {OUT}")


if __name__ == "__main__":
    main()
