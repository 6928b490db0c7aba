//! What an importer can know about a model's indices: the plane offsets PyTorch's exporter
//! computes with a full 1x1 pool, and a `MaxUnpool` whose indices it traced back to a `MaxPool` of
//! the same model.

use burn::tensor::{DType, Device, Int, Tensor};

use super::indices::plane_ramp;

/// `(n*C + c) * D1*..*Dk` for every plane of an `[N, C, D1..Dk]` tensor, as an int64 tensor of
/// shape `[N, C, 1, ..]`: each plane's first global index.
///
/// PyTorch's ONNX exporter computes it as a 1x1 `MaxPool` with `Indices` over the whole activation
/// sliced to `[.., .., 0:1, 0:1]`; this reads only the shape, so it costs `N * C` numbers instead of
/// a pass over the activation and an int64 tensor of its size.
///
/// ```
/// use burn::tensor::{Device, TensorData};
/// use burn_unpool::onnx::plane_offsets;
///
/// let offsets = plane_offsets([2, 3, 4, 5], &Device::flex());
/// let expected = TensorData::from([[[[0i64]], [[20]], [[40]]], [[[60]], [[80]], [[100]]]]);
/// offsets.into_data().assert_eq(&expected, false);
/// ```
///
/// # Panics
/// When `R < 3`, or the tensor has more elements than `i64::MAX` (no global index could address
/// them).
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
    // Below i64::MAX: checked above.
    let plane_len = plane_len.unwrap_or(0) as i64;
    plane_ramp(shape, plane_len, device, DType::I64)
}

/// Where an imported `MaxUnpool`'s indices come from, when the importer traced them to a `MaxPool`
/// of the same model (row-major `Indices`, `storage_order = 0`): the indices reaching `MaxUnpool`
/// are that pool's `Indices`, re-based by the arithmetic PyTorch's exporters write around it:
///
/// `Indices - (n*C + c) * D1*..*Dk + (n*C + c) * plane_stride`
///
/// where `[N, C, D1..Dk]` is the pool's input shape (`plane_stride` absent: no re-basing).
///
/// With it, [`max_unpool_onnx`](super::max_unpool_onnx) takes the pool's `Indices` themselves
/// (no arithmetic runs). Where the unpooling reads its indices in planes of the pool's input size
/// and `plane_stride` is that size, every index lies in its own plane by construction, so the
/// index check is skipped (on a GPU, the device read-back it costs); any other case does the
/// arithmetic and checks the indices as an ONNX model computing them would. Indices that are not
/// that pool's are unpooled as unchecked indices are
/// ([`MaxUnpoolOptions::without_index_check`](crate::MaxUnpoolOptions::without_index_check)): an
/// index out of range is skipped, never written.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PoolIndexSource {
    /// `[N, C, D1..Dk]`: the shape of the pool's input.
    pub pool_input_shape: Vec<usize>,
    /// The plane length the model re-bases the indices to; `None` when they reach `MaxUnpool`
    /// unchanged.
    pub plane_stride: Option<usize>,
}

impl PoolIndexSource {
    /// The source for a pool over an input of `pool_input_shape`, with indices re-based to planes
    /// of `plane_stride` elements (`None`: used unchanged).
    ///
    /// ```
    /// use burn_unpool::onnx::PoolIndexSource;
    ///
    /// let source = PoolIndexSource::new(&[1, 2, 4, 4], Some(16));
    /// assert_eq!(source.pool_plane_len(), 16);
    /// ```
    pub fn new(pool_input_shape: &[usize], plane_stride: Option<usize>) -> Self {
        Self {
            pool_input_shape: pool_input_shape.to_vec(),
            plane_stride,
        }
    }

    /// The source for a pool input shape the generated code holds as ONNX int64 values (a
    /// `Shape` of the pool's input).
    ///
    /// # Panics
    /// For an entry that is negative or past `usize::MAX` (a 32-bit target).
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

    /// Refuses a pool input whose rank, `N` or `C` contradicts `x`'s: the pool's indices have
    /// `x`'s shape, so its planes are `x`'s.
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

    /// Whether the re-based indices are the pool's own `Indices` read in planes of
    /// `index_plane_len` elements (for an `x` whose planes are the pool's, see
    /// [`Self::assert_planes_of`]): then each lies in its plane.
    pub(crate) fn indices_are_the_pools(&self, index_plane_len: usize) -> bool {
        let plane_len = self.pool_plane_len();
        self.plane_stride.unwrap_or(plane_len) == plane_len && index_plane_len == plane_len
    }

    /// The indices as the model's arithmetic computes them from the pool's `indices`.
    pub(crate) fn rebase<const R: usize>(&self, indices: Tensor<R, Int>) -> Tensor<R, Int> {
        let plane_len = self.pool_plane_len();
        let Some(stride) = self.plane_stride.filter(|&s| s != plane_len) else {
            return indices;
        };
        let step = stride as i64 - plane_len as i64;
        let offsets = plane_ramp(indices.dims(), step, &indices.device(), DType::I64);
        indices.cast(DType::I64) + offsets
    }
}

