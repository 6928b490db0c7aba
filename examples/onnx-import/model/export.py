#!/usr/bin/env python3
"""Exports `encoder_decoder.onnx`, a small PyTorch encoder/decoder with two max pools and the two
unpoolings that invert them, and records one input with ONNX Runtime's output for it
(`recorded.json`): the values the Rust example must reproduce.

PyTorch's ONNX exporter refuses `max_unpool{1,2,3}d` ("Exporting the operator
'aten::max_unpool2d' to ONNX opset version 17 is not supported"), so the unpooling is registered
with a custom symbolic (`unpool_symbolic`): PyTorch's per-plane indices become ONNX's global ones,
and the output size becomes `MaxUnpool`'s `output_shape` input. Copy it to export your own models.

Usage: python examples/onnx-import/model/export.py   (needs numpy, torch, onnx, onnxruntime)
"""

import json
import pathlib

import numpy as np
import onnx
import onnxruntime as ort
import torch
from torch import nn
from torch.onnx import register_custom_op_symbolic

HERE = pathlib.Path(__file__).resolve().parent
OPSET = 17


def unpool_symbolic(g, x, indices, output_size, *_):
    """`aten::max_unpool{1,2,3}d(x, indices, output_size)` as ONNX `MaxUnpool`."""
    from torch.onnx import symbolic_helper as sh

    output_size = sh._get_const(output_size, "is", "output_size")
    x_size = sh._get_tensor_sizes(x)
    dims = len(output_size)
    # MaxUnpool needs a kernel; with an output_shape it only bounds the indices' plane, so take
    # the pool's stride as it follows from the sizes (output_shape decides the placement).
    kernel = [max(1, o // i) for o, i in zip(output_size, x_size[2:])]
    shape = g.op("Shape", x)
    batch_channels = g.op("Slice", shape, g.op("Constant", value_t=torch.tensor([0])),
                          g.op("Constant", value_t=torch.tensor([2])))
    # N * C as a scalar (burn-onnx takes ReduceProd of tensors only, not of a shape).
    axis = lambda i: g.op("Gather", shape, g.op("Constant", value_t=torch.tensor(i)), axis_i=0)
    planes = g.op("Mul", axis(0), axis(1))
    plane_len = int(np.prod(output_size))
    offsets = g.op("Mul", g.op("Range", g.op("Constant", value_t=torch.tensor(0)), planes,
                               g.op("Constant", value_t=torch.tensor(1))),
                   g.op("Constant", value_t=torch.tensor(plane_len)))
    offsets_shape = g.op("Concat", batch_channels,
                         g.op("Constant", value_t=torch.tensor([1] * dims)), axis_i=0)
    global_indices = g.op("Add", indices, g.op("Reshape", offsets, offsets_shape))
    output_shape = g.op("Concat", batch_channels,
                        g.op("Constant", value_t=torch.tensor(output_size)), axis_i=0)
    return g.op("MaxUnpool", x, global_indices, output_shape, kernel_shape_i=kernel,
                strides_i=kernel)


def register_unpool_symbolic():
    for d in (1, 2, 3):
        register_custom_op_symbolic(f"aten::max_unpool{d}d", unpool_symbolic, OPSET)


class EncoderDecoder(nn.Module):
    """SegNet in miniature: two conv + 2x2 pool stages, mirrored by two unpool + conv stages."""

    def __init__(self):
        super().__init__()
        self.enc1 = nn.Conv2d(3, 8, 3, padding=1)
        self.enc2 = nn.Conv2d(8, 8, 3, padding=1)
        self.pool = nn.MaxPool2d(2, 2, return_indices=True)
        self.unpool = nn.MaxUnpool2d(2, 2)
        self.dec2 = nn.Conv2d(8, 8, 3, padding=1)
        self.dec1 = nn.Conv2d(8, 2, 3, padding=1)

    def forward(self, x):
        e1 = torch.relu(self.enc1(x))
        p1, i1 = self.pool(e1)
        e2 = torch.relu(self.enc2(p1))
        p2, i2 = self.pool(e2)
        u2 = self.unpool(p2, i2, output_size=[int(s) for s in e2.shape[2:]])
        d2 = torch.relu(self.dec2(u2))
        u1 = self.unpool(d2, i1, output_size=[int(s) for s in e1.shape[2:]])
        return self.dec1(u1)


def main():
    register_unpool_symbolic()
    torch.manual_seed(7)
    model = EncoderDecoder().eval()
    for p in model.parameters():  # larger than PyTorch's default init: outputs of order 1
        nn.init.normal_(p, std=0.3)
    x = torch.randn(1, 3, 16, 20)
    path = HERE / "encoder_decoder.onnx"
    torch.onnx.export(model, (x,), path, dynamo=False, opset_version=OPSET,
                      input_names=["image"], output_names=["scores"])
    onnx.checker.check_model(str(path))

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    (scores,) = session.run(None, {"image": x.numpy()})
    with torch.no_grad():
        assert np.allclose(scores, model(x).numpy(), atol=1e-5), "ONNX Runtime and PyTorch differ"

    recorded = {
        "producer": f"torch {torch.__version__}, onnx {onnx.__version__}, "
                    f"onnxruntime {ort.__version__} (CPU, one thread), opset {OPSET}",
        "input_shape": list(x.shape),
        "input": x.numpy().ravel().tolist(),
        "output_shape": list(scores.shape),
        "onnxruntime_output": scores.ravel().tolist(),
    }
    (HERE / "recorded.json").write_text(json.dumps(recorded) + "\n")
    ops = sorted({n.op_type for n in onnx.load(path).graph.node})
    print(f"{path.name}: input {list(x.shape)} -> output {list(scores.shape)}, ops {ops}")


if __name__ == "__main__":
    main()
