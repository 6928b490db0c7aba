//! What an importer knows of a model's indices: plane offsets, and pools they were traced to.

use burn::tensor::{Device, Int, Tensor};

use super::indices::plane_ramp;
use crate::error::or_panic;
use crate::plan::global_index_dtype;

/// Each plane's first global index, `(n*C + c) * D1*..*Dk`, as int64 `[N, C, 1, ..]` (int32 on
/// a device without 64-bit integers, as [`max_pool_onnx`](super::max_pool_onnx) writes them).
/// # Panics
/// When `R < 3`, or the tensor has more elements than `i64::MAX` (`i32::MAX` in int32).
pub fn plane_offsets<const R: usize>(shape: [usize; R], device: &Device) -> Tensor<R, Int> {
    assert!(
        R >= 3,
        "plane_offsets: the shape must be [N, C, spatial..], got {shape:?}"
    );
    let plane_len = shape[2..].iter().try_fold(1usize, |n, &d| n.checked_mul(d));
    let planes = shape[0].checked_mul(shape[1]);
    let fits = match (planes, plane_len) {
        (Some(planes), Some(len)) => planes
            .checked_mul(len)
            .is_some_and(|total| i64::try_from(total).is_ok()),
        _ => false,
    };
    assert!(
        fits,
        "plane_offsets: a tensor of shape {shape:?} has more elements than a usize or an i64 holds"
    );
    let dtype = or_panic(global_index_dtype(device, &shape));
    let plane_len = plane_len.unwrap_or(0) as i64;
    plane_ramp(shape, plane_len, device, dtype)
}

/// The `MaxPool` (`storage_order = 0`) a `MaxUnpool`'s indices were traced to, whose `Indices`
/// the model re-bases as `Indices - (n*C + c) * D1*..*Dk + (n*C + c) * plane_stride`. Indices that
/// are not that pool's unpool as [unchecked](crate::MaxUnpoolOptions::without_index_check) ones.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PoolIndexSource {
    /// `[N, C, D1..Dk]`: the shape of the pool's input.
    pub pool_input_shape: Vec<usize>,
    /// The plane length the indices are re-based to; `None`: unchanged.
    pub plane_stride: Option<usize>,
}

impl PoolIndexSource {
    /// The source for a pool over `pool_input_shape`, indices re-based to `plane_stride`.
    pub fn new(pool_input_shape: &[usize], plane_stride: Option<usize>) -> Self {
        Self {
            pool_input_shape: pool_input_shape.to_vec(),
            plane_stride,
        }
    }

    /// [`Self::new`] for a pool input shape held as ONNX int64 values.
    /// # Panics
    /// For an entry that is negative or past `usize::MAX`.
    pub fn from_i64(pool_input_shape: &[i64], plane_stride: Option<usize>) -> Self {
        let shape =
            super::shape_from_i64(pool_input_shape, "PoolIndexSource: the pool input shape");
        Self::new(&shape, plane_stride)
    }

    /// `D1*..*Dk`: one plane of the pool's input (saturating; 0 for a shape without planes).
    pub fn pool_plane_len(&self) -> usize {
        match self.pool_input_shape.get(2..) {
            Some(spatial) => spatial.iter().fold(1usize, |n, &d| n.saturating_mul(d)),
            None => 0,
        }
    }

    #[track_caller]
    pub(crate) fn assert_planes_of(&self, x_shape: &[usize]) {
        let agree = self.pool_input_shape.len() == x_shape.len()
            && self.pool_input_shape.get(..2) == x_shape.get(..2);
        assert!(
            agree,
            "max_unpool_onnx: the indices' pool has input shape {:?}, but x has shape {x_shape:?}: \
             the rank, N and C must be x's",
            self.pool_input_shape
        );
    }

    pub(crate) fn indices_are_the_pools(&self, index_plane_len: usize) -> bool {
        let plane_len = self.pool_plane_len();
        self.plane_stride.unwrap_or(plane_len) == plane_len && index_plane_len == plane_len
    }

    pub(crate) fn rebase<const R: usize>(&self, indices: Tensor<R, Int>) -> Tensor<R, Int> {
        let plane_len = self.pool_plane_len();
        let Some(stride) = self.plane_stride.filter(|&s| s != plane_len) else {
            return indices;
        };
        let step = stride as i64 - plane_len as i64;
        // Re-based, the indices address planes of `stride` positions.
        let dims = indices.dims();
        let dtype = or_panic(global_index_dtype(
            &indices.device(),
            &[dims[0], dims[1], stride],
        ));
        let offsets = plane_ramp(dims, step, &indices.device(), dtype);
        indices.cast(dtype) + offsets
    }
}
