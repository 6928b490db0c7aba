#!/usr/bin/env python3
"""Records the ONNX import cases under `tests/data/onnx/`.

- `node/<test>/`: the official ONNX backend node tests for MaxUnpool and MaxPool (all 21),
  copied as the `onnx` package ships them (found with
  `onnx.backend.test.loader.load_model_tests(kind="node")`).
- `models/<case>.onnx` with `models/<case>/inputs/input_<i>.pb` and the outputs recorded from
  ONNX Runtime (`onnxruntime/output_<i>.pb`) and from the ONNX reference implementation
  (`reference/output_<i>.pb`, or `reference/error.txt` when the reference rejects the model).
  All values are small integers, and the script checks that every
  intermediate is an exact integer below 2^24 and that no pooling window has a tied positive
  maximum: so any correct implementation must reproduce the outputs bit for bit, whatever order it
  sums in.
- `malformed/<case>.onnx`: one MaxUnpool node with one defect each (or the MaxPool feeding it),
  for the build-time errors.

Usage: python tests/scripts/onnx_models.py  (needs numpy, onnx, onnxruntime; see README.md)
"""

import pathlib
import shutil

import ml_dtypes
import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
from onnx.backend.test.loader import load_model_tests
from onnx.reference import ReferenceEvaluator

ROOT = pathlib.Path(__file__).resolve().parents[1] / "data" / "onnx"
# Every official backend node test of MaxUnpool and MaxPool (GlobalMaxPool is another op).
NODE_TESTS = sorted(
    case.name
    for case in load_model_tests(kind="node")
    if case.name.startswith(("test_maxunpool_", "test_maxpool_"))
)
F32 = TensorProto.FLOAT
BF16 = TensorProto.BFLOAT16
I64 = TensorProto.INT64


def copy_node_tests():
    found = {case.name: case for case in load_model_tests(kind="node")}
    for name in NODE_TESTS:
        source = pathlib.Path(found[name].model_dir)
        target = ROOT / "node" / name
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        shutil.copy(source / "model.onnx", target / "model.onnx")
        shutil.copytree(source / "test_data_set_0", target / "test_data_set_0")


def conv(name, x, y, c_in, c_out, rng):
    """A 3x3 'same' Conv with small integer weights and bias, as initializers."""
    w = rng.integers(-1, 2, size=(c_out, c_in, 3, 3)).astype(np.float32)
    b = rng.integers(-3, 4, size=(c_out,)).astype(np.float32)
    inits = [numpy_helper.from_array(w, f"{name}_w"), numpy_helper.from_array(b, f"{name}_b")]
    node = helper.make_node(
        "Conv", [x, f"{name}_w", f"{name}_b"], [y], name=name, kernel_shape=[3, 3], pads=[1, 1, 1, 1]
    )
    return node, inits


