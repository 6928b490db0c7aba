#!/usr/bin/env python3
"""Exports `tests/data/onnx/models/torch/pool_edges.onnx`: one PyTorch `MaxPool2d` with indices
that meets the edges (a window of -inf, a window holding NaN, windows mostly in the padding,
ceil mode), followed by the `MaxUnpool2d` that inverts it, exported with the legacy exporter and
the custom symbolic users register (examples/onnx-import/model/export.py). Records the input and
PyTorch's three outputs (pooled values, per-plane indices, unpooled values): what the imported
model must give on every device.

ONNX Runtime's outputs are recorded beside them for reference only: its pool skips NaN.

Usage: python tests/scripts/torch_pool_edges.py  (needs numpy, torch, onnx, onnxruntime)
"""

import pathlib
import sys

import numpy as np
import onnx
import torch
from torch import nn

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from torch_export import ROOT, OPSET, session, write_tensor  # noqa: E402  (registers the symbolic)


class PoolEdges(nn.Module):
    """A 3x3, stride-2, padding-1, ceil-mode pool and its unpool to the input's size."""

    def __init__(self):
        super().__init__()
        self.pool = nn.MaxPool2d(3, 2, padding=1, ceil_mode=True, return_indices=True)
        self.unpool = nn.MaxUnpool2d(3, 2, padding=1)

    def forward(self, x):
        y, indices = self.pool(x)
        return y, indices, self.unpool(y, indices, output_size=[int(s) for s in x.shape[2:]])


def edge_input():
    """[1, 3, 7, 8]: on a 7 x 8 plane, ceil mode adds a last row and column of windows that hold
    at most two input rows or columns, the rest padding."""
    torch.manual_seed(11)
    x = torch.randn(1, 3, 7, 8)
    # Plane 0: the first window (rows -1..1, columns -1..1) sees -inf only.
    x[0, 0, 0:2, 0:2] = float("-inf")
    # Plane 1: NaN among finite values, and a window of -inf in the bottom-right corner, where the
    # window holds one input row and column and the rest is padding.
    x[0, 1, 3, 4] = float("nan")
    x[0, 1, 6, 7] = float("-inf")
    # Plane 2: ties (the first maximum of a window wins) and a NaN on the last column.
    x[0, 2, 2:5, 2:5] = 1.5
    x[0, 2, 1, 7] = float("nan")
    return x


def main():
    model = PoolEdges().eval()
    x = edge_input()
    path = ROOT / "pool_edges.onnx"
    torch.onnx.export(model, (x,), path, dynamo=False, opset_version=OPSET,
                      input_names=["x"], output_names=["y", "indices", "unpooled"])
    onnx.checker.check_model(str(path))
    with torch.no_grad():
        expected = [t.numpy() for t in model(x)]
    ort = session(path).run(None, {"x": x.numpy()})
    case = ROOT / "pool_edges"
    write_tensor(case / "inputs" / "input_0.pb", x.numpy())
    for i, array in enumerate(expected):
        write_tensor(case / "pytorch" / f"output_{i}.pb", array)
    for i, array in enumerate(ort):
        write_tensor(case / "onnxruntime" / f"output_{i}.pb", array)
    same = [np.array_equal(a, b, equal_nan=True) for a, b in zip(expected, ort)]
    print(f"pool_edges: {list(x.shape)} -> {[list(a.shape) for a in expected]}; "
          f"ONNX Runtime equal to PyTorch per output: {same} (torch {torch.__version__})")


if __name__ == "__main__":
    main()
