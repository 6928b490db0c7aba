//! The public max pools with indices: Burn's 1-d and 2-d signatures and a 3-d pool Burn lacks,
//! with PyTorch's rules on every device, run by this crate's kernels where the device has them.

use burn::tensor::kind::Basic;
use burn::tensor::ops::MaxPoolOptions;
use burn::tensor::{Device, Int, Tensor};

use crate::UnpoolKind;
use crate::composed::pool::{IndexOrder, max_pool as composed_max_pool};
use crate::error::or_panic_with;
use crate::pool::{PoolError, PoolIndices, PoolPlan, PoolSpec, pool_index_dtype};
use crate::route::Kernels;

/// Defines `max_pool{1,2}d_with_indices`: Burn's signature, this crate's pool.
macro_rules! max_pool_with_indices {
    ($name:ident, $dims:literal, $rank:literal) => {
        #[doc = concat!(
            "The signature of Burn's [`", stringify!($name), "`](burn::tensor::module::",
            stringify!($name), "), with PyTorch's rules on every device, and the indices as ",
            "[`PoolIndices`]: with the pool and its input size, for unpooling without an output ",
            "size or an index check. See [`max_pool3d_with_indices`] for the rules and the panics."
        )]
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

/// 3-d max pooling with the indices of the maxima, as [`PoolIndices`] (Burn 0.22 has no 3-d
/// pool with indices).
///
/// The rules of every pool of this crate, PyTorch's, on every device: the output size follows
/// [`pool_output_size`](burn_unpool_shape::pool_output_size) (`ceil_mode` included); each index
/// is the first maximum of its window in scan order (depth, then height, then width), or the last
/// NaN of a window that holds NaNs; padding never wins, so every index lies inside its own
/// window, for windows of `-inf`, asymmetric padding and dilation alike; indices are per-plane,
/// row-major in the unpadded input. Their dtype is the device's default int dtype when it is at
/// least 32 bits wide and holds every position of a plane, else `I64` (an error on a device
/// without it). The gradient flows to those positions and sums into zeros where overlapping
/// windows pick the same one, in a fixed order, so it has the same bits every run (an upstream
/// `-0.0` becomes `+0.0`, as in PyTorch).
///
/// Flex and NdArray run this crate's CPU kernels at any rank, the CubeCL devices (feature `wgpu`)
/// its GPU kernels for 1 to 3 spatial axes; other devices and ranks run a composition of Burn
/// tensor ops with the same rules.
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
/// not fit the padded input) or a window lies entirely in the padding; and when the device cannot
/// compute with the values' dtype.
pub fn max_pool3d_with_indices(
    x: Tensor<5>,
    options: MaxPoolOptions<3>,
) -> (Tensor<5>, PoolIndices<5>) {
    max_pool_with_indices(x, options)
}

/// `D`-dimensional max pooling of `x` `[N, C, D1..Dk]` (`R = D + 2`) with the indices of the
/// maxima, as [`PoolIndices`]: [`max_pool1d_with_indices`], [`max_pool2d_with_indices`] and
/// [`max_pool3d_with_indices`] at any rank. See [`max_pool3d_with_indices`] for the rules.
///
/// ```
/// use burn::tensor::ops::MaxPoolOptions;
/// use burn::tensor::{Device, Tensor, TensorData};
/// use burn_unpool::max_pool_with_indices;
///
/// let device = Device::flex();
/// // The second window holds only -inf: its index is its own first element, 2.
/// let x = Tensor::<3>::from_floats([[[5.0, 1.0, f32::NEG_INFINITY, f32::NEG_INFINITY]]], &device);
/// let (pooled, indices) = max_pool_with_indices(x, MaxPoolOptions::new([2]));
/// pooled.into_data().assert_eq(&TensorData::from([[[5.0f32, f32::NEG_INFINITY]]]), false);
/// let indices = indices.into_tensor().into_data().convert::<i64>();
/// assert_eq!(indices, TensorData::from([[[0i64, 2]]]));
/// ```
///
/// # Panics
/// As [`max_pool3d_with_indices`], and when `options` has not `R - 2` spatial axes.
pub fn max_pool_with_indices<const D: usize, const R: usize>(
    x: Tensor<R>,
    options: MaxPoolOptions<D>,
) -> (Tensor<R>, PoolIndices<R>) {
    let spec = PoolSpec::from_pool(&options);
    let shape = x.dims();
    let plan = or_panic_with(plan_pool(&shape, &spec, &x.device()));
    let (pooled, indices) = pool_on_route(x, &spec, plan);
    let indices = PoolIndices {
        indices,
        pool: spec.geometry,
        ceil_mode: spec.ceil_mode,
        input_size: shape[2..].to_vec(),
    };
    (pooled, indices)
}

/// The pooled values and per-plane row-major indices (of `plan`'s index dtype) of `x`: this
/// crate's kernels on Flex, NdArray and the CubeCL devices; elsewhere, and for sizes the GPU
/// kernels do not address, a composition of Burn tensor ops with the same rules.
fn pool_on_route<const R: usize>(
    x: Tensor<R>,
    spec: &PoolSpec,
    plan: PoolPlan,
) -> (Tensor<R>, Tensor<R, Int>) {
    assert_value_dtype(&x);
    if runs_kernels(&x.device(), &plan) {
        pool_on_kernels(x, plan)
    } else {
        let index_dtype = plan.index_dtype();
        or_panic_with(composed_max_pool(
            x,
            spec,
            IndexOrder::RowMajor,
            index_dtype,
        ))
    }
}

/// `plan` run on `x` (float or integer values) by this crate's kernels, which run it on `x`'s
/// device ([`runs_kernels`]).
pub(crate) fn pool_on_kernels<const R: usize, K: UnpoolKind>(
    x: Tensor<R, K>,
    plan: PoolPlan,
) -> (Tensor<R, K>, Tensor<R, Int>) {
    let (values, indices) = K::max_pool_with_indices(x.into_dispatch(), plan);
    (
        Tensor::from_dispatch(values),
        Tensor::from_dispatch(indices),
    )
}

/// Panics, naming the dtype and the device, unless `x`'s device computes with its dtype.
pub(crate) fn assert_value_dtype<const R: usize, K: Basic>(x: &Tensor<R, K>) {
    let device = x.device();
    if !device.supports_dtype(x.dtype()) {
        panic!(
            "{}",
            PoolError::ValueDType {
                dtype: x.dtype(),
                device: format!("{device:?}"),
            }
        );
    }
}

/// The checked plan of `pool` over an input of `shape` on `device`, with the indices' dtype (built
/// once per shape and pool: [`PoolPlan::cached`]).
pub(crate) fn plan_pool(
    shape: &[usize],
    pool: &PoolSpec,
    device: &Device,
) -> Result<PoolPlan, PoolError> {
    let plane_len = shape.get(2..).map_or(0, |spatial| {
        spatial.iter().fold(1usize, |n, &d| n.saturating_mul(d))
    });
    PoolPlan::cached(shape, pool, pool_index_dtype(device, plane_len)?)
}

/// Whether the backend's own pool kernels run `plan` on `device`.
#[cfg_attr(not(feature = "wgpu"), allow(unused_variables))]
pub(crate) fn runs_kernels(device: &Device, plan: &PoolPlan) -> bool {
    match Kernels::of(device) {
        Kernels::Host => true,
        #[cfg(feature = "wgpu")]
        Kernels::Cube => crate::backend::cube::addresses_pool(plan),
        _ => false,
    }
}
