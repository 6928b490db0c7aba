//! Between Burn's indices (per plane, row-major) and ONNX's (global, optionally column-major).

use burn::tensor::{DType, Device, Int, Tensor, TensorData};

use crate::error::or_panic;
use crate::plan::checks::{index_arithmetic, largest_index};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum IndexOrder {
    /// The last axis fastest: Burn, PyTorch, ONNX `storage_order = 0`.
    RowMajor,
    /// The first axis fastest: ONNX `storage_order = 1`.
    ColumnMajor,
}

fn fastest_first(dims: usize, order: IndexOrder) -> Vec<usize> {
    match order {
        IndexOrder::RowMajor => (0..dims).rev().collect(),
        IndexOrder::ColumnMajor => (0..dims).collect(),
    }
}

/// Per-plane indices to global ones, `per_plane + (n*C + c) * plane_len` (i64 if they need it).
/// # Panics
/// When the indices are not `[N, C, spatial..]`, `plane_len` is 0, or an index would pass `i64`.
#[track_caller]
pub fn per_plane_to_global<const R: usize>(
    indices: Tensor<R, Int>,
    plane_len: usize,
) -> Tensor<R, Int> {
    let offsets = plane_offsets("per_plane_to_global", &indices, plane_len, false);
    widen_for(indices, offsets.dtype) + offsets.tensor
}

/// Global indices to per-plane ones; one into another plane comes out `< 0` or `>= plane_len`.
/// # Panics
/// As [`per_plane_to_global`].
#[track_caller]
pub fn global_to_per_plane<const R: usize>(
    indices: Tensor<R, Int>,
    plane_len: usize,
) -> Tensor<R, Int> {
    let offsets = plane_offsets("global_to_per_plane", &indices, plane_len, true);
    widen_for(indices, offsets.dtype) - offsets.tensor
}

/// ONNX `storage_order = 1` indices to row-major ones; `input_spatial` is the pool's input's.
/// # Panics
/// When `input_spatial` is not one non-zero size per spatial axis, or passes `i64::MAX` elements.
#[track_caller]
pub fn column_major_to_row_major<const R: usize>(
    indices: Tensor<R, Int>,
    input_spatial: &[usize],
) -> Tensor<R, Int> {
    reorder(
        "column_major_to_row_major",
        indices,
        input_spatial,
        IndexOrder::ColumnMajor,
    )
}

/// Row-major indices to `storage_order = 1` ones: the inverse of [`column_major_to_row_major`].
/// # Panics
/// As [`column_major_to_row_major`].
#[track_caller]
pub fn row_major_to_column_major<const R: usize>(
    indices: Tensor<R, Int>,
    input_spatial: &[usize],
) -> Tensor<R, Int> {
    reorder(
        "row_major_to_column_major",
        indices,
        input_spatial,
        IndexOrder::RowMajor,
    )
}

#[track_caller]
fn reorder<const R: usize>(
    op: &'static str,
    indices: Tensor<R, Int>,
    input_spatial: &[usize],
    from: IndexOrder,
) -> Tensor<R, Int> {
    let dims = indices.dims();
    let what = "the conversion computes in the indices' dtype";
    or_panic(index_arithmetic(
        op,
        what,
        indices.dtype(),
        &indices.device(),
    ));
    assert!(
        input_spatial.len() + 2 == R,
        "{op}: input_spatial must have one size per spatial axis of the indices {dims:?} ({} \
         sizes), got {input_spatial:?}",
        R.saturating_sub(2)
    );
    assert!(
        !input_spatial.contains(&0),
        "{op}: input_spatial must have no zero size, got {input_spatial:?}"
    );
    let plane_len = input_spatial
        .iter()
        .try_fold(1u64, |len, &dim| len.checked_mul(dim as u64))
        .filter(|&len| i64::try_from(len).is_ok())
        .unwrap_or_else(|| {
            panic!("{op}: the plane {input_spatial:?} has more elements than i64::MAX")
        });
    let plane_len = plane_len as i64;
    let plane_start = indices.clone().div_scalar(plane_len).mul_scalar(plane_len);
    let mut rest = indices - plane_start.clone();
    let to = match from {
        IndexOrder::RowMajor => IndexOrder::ColumnMajor,
        IndexOrder::ColumnMajor => IndexOrder::RowMajor,
    };
    let mut to_strides = vec![0i64; input_spatial.len()];
    fastest_first(input_spatial.len(), to)
        .into_iter()
        .fold(1i64, |stride, axis| {
            to_strides[axis] = stride;
            stride.saturating_mul(input_spatial[axis] as i64)
        });
    let mut reordered = rest.zeros_like();
    for axis in fastest_first(input_spatial.len(), from) {
        let dim = input_spatial[axis] as i64;
        let coordinate = rest.clone().remainder_scalar(dim);
        rest = rest.div_scalar(dim);
        reordered = reordered + coordinate.mul_scalar(to_strides[axis]);
    }
    plane_start + reordered
}

