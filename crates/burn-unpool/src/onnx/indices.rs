//! Conversions between the index conventions of Burn (per plane, row-major) and ONNX (global,
//! optionally column-major inside each plane).

use burn::tensor::{DType, Int, Tensor, TensorData};

/// Per-plane indices (Burn, PyTorch) to global ones (ONNX): `global = per_plane + (n*C + c) * P`,
/// where `P` is the number of elements of one output plane.
///
/// The result is i64 when the largest global index does not fit the indices' dtype.
///
/// ```
/// use burn::tensor::{Device, Int, Tensor, TensorData};
/// use burn_unpool::onnx::per_plane_to_global;
///
/// let device = Device::flex();
/// let indices = Tensor::<3, Int>::from_ints([[[1, 3], [0, 2]]], &device);
/// let global = per_plane_to_global(indices, 4);
/// global.into_data().assert_eq(&TensorData::from([[[1i32, 3], [4, 6]]]), false);
/// ```
pub fn per_plane_to_global<const R: usize>(
    indices: Tensor<R, Int>,
    plane_len: usize,
) -> Tensor<R, Int> {
    let offsets = plane_offsets(&indices, plane_len);
    widen_for(indices, offsets.max_index) + offsets.tensor
}

/// Global indices (ONNX) to per-plane ones (Burn, PyTorch): `per_plane = global - (n*C + c) * P`.
///
/// An index that pointed into another plane comes out negative or `>= P`, and the unpooling
/// reports it.
///
/// ```
/// use burn::tensor::{Device, Int, Tensor, TensorData};
/// use burn_unpool::onnx::global_to_per_plane;
///
/// let device = Device::flex();
/// let indices = Tensor::<3, Int>::from_ints([[[1, 3], [4, 6]]], &device);
/// let per_plane = global_to_per_plane(indices, 4);
/// per_plane.into_data().assert_eq(&TensorData::from([[[1i32, 3], [0, 2]]]), false);
/// ```
pub fn global_to_per_plane<const R: usize>(
    indices: Tensor<R, Int>,
    plane_len: usize,
) -> Tensor<R, Int> {
    let offsets = plane_offsets(&indices, plane_len);
    widen_for(indices, offsets.max_index) - offsets.tensor
}

/// ONNX `MaxPool` indices computed with `storage_order = 1` (column-major inside each plane) to
/// row-major ones, keeping the plane offset of global indices. `input_spatial` is the spatial shape
/// of the pool's input.
///
/// ```
/// use burn::tensor::{Device, Int, Tensor, TensorData};
/// use burn_unpool::onnx::column_major_to_row_major;
///
/// // ONNX `maxpool_with_argmax_2d_precomputed_strides`: 5x5 input, storage_order = 1.
/// let device = Device::flex();
/// let indices = Tensor::<4, Int>::from_ints([[[[6, 16], [8, 18]]]], &device);
/// let row_major = column_major_to_row_major(indices, &[5, 5]);
/// row_major.into_data().assert_eq(&TensorData::from([[[[6i32, 8], [16, 18]]]]), false);
/// ```
pub fn column_major_to_row_major<const R: usize>(
    indices: Tensor<R, Int>,
    input_spatial: &[usize],
) -> Tensor<R, Int> {
    let plane_len: usize = input_spatial.iter().product();
    let plane_len_i = plane_len as i64;
    let plane_start = indices
        .clone()
        .div_scalar(plane_len_i)
        .mul_scalar(plane_len_i);
    let mut rest = indices.clone() - plane_start.clone();
    // Column-major: the first axis varies fastest. Peel coordinates off in that order.
    let mut row_major = rest.zeros_like();
    let mut row_stride: i64 = plane_len_i;
    for &dim in input_spatial {
        let dim = dim as i64;
        row_stride /= dim;
        let coordinate = rest.clone().remainder_scalar(dim);
        rest = rest.div_scalar(dim);
        row_major = row_major + coordinate.mul_scalar(row_stride);
    }
    plane_start + row_major
}

struct PlaneOffsets<const R: usize> {
    tensor: Tensor<R, Int>,
    max_index: usize,
}

/// `(n*C + c) * P` broadcast over `indices`' shape, with the dtype `indices` will have.
fn plane_offsets<const R: usize>(indices: &Tensor<R, Int>, plane_len: usize) -> PlaneOffsets<R> {
    let dims = indices.dims();
    let planes = dims[0] * dims.get(1).copied().unwrap_or(1);
    let max_index = (planes * plane_len).saturating_sub(1);
    let offsets: Vec<i64> = (0..planes).map(|p| (p * plane_len) as i64).collect();
    let mut shape = [1; R];
    shape[0] = dims[0];
    if R > 1 {
        shape[1] = dims[1];
    }
    let device = indices.device();
    let dtype = widened_dtype(indices.dtype(), max_index);
    let tensor = Tensor::<R, Int>::from_data(TensorData::new(offsets, shape), (&device, dtype));
    PlaneOffsets { tensor, max_index }
}

fn widened_dtype(dtype: DType, max_index: usize) -> DType {
    if dtype == DType::I32 && max_index > i32::MAX as usize {
        DType::I64
    } else {
        dtype
    }
}

fn widen_for<const R: usize>(indices: Tensor<R, Int>, max_index: usize) -> Tensor<R, Int> {
    let dtype = widened_dtype(indices.dtype(), max_index);
    if dtype == indices.dtype() {
        indices
    } else {
        indices.cast(dtype)
    }
}
