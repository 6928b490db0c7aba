#!/usr/bin/env python3
"""Records `tests/data/directml.json`: DirectML's MaxUnpool rule applied with numpy.

The rule, from the seed `DML_MAX_UNPOOLING_OPERATOR_DESC` (tests/data/seeds/directml_max_unpooling.txt):
4-D tensors `{ Batch, Channel, Height, Width }`; "filling the output tensor *OutputTensor* with
the values in the input tensor *InputTensor* ... according to the index values provided in the
*IndicesTensor*. The elements in the output tensor untouched by this process are left with zero
values." The index values "are zero-based, and treat the output tensor as a contiguous
one-dimensional array"; InputTensor and OutputTensor have the same DataType. One case per value
type of the seed's table (FLOAT32, FLOAT16, INT64, INT32, INT16, INT8, UINT64, UINT32, UINT16,
UINT8) and index type (UINT32, UINT64).

The indices are those of a 2x2, stride-2 max pool (one position in each window, no two alike:
the seed says nothing of duplicates); the values span each type's range, its extremes included,
and for the float types signed zeros, infinities, a NaN and a subnormal. Every value is recorded
as its bit pattern (an unsigned integer of its width), so the test compares bits.

Usage: python tests/scripts/directml.py  (needs numpy)
"""

import json
import pathlib

import numpy as np

OUT = pathlib.Path(__file__).resolve().parents[1] / "data" / "directml.json"

VALUES = {
    "FLOAT32": np.float32,
    "FLOAT16": np.float16,
    "INT64": np.int64,
    "INT32": np.int32,
    "INT16": np.int16,
    "INT8": np.int8,
    "UINT64": np.uint64,
    "UINT32": np.uint32,
    "UINT16": np.uint16,
    "UINT8": np.uint8,
}
INDICES = {"UINT32": np.uint32, "UINT64": np.uint64}
BITS = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}

INPUT = (2, 3, 2, 3)  # Batch, Channel, Height, Width
OUTPUT = (2, 3, 4, 6)  # the 2x2 pool's input


def values(dtype, rng, count):
    """`count` values spanning `dtype`, its extremes (and float specials) first."""
    if np.issubdtype(dtype, np.floating):
        info = np.finfo(dtype)
        special = [info.max, info.min, -0.0, np.inf, -np.inf, np.nan, info.smallest_subnormal, 1.0]
        random = rng.standard_normal(count) * 100
    else:
        info = np.iinfo(dtype)
        special = [info.max, info.min, 0, 1]
        random = rng.integers(info.min, info.max, size=count, dtype=dtype, endpoint=True)
    return np.concatenate([np.array(special, dtype=dtype), np.asarray(random, dtype=dtype)])[:count]


def pool_indices(rng, index_dtype):
    """Flat indices into OUTPUT, one position in each 2x2 window of each plane."""
    n, c, h, w = INPUT
    _, _, oh, ow = OUTPUT
    indices = np.empty(INPUT, dtype=index_dtype)
    for b in range(n):
        for ch in range(c):
            plane = b * c + ch
            for i in range(h):
                for j in range(w):
                    di, dj = rng.integers(0, 2, size=2)
                    indices[b, ch, i, j] = plane * oh * ow + (2 * i + di) * ow + (2 * j + dj)
    return indices


def max_unpool(x, indices):
    """The seed's rule: zeros, then every value at its index of the flat output."""
    out = np.zeros(int(np.prod(OUTPUT)), dtype=x.dtype)
    out[indices.ravel().astype(np.int64)] = x.ravel()
    return out.reshape(OUTPUT)


def bits(array):
    return array.view(BITS[array.dtype.itemsize]).ravel().tolist()


def main():
    cases = []
    for value_name, value_dtype in VALUES.items():
        for index_name, index_dtype in INDICES.items():
            rng = np.random.default_rng(sum(map(ord, value_name + index_name)))
            x = values(value_dtype, rng, int(np.prod(INPUT))).reshape(INPUT)
            indices = pool_indices(rng, index_dtype)
            cases.append(
                {
                    "values": value_name,
                    "indices_type": index_name,
                    "input_shape": list(INPUT),
                    "output_shape": list(OUTPUT),
                    "x_bits": bits(x),
                    "indices": indices.ravel().tolist(),
                    "expected_bits": bits(max_unpool(x, indices)),
                }
            )
    OUT.write_text(
        json.dumps({"numpy": np.__version__, "cases": cases}, separators=(",", ":")) + "\n"
    )
    print(f"wrote {len(cases)} cases to {OUT}")


if __name__ == "__main__":
    main()
