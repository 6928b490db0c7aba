#!/usr/bin/env python3
"""Exports small PyTorch encoder/decoders to `tests/data/onnx/models/torch/` as users export them,
with their inputs and the outputs of ONNX Runtime (CPU, one thread) and PyTorch.

PyTorch's stock ONNX exporter refuses `max_unpool{1,2,3}d` ("Exporting the operator
'aten::max_unpool2d' to ONNX opset version N is not supported"), so users register a custom
symbolic, as the ONNX example's `unpool_symbolic` (examples/onnx-import/model/export.py)
does: PyTorch's per-plane indices become ONNX's global ones
through a `Shape/Gather/Mul/Range/Reshape/Add` subgraph, and the output size becomes an
`output_shape` computed by `Shape/Slice/Concat`. The pools export as PyTorch's exporter writes
them: `MaxPool` with `Indices`, and a second 1x1 `MaxPool` whose indices turn the global ones
per-plane. Every pool with indices imports through burn-unpool-onnx's hook.

Usage: python tests/scripts/torch_export.py  (needs numpy, torch, onnx, onnxruntime, onnxscript)
"""

import pathlib
import shutil
import sys

import numpy as np
import onnx
import onnxruntime as ort
import torch
from onnx import numpy_helper
from torch import nn

ROOT = pathlib.Path(__file__).resolve().parents[1] / "data" / "onnx" / "models" / "torch"
OPSET = 17

# The symbolic users copy, from the ONNX example.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "examples" / "onnx-import" / "model"))
from export import register_unpool_symbolic  # noqa: E402


register_unpool_symbolic()


def sizes(t):
    """The spatial size as Python ints: the trace records them as constants (the models are
    exported for one input size)."""
    return [int(s) for s in t.shape[2:]]


class SegNet2d(nn.Module):
    """Two encoder stages (a 2x2 pool, an overlapping 3/2/1 pool), mirrored by two unpools."""

    def __init__(self):
        super().__init__()
        self.enc1 = nn.Conv2d(3, 4, 3, padding=1)
        self.enc2 = nn.Conv2d(4, 4, 3, padding=1)
        self.pool1 = nn.MaxPool2d(2, 2, return_indices=True)
        self.pool2 = nn.MaxPool2d(3, 2, padding=1, return_indices=True)
        self.unpool2 = nn.MaxUnpool2d(3, 2, padding=1)
        self.unpool1 = nn.MaxUnpool2d(2, 2)
        self.dec = nn.Conv2d(4, 2, 3, padding=1)

    def forward(self, x):
        e1 = torch.relu(self.enc1(x))
        p1, i1 = self.pool1(e1)
        e2 = torch.relu(self.enc2(p1))
        p2, i2 = self.pool2(e2)
        u2 = self.unpool2(p2, i2, output_size=sizes(e2))
        u1 = self.unpool1(u2, i1, output_size=sizes(e1))
        return self.dec(u1)


class SegNet3d(nn.Module):
    """A volume encoder/decoder: a ceil-mode 2x2x2 pool and its unpool."""

    def __init__(self):
        super().__init__()
        self.enc = nn.Conv3d(1, 3, 3, padding=1)
        self.pool = nn.MaxPool3d(2, 2, ceil_mode=True, return_indices=True)
        self.unpool = nn.MaxUnpool3d(2, 2)
        self.dec = nn.Conv3d(3, 1, 3, padding=1)

    def forward(self, x):
        e = torch.relu(self.enc(x))
        p, i = self.pool(e)
        return self.dec(self.unpool(p, i, output_size=sizes(e)))


class Unpool1d(nn.Module):
    """An overlapping 1-d pool (3/2/1) and its unpool."""

    def __init__(self):
        super().__init__()
        self.pool = nn.MaxPool1d(3, 2, padding=1, return_indices=True)
        self.unpool = nn.MaxUnpool1d(3, 2, padding=1)

    def forward(self, x):
        p, i = self.pool(x)
        return self.unpool(p, i, output_size=sizes(x))


def session(path):
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def write_tensor(path, array):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(numpy_helper.from_array(array).SerializeToString())


def export(name, model, shape, seed, dynamo=False):
    torch.manual_seed(seed)
    for p in model.parameters():
        nn.init.normal_(p, std=0.5)
    model.eval()
    x = torch.randn(shape)
    path = ROOT / f"{name}.onnx"
    if dynamo:
        # As the dynamo exporter saves by default: weights in `<name>.onnx.data` beside it.
        path.with_suffix(".onnx.data").unlink(missing_ok=True)
        torch.onnx.export(model, (x,), path, dynamo=True, opset_version=18,
                          input_names=["x"], output_names=["y"], external_data=True)
    else:
        torch.onnx.export(model, (x,), path, dynamo=False, opset_version=OPSET,
                          input_names=["x"], output_names=["y"])
    onnx.checker.check_model(str(path))
    with torch.no_grad():
        expected = model(x).numpy()
    (y,) = session(path).run(None, {"x": x.numpy()})
    assert np.allclose(y, expected, atol=1e-5), f"{name}: ONNX Runtime and PyTorch differ"
    case = ROOT / name
    shutil.rmtree(case, ignore_errors=True)
    write_tensor(case / "inputs" / "input_0.pb", x.numpy())
    write_tensor(case / "onnxruntime" / "output_0.pb", y)
    write_tensor(case / "pytorch" / "output_0.pb", expected)
    ops = sorted({n.op_type for n in onnx.load(path, load_external_data=False).graph.node})
    print(f"{name}: {shape}, max |ORT - PyTorch| = {np.abs(y - expected).max():.2e}, ops {ops}")


def main():
    ROOT.mkdir(parents=True, exist_ok=True)
    export("segnet2d_odd", SegNet2d(), (2, 3, 9, 11), 1)
    export("segnet3d_ceil", SegNet3d(), (1, 1, 5, 6, 7), 2)
    export("unpool1d_overlapping", Unpool1d(), (2, 3, 13), 3)
    # The dynamo exporter needs no symbolic: it decomposes max_unpool into ScatterND.
    export("segnet2d_dynamo", SegNet2d(), (2, 3, 9, 11), 1, dynamo=True)
    export("segnet3d_dynamo", SegNet3d(), (1, 1, 5, 6, 7), 2, dynamo=True)
    (ROOT / "VERSIONS.txt").write_text(
        f"torch {torch.__version__}\nonnx {onnx.__version__}\nonnxruntime {ort.__version__}\n"
        f"opset {OPSET}\n")


if __name__ == "__main__":
    main()
