#!/usr/bin/env python3
"""Records `tests/data/pools.json`: PyTorch's max pools with indices, for the product's pools.

Each case pools a seeded input with `torch.nn.functional.max_pool{1,2,3}d(..., return_indices=True)`
(CPU, one thread) and records the values, the per-plane indices and the autograd gradient of
`sum(pooled * grad_output)` for a seeded `grad_output` (PyTorch sums the gradient where overlapping
windows pick the same element). Values are recorded as float32 bit patterns, so NaNs, infinities
and signed zeros survive. Cases with ties use small integers, so the first-maximum rule decides;
NaN cases hold NaNs, which PyTorch reports as maxima (the last NaN of a window); `-inf` cases hold
whole windows of `-inf`, whose index PyTorch puts on the window's first element inside the input;
padding-heavy cases use PyTorch's largest padding (half the kernel), whose edge windows are mostly
padding. PyTorch has no asymmetric padding: those cases are checked against a reference in the
tests.

Usage: python tests/scripts/pools.py  (needs numpy and torch; see tests/scripts/README.md)
"""

import json
import pathlib

import numpy as np
import torch
import torch.nn.functional as F

torch.set_num_threads(1)
OUT = pathlib.Path(__file__).resolve().parents[1] / "data" / "pools.json"
POOLS = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}


def bits(array):
    return np.ascontiguousarray(array, dtype=np.float32).view(np.uint32).ravel().tolist()


def values_of(kind, shape, rng):
    if isinstance(kind, list):
        return np.array(kind, dtype=np.float32).reshape(shape)
    if kind == "normal":
        return rng.standard_normal(shape).astype(np.float32)
    if kind == "ties":
        return rng.integers(0, 3, size=shape).astype(np.float32)
    if kind == "nan":
        x = rng.standard_normal(shape).astype(np.float32)
        x.ravel()[rng.choice(x.size, size=x.size // 6, replace=False)] = np.nan
        return x
    if kind == "neg_inf":
        # Runs of -inf along the last axis, long enough to fill whole windows; some NaNs and
        # +inf beside them.
        x = rng.standard_normal(shape).astype(np.float32)
        flat = x.reshape(-1, shape[-1])
        for row in flat:
            start = rng.integers(0, shape[-1])
            row[start : start + rng.integers(2, 6)] = -np.inf
        flat[rng.random(flat.shape) < 0.02] = np.nan
        flat[rng.random(flat.shape) < 0.02] = np.inf
        return x
    if kind == "all_neg_inf":
        return np.full(shape, -np.inf, dtype=np.float32)
    if kind == "zeros_subnormals":
        # Signed zeros tie (the first wins); subnormals compare by value.
        tiny = np.float32(1e-45)
        palette = np.array([-0.0, 0.0, tiny, -tiny, 1e-39, 2 * tiny, -0.0, 0.0], dtype=np.float32)
        return palette[rng.integers(0, len(palette), size=shape)]
    raise ValueError(kind)


def case(
    name, shape, kernel, stride, padding=0, dilation=1, ceil_mode=False, values="normal",
    negative_zero_grad=False,
):
    dims = len(shape) - 2
    rng = np.random.default_rng(sum(map(ord, name)) * 7919)
    x = torch.tensor(values_of(values, shape, rng), requires_grad=True)
    pooled, indices = POOLS[dims](
        x, kernel, stride, padding, dilation, ceil_mode=ceil_mode, return_indices=True
    )
    grad_output = rng.integers(-4, 5, size=pooled.shape).astype(np.float32)
    if negative_zero_grad:
        # PyTorch's CPU gradient adds into zeros: an upstream -0.0 comes back as +0.0.
        grad_output[grad_output == 0] = -0.0
    grad_output = torch.tensor(grad_output)
    (pooled * grad_output).sum().backward()
    per_axis = lambda v: list(v) if isinstance(v, (list, tuple)) else [v] * dims
    return {
        "name": name,
        "shape": list(shape),
        "kernel": per_axis(kernel),
        "stride": per_axis(stride),
        "padding": per_axis(padding),
        "dilation": per_axis(dilation),
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
    inf = float("inf")
    cases = [
        # 3-d
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
        case("neg_inf_3d_padded", (1, 2, 5, 6, 7), 3, 2, 1, values="neg_inf"),
        # 1-d
        case("1d_neg_inf_window", (1, 1, 4), 2, 2, values=[5, 1, -inf, -inf]),
        case("1d_all_neg_inf_padded", (1, 2, 5), 3, 1, 1, values="all_neg_inf"),
        case("1d_neg_inf_overlapping", (2, 3, 17), 3, 2, 1, values="neg_inf"),
        case("1d_padding_heavy", (1, 2, 6), 4, 1, 2),
        case("1d_dilated_padded_ceil", (2, 2, 13), 3, 2, 1, 2, ceil_mode=True),
        case("1d_ties", (1, 3, 12), 3, 1, 1, values="ties"),
        case("1d_nans", (1, 2, 15), 3, 2, values="nan"),
        # 2-d
        case("2d_disjoint_segnet_like", (2, 3, 8, 12), 2, 2),
        case("2d_odd_ceil", (1, 2, 7, 9), 2, 2, ceil_mode=True),
        case("2d_overlapping_k3_s2_p1", (1, 2, 11, 13), 3, 2, 1),
        case("2d_neg_inf_disjoint", (2, 2, 6, 8), 2, 2, values="neg_inf"),
        case("2d_neg_inf_overlapping", (1, 3, 9, 10), 3, 2, 1, values="neg_inf"),
        case("2d_all_neg_inf_padded", (1, 1, 4, 5), 3, 1, 1, values="all_neg_inf"),
        case("2d_padding_heavy", (1, 2, 5, 6), (4, 2), (1, 3), (2, 1)),
        case("2d_dilated_padded_ceil", (1, 2, 10, 11), 3, 2, 1, 2, ceil_mode=True),
        case("2d_ties_overlapping", (1, 2, 7, 7), 3, 1, 1, values="ties"),
        case("2d_ties_disjoint", (2, 2, 6, 6), 2, 2, values="ties"),
        case("2d_nans", (1, 2, 8, 8), 3, 2, 1, values="nan"),
        # ceil_mode drops a last window that would start in the end padding: 5 inputs, kernel 2,
        # stride 2, padding 1 give 3 windows, not 4 (and 7 give 4, not 5).
        case("1d_ceil_drops_window_in_padding", (1, 2, 5), 2, 2, 1, ceil_mode=True),
        case("2d_ceil_drops_window_in_padding", (1, 2, 5, 7), 2, 2, 1, ceil_mode=True),
        case("3d_ceil_drops_window_in_padding", (1, 1, 5, 3, 7), (2, 3, 2), (2, 1, 2), 1,
             ceil_mode=True),
        # Signed zeros and subnormals in the values, -0.0 in the upstream gradient.
        case("2d_zeros_subnormals_disjoint", (1, 2, 6, 8), 2, 2, values="zeros_subnormals",
             negative_zero_grad=True),
        case("2d_zeros_subnormals_overlapping", (1, 2, 7, 7), 3, 2, 1, values="zeros_subnormals",
             negative_zero_grad=True),
        case("1d_zeros_subnormals_disjoint", (2, 1, 12), 3, 3, values="zeros_subnormals",
             negative_zero_grad=True),
    ]
    OUT.write_text(
        json.dumps({"generator": "tests/scripts/pools.py", "torch": torch.__version__, "cases": cases})
    )
    print(f"wrote {len(cases)} cases to {OUT}")


if __name__ == "__main__":
    main()