def segnet(shape, opset, odd_output_shape, seed):
    """Two MaxPool-with-indices stages, convs, and the matching MaxUnpool stages (ReLU after the
    pools, so no pool sees the ties a ReLU makes).

    With `odd_output_shape`, the unpools take constant `output_shape` initializers (the input's
    odd size needs them); otherwise the first unpool has none and the last takes its
    `output_shape` from a `Shape` node at run time.
    """
    rng = np.random.default_rng(seed)
    n, c, h, w = shape
    nodes, inits = [], []

    def add(pair):
        nodes.append(pair[0])
        inits.extend(pair[1])

    add(conv("enc1", "x", "e1", c, 4, rng))
    nodes.append(helper.make_node("MaxPool", ["e1"], ["p1", "i1"], name="pool1",
                                  kernel_shape=[2, 2], strides=[2, 2]))
    add(conv("enc2", "p1", "e2", 4, 6, rng))
    nodes.append(helper.make_node("MaxPool", ["e2"], ["p2", "i2"], name="pool2",
                                  kernel_shape=[2, 2], strides=[2, 2]))
    nodes.append(helper.make_node("Relu", ["p2"], ["r2"], name="relu2"))
    add(conv("mid", "r2", "m", 6, 6, rng))
    h1, w1 = h // 2, w // 2
    if odd_output_shape:
        inits.append(numpy_helper.from_array(np.array([n, 6, h1, w1], np.int64), "shape2"))
        inits.append(numpy_helper.from_array(np.array([n, 4, h, w], np.int64), "shape1"))
        unpool2_inputs, unpool1_inputs = ["m", "i2", "shape2"], ["d2", "i1", "shape1"]
    else:
        nodes.append(helper.make_node("Shape", ["e1"], ["shape1"], name="shape1"))
        unpool2_inputs, unpool1_inputs = ["m", "i2"], ["d2", "i1", "shape1"]
    nodes.append(helper.make_node("MaxUnpool", unpool2_inputs, ["u2"], name="unpool2",
                                  kernel_shape=[2, 2], strides=[2, 2]))
    add(conv("dec2", "u2", "d2", 6, 4, rng))
    nodes.append(helper.make_node("MaxUnpool", unpool1_inputs, ["u1"], name="unpool1",
                                  kernel_shape=[2, 2], strides=[2, 2]))
    add(conv("dec1", "u1", "y", 4, 3, rng))
    graph = helper.make_graph(
        nodes, "segnet",
        [helper.make_tensor_value_info("x", F32, list(shape))],
        [helper.make_tensor_value_info("y", F32, [n, 3, h, w])],
        initializer=inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    x = rng.integers(-512, 513, size=shape).astype(np.float32)
    return model, [x]


def unpool_case(dims, opset, kernel, strides, pads, seed, values=F32):
    """One MaxPool with indices (ONNX reference) feeding a lone MaxUnpool whose X and I are
    graph inputs, for the ranks, opsets and value types burn-onnx's MaxPool does not cover.

    The values are a permutation of 0..N (N = 252 at most): exact in bfloat16 too."""
    rng = np.random.default_rng(seed)
    spatial = [7, 6, 5][:dims]
    shape = [2, 3] + spatial
    x_full = rng.permutation(np.prod(shape)).reshape(shape).astype(np.float32)
    pool = helper.make_model(
        helper.make_graph(
            [helper.make_node("MaxPool", ["x"], ["p", "i"], kernel_shape=kernel, strides=strides,
                              pads=pads)],
            "pool", [helper.make_tensor_value_info("x", F32, shape)],
            [helper.make_tensor_value_info("p", F32, None),
             helper.make_tensor_value_info("i", I64, None)]),
        opset_imports=[helper.make_opsetid("", max(opset, 12))])
    pooled, indices = ReferenceEvaluator(pool).run(None, {"x": x_full})
    if values == BF16:
        pooled = pooled.astype(ml_dtypes.bfloat16)
    node = helper.make_node("MaxUnpool", ["x", "i"], ["y"], name="unpool", kernel_shape=kernel,
                            strides=strides, pads=pads)
    graph = helper.make_graph(
        [node], f"unpool{dims}d",
        [helper.make_tensor_value_info("x", values, list(pooled.shape)),
         helper.make_tensor_value_info("i", I64, list(indices.shape))],
        [helper.make_tensor_value_info("y", values, shape)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model, [pooled, indices]


def check_exact(model, inputs):
    """Every intermediate of `model` is an exact integer below 2^24 in f32, and no pooling
    window has a tied maximum, so the outputs depend neither on summation order nor on how an
    implementation breaks ties (the decoder's values land where the indices point), and a small
    change of the weights moves no index (a training step stays on one smooth piece)."""
    names = [o for node in model.graph.node for o in node.output]
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    del probe.graph.output[:]
    probe.graph.output.extend(helper.make_empty_tensor_value_info(n) for n in names)
    values = session(probe).run(None, dict(zip(feed_names(model), inputs)))
    for name, value in zip(names, values):
        if value.dtype == np.float32:
            if not (np.all(np.abs(value) < 2**24) and np.all(value == np.round(value))):
                return False
    for node in model.graph.node:
        if node.op_type == "MaxPool":
            x = values[names.index(node.input[0])] if node.input[0] in names else inputs[0]
            n, c, h, w = x.shape
            windows = x[:, :, : h // 2 * 2, : w // 2 * 2].reshape(n, c, h // 2, 2, w // 2, 2)
            windows = windows.transpose(0, 1, 2, 4, 3, 5).reshape(-1, 4)
            top = windows.max(axis=1)
            ties = (windows == top[:, None]).sum(axis=1) > 1
            if np.any(ties):
                return False
    return True


def session(model):
    """An ONNX Runtime CPU session, one thread."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), options,
                                providers=["CPUExecutionProvider"])


def feed_names(model):
    initializers = {i.name for i in model.graph.initializer}
    return [i.name for i in model.graph.input if i.name not in initializers]


def write_tensor(path, array):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(numpy_helper.from_array(array).SerializeToString())


def exact_segnet(shape, opset, odd_output_shape, seed):
    """The first seed from `seed` on whose model and input `check_exact` holds."""
    while True:
        model, inputs = segnet(shape, opset, odd_output_shape, seed)
        if check_exact(model, inputs):
            print(f"segnet {shape}: seed {seed}")
            return model, inputs
        seed += 1


def record(name, model, inputs):
    onnx.checker.check_model(model)
    models = ROOT / "models"
    models.mkdir(parents=True, exist_ok=True)
    onnx.save(model, models / f"{name}.onnx")
    case = models / name
    shutil.rmtree(case, ignore_errors=True)
    for i, array in enumerate(inputs):
        write_tensor(case / "inputs" / f"input_{i}.pb", array)
    feeds = dict(zip(feed_names(model), inputs))
    runs = {
        "onnxruntime": lambda: session(model).run(None, feeds),
        "reference": lambda: ReferenceEvaluator(model).run(None, feeds),
    }
    for peer, run in runs.items():
        try:
            outputs = run()
        except Exception as error:  # the reference rule cannot place these indices, or ORT
            (case / peer).mkdir(parents=True)  # has no kernel for the type
            (case / peer / "error.txt").write_text(f"{type(error).__name__}: {error}\n")
        else:
            for i, array in enumerate(outputs):
                write_tensor(case / peer / f"output_{i}.pb", array)


def pool_case(shape, dtype, seed, **attributes):
    """One MaxPool with its Indices output, X a graph input: the pools burn-onnx cannot import
    (3-d, integer values), which burn-unpool-onnx's hook imports. Float values are a permutation
    (no ties); integer ones are small, so ties decide (the first maximum in scan order)."""
    rng = np.random.default_rng(seed)
    numpy_type = helper.tensor_dtype_to_np_dtype(dtype)
    if dtype == F32:
        x = rng.permutation(np.prod(shape)).reshape(shape).astype(numpy_type)
    else:
        x = rng.integers(-4, 5, size=shape).astype(numpy_type)
    node = helper.make_node("MaxPool", ["x"], ["y", "i"], name="pool", **attributes)

    def model(outputs):
        graph = helper.make_graph(
            [node], "pool", [helper.make_tensor_value_info("x", dtype, list(shape))], outputs)
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 12)])

    # The outputs' shapes, from ONNX Runtime, to declare them (the reference's SAME_LOWER output
    # is floor(I / stride), not the ceil(I / stride) of the operator's definition).
    untyped = model([helper.make_empty_tensor_value_info(n) for n in ("y", "i")])
    y, _ = session(untyped).run(None, {"x": x})
    typed = [helper.make_tensor_value_info("y", dtype, list(y.shape)),
             helper.make_tensor_value_info("i", I64, list(y.shape))]
    return model(typed), [x]


def external_copy(name):
    """`<name>` saved as the dynamo exporter saves models: every initializer in one data file,
    `models/external/<name>.onnx.data`, beside `models/external/<name>.onnx`. Its inputs and outputs
    are the original's (tests/onnx.rs runs both)."""
    model = onnx.load(ROOT / "models" / f"{name}.onnx")
    target = ROOT / "models" / "external"
    target.mkdir(parents=True, exist_ok=True)
    # onnx appends to an existing data file: start from none.
    (target / f"{name}.onnx.data").unlink(missing_ok=True)
    onnx.save_model(model, target / f"{name}.onnx", save_as_external_data=True,
                    all_tensors_to_one_file=True, location=f"{name}.onnx.data", size_threshold=0)


def malformed():
    """One MaxUnpool node per defect; `good` is the same node without one."""
    target = ROOT / "malformed"
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)

    def save(name, attrs, x_shape=(1, 1, 2, 2), i_shape=(1, 1, 2, 2), i_type=I64,
             output_shape=None):
        inputs = ["x", "i"]
        inits = []
        if output_shape is not None:
            inits.append(numpy_helper.from_array(np.array(output_shape, np.int64), "shape"))
            inputs.append("shape")
        node = helper.make_node("MaxUnpool", inputs, ["y"], name="bad_unpool", **attrs)
        graph = helper.make_graph(
            [node], name,
            [helper.make_tensor_value_info("x", F32, list(x_shape)),
             helper.make_tensor_value_info("i", i_type, list(i_shape))],
            [helper.make_tensor_value_info("y", F32, [1, 1, 4, 4])], initializer=inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)])
        model.ir_version = 8
        onnx.save(model, target / f"{name}.onnx")

    two = {"kernel_shape": [2, 2], "strides": [2, 2]}
    save("good", two)
    save("missing_kernel_shape", {"strides": [2, 2]})
    save("strides_length", {"kernel_shape": [2, 2], "strides": [2, 2, 2]})
    save("pads_length", {"kernel_shape": [2, 2], "pads": [0, 0]})
    save("kernel_shape_length", {"kernel_shape": [2]})
    save("output_shape_length", two, output_shape=[1, 1, 4])
    save("int32_indices", two, i_type=TensorProto.INT32)
    save("rank_mismatch", two, i_shape=(1, 2, 2))

    # A pool feeding the unpooling with both `pads` and `auto_pad`, which ONNX forbids together.
    pool = helper.make_node("MaxPool", ["x"], ["p", "i"], name="bad_pool", kernel_shape=[2, 2],
                            strides=[2, 2], auto_pad="SAME_UPPER", pads=[1, 1, 1, 1])
    unpool = helper.make_node("MaxUnpool", ["p", "i"], ["y"], name="bad_unpool", **two)
    graph = helper.make_graph(
        [pool, unpool], "pool_pads_and_auto_pad",
        [helper.make_tensor_value_info("x", F32, [1, 1, 4, 4])],
        [helper.make_tensor_value_info("y", F32, [1, 1, 4, 4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)])
    model.ir_version = 8
    onnx.save(model, target / "pool_pads_and_auto_pad.onnx")


def main():
    copy_node_tests()
    record("segnet_odd", *exact_segnet((2, 3, 13, 11), 11, True, seed=7))
    record("segnet_even", *exact_segnet((2, 3, 12, 8), 22, False, seed=11))
    external_copy("segnet_even")
    model, inputs = unpool_case(1, 9, [3], [2], [1, 1], seed=1)
    record("unpool1d_opset9", model, inputs)
    model, inputs = unpool_case(3, 11, [2, 2, 2], [2, 2, 2], [0, 0, 0, 1, 0, 1], seed=2)
    record("unpool3d_opset11", model, inputs)
    model, inputs = unpool_case(2, 22, [2, 2], [2, 2], [0, 0, 1, 0], seed=3, values=BF16)
    record("unpool2d_bf16_opset22", model, inputs)
    record("pool3d_storage_order_1", *pool_case(
        (2, 2, 5, 6, 7), F32, 4, kernel_shape=[2, 3, 2], strides=[2, 2, 1],
        pads=[1, 0, 0, 0, 1, 1], dilations=[1, 1, 2], ceil_mode=1, storage_order=1))
    record("pool3d_same_lower", *pool_case(
        (1, 2, 5, 6, 7), F32, 5, kernel_shape=[3, 3, 3], strides=[2, 2, 2],
        auto_pad="SAME_LOWER"))
    record("pool1d_int8", *pool_case(
        (2, 3, 11), TensorProto.INT8, 6, kernel_shape=[3], strides=[2], pads=[1, 1]))
    record("pool2d_uint8_storage_order_1", *pool_case(
        (1, 2, 5, 7), TensorProto.UINT8, 7, kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1,
        storage_order=1))
    malformed()
    (ROOT / "VERSIONS.txt").write_text(
        f"onnx {onnx.__version__}\nonnxruntime {ort.__version__}\nnumpy {np.__version__}\n"
        f"ml_dtypes {ml_dtypes.__version__}\n")


if __name__ == "__main__":
    main()
