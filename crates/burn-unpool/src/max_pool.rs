//! The public max pools with indices, with PyTorch's rules on every device.

use burn::tensor::ops::MaxPoolOptions;
use burn::tensor::{Device, Tensor};

use crate::error::{UnpoolError, or_panic};
use crate::geometry::PoolGeometry;
use crate::indices::PoolIndices;
use crate::op;
use crate::plan::{PoolPlan, pool_index_dtype};

macro_rules! max_pool_with_indices {
    ($name:ident, $dims:literal, $rank:literal) => {
        #[doc = concat!(
            "The signature of Burn's [`", stringify!($name), "`](burn::tensor::module::",
            stringify!($name), "), with PyTorch's rules on every device, and the indices as ",
            "[`PoolIndices`]: with the pool and its input size, for unpooling without an output ",
            "size or an index check. See [`max_pool3d_with_indices`] for the rules and the panics."
        )]
        #[track_caller]
        pub fn $name(
            x: Tensor<$rank>,
            options: MaxPoolOptions<$dims>,
        ) -> (Tensor<$rank>, PoolIndices<$rank>) {
            max_pool_with_indices(x, options)
        }
    };
}

max_pool_with_indices!(max_pool1d_with_indices, 1, 3);
max_pool_with_indices!(max_pool2d_with_indices, 2, 4);

/// 3-d max pooling with the indices of the maxima, as [`PoolIndices`] (Burn 0.22 has none).
///
/// Every pool here: each index is the first maximum of its window in scan order (the last NaN if
/// any), never padding, per-plane and row-major in the unpadded input; of the device's default int
/// dtype if 32 bits or wider and wide enough, else `I64`. The gradient has the same bits every run.
/// ```
/// use burn::tensor::ops::MaxPoolOptions;
/// use burn::tensor::{Device, Int, Tensor, TensorData};
/// use burn_unpool::{MaxUnpoolOptions, max_pool3d_with_indices, max_unpool3d};
///
/// let device = Device::flex();
/// // One 2 x 2 x 2 volume holding 0..8: the largest value is the last.
/// let x = Tensor::<1, Int>::arange(0..8, &device).float().reshape([1, 1, 2, 2, 2]);
/// let pool = MaxPoolOptions::new([2, 2, 2]);
/// let (pooled, indices) = max_pool3d_with_indices(x, pool.clone());
/// pooled.to_data().assert_eq(&TensorData::from([[[[[7.0f32]]]]]), false);
/// indices.tensor().to_data().assert_eq(&TensorData::from([[[[[7i64]]]]]), false);
/// // The indices know the pool's input size.
/// let restored = max_unpool3d(pooled, indices, MaxUnpoolOptions::from_pool(&pool));
/// assert_eq!(restored.dims(), [1, 1, 2, 2, 2]);
/// ```
/// # Panics
/// When an axis has no output, a window lies only in padding, or the device lacks the dtype.
#[track_caller]
pub fn max_pool3d_with_indices(
    x: Tensor<5>,
    options: MaxPoolOptions<3>,
) -> (Tensor<5>, PoolIndices<5>) {
    max_pool_with_indices(x, options)
}

/// [`max_pool3d_with_indices`] at any rank, for `x` `[N, C, D1..Dk]` (`R = D + 2`).
/// # Panics
/// As [`max_pool3d_with_indices`], and when `options` has not `R - 2` spatial axes.
#[track_caller]
pub fn max_pool_with_indices<const D: usize, const R: usize>(
    x: Tensor<R>,
    options: MaxPoolOptions<D>,
) -> (Tensor<R>, PoolIndices<R>) {
    let pool = PoolGeometry::of(&options);
    let shape = x.dims();
    let plan = or_panic(plan_pool(&shape, &pool, &x.device()));
    let (pooled, indices) = op::pool(x, plan);
    let indices = PoolIndices {
        indices,
        pool,
        input_size: shape[2..].to_vec(),
    };
    (pooled, indices)
}

fn plan_pool(
    shape: &[usize],
    pool: &PoolGeometry,
    device: &Device,
) -> Result<PoolPlan, UnpoolError> {
    let plane_len = shape.get(2..).map_or(0, |spatial| {
        spatial.iter().fold(1usize, |n, &d| n.saturating_mul(d))
    });
    PoolPlan::cached(shape, pool, pool_index_dtype(device, plane_len)?)
}
