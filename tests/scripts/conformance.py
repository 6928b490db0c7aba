#!/usr/bin/env python3
"""Records the conformance table `tests/data/conformance.json` from independent implementations.

Every case pools a seeded random input (PyTorch or the ONNX reference MaxPool), then records the
unpooled result of PyTorch's `max_unpool{1,2,3}d` (CPU, one thread: its loop runs in row-major
order, so duplicates resolve last-write-wins) or of the ONNX reference `MaxUnpool`
(`onnx.reference.ReferenceEvaluator`). Where there are no duplicate indices, PyTorch's autograd
gradient for a seeded output gradient is recorded too (with duplicates PyTorch gives every writer
the gradient, which is not the product's rule, so those gradients are checked against a reference
in the tests instead).

Usage: python tests/scripts/conformance.py  (needs numpy, torch, onnx; see tests/scripts/README.md)
"""

import json
import pathlib

import numpy as np
import onnx
import torch
import torch.nn.functional as F
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

torch.set_num_threads(1)
OUT = pathlib.Path(__file__).resolve().parents[1] / "data" / "conformance.json"

POOL = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}
UNPOOL = {1: F.max_unpool1d, 2: F.max_unpool2d, 3: F.max_unpool3d}


def rng_for(name):
    return np.random.default_rng(sum(map(ord, name)) * 7919)


def has_duplicates(indices):
    flat = indices.reshape(indices.shape[0] * indices.shape[1], -1)
    return any(len(np.unique(row)) != len(row) for row in flat)


def torch_case(name, shape, kernel, stride, padding, dilation=1, ceil_mode=False, explicit_output=False):
    """Pool with PyTorch (per-plane indices), unpool with PyTorch."""
    rng = rng_for(name)
    d = len(shape) - 2
    image = torch.tensor(rng.standard_normal(shape).astype(np.float32))
    pooled, indices = POOL[d](image, kernel, stride, padding, dilation, ceil_mode=ceil_mode, return_indices=True)
    output_size = list(shape[2:]) if explicit_output else None
    x = pooled.detach().clone().requires_grad_(True)
    # PyTorch's unpool has no dilation: its kernel only sets the default size, so pass the dilated
    # window span, whose default is the pool's input size. The product computes that from the
    # recorded (kernel, dilation) itself, so this case checks its dilation formula too.
    span = [dl * (k - 1) + 1 for k, dl in zip(as_list(kernel, d), as_list(dilation, d))]
    y = UNPOOL[d](x, indices, span, stride, padding, output_size=output_size)
    case = {
        "name": name,
        "source": "pytorch",
        "layout": "per_plane",
        "input_shape": list(x.shape),
        "x": x.detach().numpy().ravel().tolist(),
        "indices": indices.numpy().ravel().tolist(),
        "kernel": as_list(kernel, d),
        "stride": as_list(stride, d),
        "padding": [[p, p] for p in as_list(padding, d)],
        "dilation": as_list(dilation, d),
        "output_size": output_size,
        "output_shape": list(y.shape),
        "expected": y.detach().numpy().ravel().tolist(),
    }
    if not has_duplicates(indices.numpy()):
        grad = torch.tensor(rng.standard_normal(tuple(y.shape)).astype(np.float32))
        y.backward(grad)
        case["grad_output"] = grad.numpy().ravel().tolist()
        case["grad_x"] = x.grad.numpy().ravel().tolist()
    return case


def as_list(v, d):
    return list(v) if isinstance(v, (list, tuple)) else [v] * d


def onnx_unpool(x, indices, kernel, strides, pads, output_shape=None):
    d = len(kernel)
    inputs = [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape)),
        helper.make_tensor_value_info("i", TensorProto.INT64, list(indices.shape)),
    ]
    names = ["x", "i"]
    feeds = {"x": x, "i": indices}
    if output_shape is not None:
        inputs.append(helper.make_tensor_value_info("s", TensorProto.INT64, [d + 2]))
        names.append("s")
        feeds["s"] = np.array(output_shape, dtype=np.int64)
    node = helper.make_node("MaxUnpool", names, ["y"], kernel_shape=kernel, strides=strides, pads=pads)
    graph = helper.make_graph([node], "unpool", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)])
    return ReferenceEvaluator(model).run(None, feeds)[0]


def onnx_pool(image, kernel, strides, pads):
    node = helper.make_node("MaxPool", ["x"], ["y", "i"], kernel_shape=kernel, strides=strides, pads=pads)
    graph = helper.make_graph(
        [node],
        "pool",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(image.shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None), helper.make_tensor_value_info("i", TensorProto.INT64, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 12)])
    return ReferenceEvaluator(model).run(None, {"x": image})