#[cfg(all(test, feature = "flex"))]
mod tests {
    use super::*;
    use crate::onnx::{MaxUnpoolAttributes, max_unpool_onnx};
    use burn::tensor::TensorData;

    #[test]
    fn plane_offsets_read_the_shape_only() {
        // 2^41 elements (6 * 2^28 on 32 bits): an activation of this shape (8 TiB of f32; 6 GiB)
        // or an int64 pass over it could not be allocated; the offsets are six numbers.
        let side: usize = if cfg!(target_pointer_width = "64") {
            1 << 20
        } else {
            1 << 14
        };
        let offsets = plane_offsets([2, 3, side, side], &Device::flex());
        let plane = (side * side) as i64;
        let expected = TensorData::from([
            [[[0i64]], [[plane]], [[2 * plane]]],
            [[[3 * plane]], [[4 * plane]], [[5 * plane]]],
        ]);
        offsets.into_data().assert_eq(&expected, false);
    }

    #[test]
    #[should_panic(expected = "has more elements than")]
    fn plane_offsets_refuse_a_shape_no_index_addresses() {
        // Past i64::MAX on 64 bits, past usize::MAX on 32.
        #[cfg(target_pointer_width = "64")]
        plane_offsets([2, 1, 1 << 62], &Device::flex());
        #[cfg(target_pointer_width = "32")]
        plane_offsets([2, 1, 1 << 31], &Device::flex());
    }

    /// A 2x2 pool over [1, 2, 2, 4] (planes of 8): its global indices, and a `MaxUnpool` that
    /// reads them in planes of `plane` (the exporter's arithmetic re-bases them to it).
    fn unpool_of_pool_indices(plane_stride: Option<usize>, output: [usize; 4]) -> Vec<f32> {
        let device = Device::flex();
        let x = Tensor::<4>::from_floats([[[[1.0, 2.0]], [[3.0, 4.0]]]], &device);
        // Plane 0 keeps positions 5 and 2, plane 1 positions 0 and 7 (global 8 and 15).
        let indices = Tensor::<4, Int>::from_data(
            TensorData::new(vec![5i64, 2, 8, 15], [1, 2, 1, 2]),
            (&device, DType::I64),
        );
        let source = PoolIndexSource::new(&[1, 2, 2, 4], plane_stride);
        let attributes = MaxUnpoolAttributes::new(vec![2, 2])
            .with_strides(vec![2, 2])
            .with_pool_indices(source);
        let y = max_unpool_onnx(x, indices, &attributes, Some(&output));
        y.into_data().try_to_vec::<f32>().expect("f32 values")
    }

    #[test]
    fn traced_pool_indices_unpool_as_the_models_arithmetic_computes_them() {
        // Planes of the pool's size: the indices themselves, unchecked.
        let same = unpool_of_pool_indices(Some(8), [1, 2, 2, 4]);
        let expected = [
            0., 0., 2., 0., 0., 1., 0., 0., 3., 0., 0., 0., 0., 0., 0., 4.,
        ];
        assert_eq!(same, expected);
        assert_eq!(unpool_of_pool_indices(None, [1, 2, 2, 4]), expected);
        // Re-based to planes of 10 ([2, 5]): index - 8 * plane + 10 * plane, checked.
        let wider = unpool_of_pool_indices(Some(10), [1, 2, 2, 5]);
        let mut expected = vec![0.0; 20];
        (expected[5], expected[2], expected[10], expected[17]) = (1.0, 2.0, 3.0, 4.0);
        assert_eq!(wider, expected);
    }

    #[test]
    #[should_panic(
        expected = "max_unpool_onnx: the indices' pool has input shape [1, 3, 2, 4], \
                               but x has shape [1, 2, 1, 2]: the rank, N and C must be x's"
    )]
    fn a_pool_of_other_planes_than_x_is_refused() {
        let device = Device::flex();
        let x = Tensor::<4>::zeros([1, 2, 1, 2], &device);
        let indices = Tensor::<4, Int>::zeros([1, 2, 1, 2], &device);
        let attributes = MaxUnpoolAttributes::new(vec![2, 2])
            .with_strides(vec![2, 2])
            .with_pool_indices(PoolIndexSource::new(&[1, 3, 2, 4], None));
        max_unpool_onnx(x, indices, &attributes, Some(&[1, 2, 2, 4]));
    }

    #[test]
    #[should_panic(expected = "index 11 at position [0, 1, 0, 1] is out of range")]
    fn re_based_indices_out_of_range_are_still_reported() {
        // Re-based to planes of 4 ([1, 4]): plane 1's 15 becomes 15 - 8 + 4 = 11, past the 8
        // positions of the output.
        unpool_of_pool_indices(Some(4), [1, 2, 1, 4]);
    }
}
