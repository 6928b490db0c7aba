//! Max pooling that keeps its indices together with the pool that produced them: Burn's 1-d and
//! 2-d pools, and a 3-d pool Burn lacks.

mod error;
mod indices;
pub(crate) mod windows;

use burn::tensor::Tensor;
use burn::tensor::module;
use burn::tensor::ops::MaxPoolOptions;

pub use indices::{PoolIndices, UnpoolIndices};
use windows::{IndexOrder, PoolSpec};

use crate::MaxUnpoolOptions;
use crate::error::or_panic_with;

/// Defines `max_pool{1,2}d_with_indices`: Burn's pool, keeping the pool with its indices.
macro_rules! max_pool_with_indices {
    ($name:ident, $dims:literal, $rank:literal) => {
        #[doc = concat!(
            "Burn's [`", stringify!($name), "`](burn::tensor::module::", stringify!($name),
            "), returning the indices as [`PoolIndices`]: with the pool and its input size, for ",
            "unpooling without an output size or an index check."
        )]
        pub fn $name(
            x: Tensor<$rank>,
            options: MaxPoolOptions<$dims>,
        ) -> (Tensor<$rank>, PoolIndices<$rank>) {
            let input_size = x.dims()[2..].to_vec();
            let pool = MaxUnpoolOptions::from_pool(&options).geometry();
            let (pooled, indices) = module::$name(x, options);
            let indices = PoolIndices {
                indices,
                pool,
                input_size,
            };
            (pooled, indices)
        }
    };
}

max_pool_with_indices!(max_pool1d_with_indices, 1, 3);
max_pool_with_indices!(max_pool2d_with_indices, 2, 4);

/// 3-d max pooling with the indices of the maxima, as [`PoolIndices`], which Burn does not have.
///
/// The same rules as Burn's 1-d and 2-d pools and PyTorch's `max_pool3d`: the output size
/// follows [`pool_output_size`](burn_unpool_shape::pool_output_size) (`ceil_mode` included),
/// padding never wins, each index is the first maximum of its window in scan order (depth,
/// then height, then width), or the last NaN of a window that holds NaNs, and indices are
/// per-plane and row-major in the unpadded input. The gradient flows to those positions and sums
/// where overlapping windows pick the same one. Runs on every device as Burn tensor ops: every
/// window is gathered (the kernel's volume times the output's memory) and its maximum picked.
///
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
///
/// # Panics
/// With a message naming the axis and the values, when an axis has no output (the window does
/// not fit the padded input) or a window lies entirely in the padding.
pub fn max_pool3d_with_indices(
    x: Tensor<5>,
    options: MaxPoolOptions<3>,
) -> (Tensor<5>, PoolIndices<5>) {
    let input_size = x.dims()[2..].to_vec();
    let spec = PoolSpec {
        geometry: MaxUnpoolOptions::from_pool(&options).geometry(),
        ceil_mode: options.ceil_mode,
    };
    let (pooled, indices) = or_panic_with(windows::max_pool(x, &spec, IndexOrder::RowMajor));
    let indices = PoolIndices {
        indices,
        pool: spec.geometry,
        input_size,
    };
    (pooled, indices)
}