def onnx_case(name, shape, kernel, strides, pads, output_shape=None, random_indices=False):
    """Pool with the ONNX reference (global indices), or draw arbitrary global indices; unpool with
    the ONNX reference MaxUnpool. Pooled shapes are chosen so that the inferred unpool shape is the
    pool's input shape (the ONNX reference reads the indices in the inferred shape)."""
    rng = rng_for(name)
    d = len(kernel)
    if random_indices:
        x = rng.standard_normal(shape).astype(np.float32)
        inferred = [(shape[2 + a] - 1) * strides[a] - (pads[a] + pads[d + a]) + kernel[a] for a in range(d)]
        total = shape[0] * shape[1] * int(np.prod(inferred))
        indices = rng.integers(0, total, size=shape).astype(np.int64)
    else:
        image = rng.standard_normal(shape).astype(np.float32)
        x, indices = onnx_pool(image, kernel, strides, pads)
        indices = indices.astype(np.int64)
    y = onnx_unpool(x, indices, kernel, strides, pads, output_shape)
    return {
        "name": name,
        "source": "onnx_reference",
        "layout": "global",
        "input_shape": list(x.shape),
        "x": x.ravel().tolist(),
        "indices": indices.ravel().tolist(),
        "kernel": kernel,
        "stride": strides,
        "padding": [[pads[a], pads[d + a]] for a in range(d)],
        "dilation": [1] * d,
        "onnx_output_shape": output_shape,
        "output_size": None,
        "output_shape": list(y.shape),
        "expected": y.ravel().tolist(),
    }


def pytorch_random_indices_case(name, shape, out_spatial):
    """Arbitrary per-plane indices with duplicates, unpooled by PyTorch on one thread."""
    rng = rng_for(name)
    d = len(out_spatial)
    x = torch.tensor(rng.standard_normal(shape).astype(np.float32))
    indices = torch.tensor(rng.integers(0, int(np.prod(out_spatial)), size=shape).astype(np.int64))
    kernel = [o // i for o, i in zip(out_spatial, shape[2:])]
    y = UNPOOL[d](x, indices, kernel, kernel, 0, output_size=list(out_spatial))
    return {
        "name": name,
        "source": "pytorch",
        "layout": "per_plane",
        "input_shape": list(shape),
        "x": x.numpy().ravel().tolist(),
        "indices": indices.numpy().ravel().tolist(),
        "kernel": kernel,
        "stride": kernel,
        "padding": [[0, 0]] * d,
        "dilation": [1] * d,
        "output_size": list(out_spatial),
        "output_shape": list(y.shape),
        "expected": y.numpy().ravel().tolist(),
    }


def main():
    cases = [
        torch_case("1d_k2_s2", (2, 3, 10), 2, 2, 0),
        torch_case("1d_odd_explicit_output", (2, 3, 9), 2, 2, 0, explicit_output=True),
        torch_case("1d_overlap_k3_s2_p1", (1, 2, 11), 3, 2, 1),
        torch_case("2d_k2_s2", (2, 3, 6, 8), 2, 2, 0),
        torch_case("2d_odd_explicit_output", (2, 2, 7, 9), 2, 2, 0, explicit_output=True),
        torch_case("2d_overlap_k3_s2_p1", (2, 2, 9, 11), 3, 2, 1),
        torch_case("2d_ceil_mode", (1, 2, 5, 7), 2, 2, 0, ceil_mode=True, explicit_output=True),
        torch_case("2d_dilation2", (1, 2, 8, 9), 2, 1, 0, dilation=2),
        torch_case("2d_rect_kernel", (1, 3, 6, 9), (2, 3), (2, 3), 0),
        torch_case("2d_many_planes", (2, 4, 32, 32), 2, 2, 0),
        torch_case("3d_k2_s2", (1, 2, 4, 4, 6), 2, 2, 0),
        torch_case("3d_overlap_k3_s2_p1", (1, 2, 5, 5, 5), 3, 2, 1),
        pytorch_random_indices_case("2d_arbitrary_duplicates", (2, 3, 4, 4), (8, 8)),
        pytorch_random_indices_case("1d_arbitrary_duplicates", (1, 2, 12), (24,)),
        onnx_case("2d_asymmetric_pads", (2, 2, 6, 6), [3, 3], [2, 2], [0, 1, 1, 0]),
        onnx_case("1d_asymmetric_pads", (1, 3, 9), [2], [2], [1, 0]),
        onnx_case("3d_asymmetric_pads", (1, 1, 5, 4, 5), [2, 2, 2], [2, 2, 2], [1, 0, 0, 0, 0, 1]),
        onnx_case("2d_global_arbitrary_duplicates", (2, 2, 3, 3), [2, 2], [2, 2], [0, 0, 0, 0], random_indices=True),
        onnx_case("2d_output_shape_reference_rule", (1, 2, 3, 3), [2, 2], [2, 2], [0, 0, 0, 0], output_shape=[1, 2, 7, 8], random_indices=True),
    ]
    OUT.write_text(json.dumps({"generator": "tests/scripts/conformance.py", "torch": torch.__version__, "onnx": onnx.__version__, "cases": cases}))
    print(f"wrote {len(cases)} cases to {OUT}")


if __name__ == "__main__":
    main()