struct PlaneOffsets<const R: usize> {
    tensor: Tensor<R, Int>,
    dtype: DType,
}

#[track_caller]
fn plane_offsets<const R: usize>(
    op: &'static str,
    indices: &Tensor<R, Int>,
    plane_len: usize,
    signed: bool,
) -> PlaneOffsets<R> {
    let dims = indices.dims();
    assert!(
        R >= 3,
        "{op}: indices must be [N, C, spatial..], got shape {dims:?}"
    );
    assert!(plane_len > 0, "{op}: plane_len must be non-zero");
    let planes = dims[0] * dims[1];
    let global_len = (planes as u64)
        .checked_mul(plane_len as u64)
        .filter(|&len| i64::try_from(len).is_ok())
        .unwrap_or_else(|| {
            panic!(
                "{op}: {planes} planes (indices {dims:?}) of {plane_len} elements hold more \
                 positions than i64::MAX"
            )
        });
    let (given, device, largest) = (
        indices.dtype(),
        indices.device(),
        global_len.saturating_sub(1),
    );
    let dtype = widened_dtype(given, largest, signed);
    let what = format!("{planes} planes of {plane_len} have global indices up to {largest}");
    for dtype in [given, dtype] {
        or_panic(index_arithmetic(op, &what, dtype, &device));
    }
    let tensor = plane_ramp(dims, plane_len as i64, &device, dtype);
    PlaneOffsets { tensor, dtype }
}

pub(crate) fn plane_ramp<const R: usize>(
    dims: [usize; R],
    step: i64,
    device: &Device,
    dtype: DType,
) -> Tensor<R, Int> {
    let planes = (dims[0] * dims[1]) as i64;
    let ramp: Vec<i64> = (0..planes).map(|p| p * step).collect();
    let mut shape = [1; R];
    shape[..2].copy_from_slice(&dims[..2]);
    Tensor::from_data(TensorData::new(ramp, shape), (device, dtype))
}

fn widened_dtype(dtype: DType, max_index: u64, signed: bool) -> DType {
    let largest = match largest_index(dtype) {
        Some(_) if signed && dtype.is_uint() => 0,
        largest => largest.unwrap_or(0),
    };
    if max_index <= largest {
        dtype
    } else {
        DType::I64
    }
}

fn widen_for<const R: usize>(indices: Tensor<R, Int>, dtype: DType) -> Tensor<R, Int> {
    if dtype == indices.dtype() {
        indices
    } else {
        indices.cast(dtype)
    }
}

#[cfg(test)]
mod tests {
    use burn::tensor::{Device, Int, Tensor, TensorData};

    use super::row_major_to_column_major;

    #[test]
    fn column_major_labels_count_the_first_axis_fastest() {
        // A 2 x 3 plane, one 2 x 3 window: row-major sources 0..6, column-major labels.
        let sources = TensorData::new((0..6i64).collect::<Vec<_>>(), [1, 1, 2, 3]);
        let sources = Tensor::<4, Int>::from_data(sources, &Device::flex());
        let labels = row_major_to_column_major(sources, &[2, 3]);
        let labels = labels
            .into_data()
            .convert::<i64>()
            .try_to_vec::<i64>()
            .unwrap();
        assert_eq!(labels, [0, 2, 4, 1, 3, 5]);
    }
}
