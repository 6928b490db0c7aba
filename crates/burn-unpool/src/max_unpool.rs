//! The public unpooling functions: check the arguments, make the plan, run it.

use burn::tensor::{Int, Tensor};

use crate::MaxUnpoolOptions;
use crate::error::{UnpoolError, or_panic};
use crate::indices::IndexSource::{Pooled, Raw};
use crate::indices::UnpoolIndices;
use crate::kind::UnpoolKind;
use crate::op;
use crate::plan::{UnpoolRequest, checks};

macro_rules! max_unpool_nd {
    ($name:ident, $dims:literal, $rank:literal, $shape:literal) => {
        #[doc = concat!($dims, "-d max unpooling of `x` `", $shape, "` with the indices of the pool that produced it.")]
        /// See [`max_unpool`] for the rules and the panics.
        #[track_caller]
        pub fn $name<K: UnpoolKind>(
            x: Tensor<$rank, K>,
            indices: impl Into<UnpoolIndices<$rank>>,
            options: MaxUnpoolOptions<$dims>,
        ) -> Tensor<$rank, K> {
            max_unpool(x, indices, options)
        }
    };
}

max_unpool_nd!(max_unpool1d, 1, 3, "[N, C, L]");

max_unpool_nd!(max_unpool2d, 2, 4, "[N, C, H, W]");

max_unpool_nd!(max_unpool3d, 3, 5, "[N, C, D, H, W]");

/// `D`-dimensional max unpooling of `x` `[N, C, D1..Dk]` (`R = D + 2`): every value of `x` is
/// written into a zero-filled `[N, C, O1..Ok]` at the position its index gives.
///
/// For raw indices the output size defaults to
/// `O = (I - 1) * stride - (pad_begin + pad_end) + dilation * (kernel - 1) + 1`; of duplicate
/// indices the last in row-major order wins. See the [guide](crate::guide).
/// ```
/// use burn::tensor::{Device, Int, Tensor, TensorData};
/// use burn_unpool::{MaxUnpoolOptions, max_unpool1d};
///
/// let device = Device::flex();
/// let x = Tensor::<3>::from_floats([[[7.0, 9.0]]], &device);
/// let indices = Tensor::<3, Int>::from_ints([[[1, 2]]], &device);
/// let y = max_unpool1d(x, indices, MaxUnpoolOptions::new([2]));
/// y.into_data().assert_eq(&TensorData::from([[[0.0f32, 7.0, 9.0, 0.0]]]), false);
/// ```
/// # Panics
/// With a message naming the problem and its values, e.g. the first index out of range.
#[track_caller]
pub fn max_unpool<const D: usize, const R: usize, K: UnpoolKind>(
    x: Tensor<R, K>,
    indices: impl Into<UnpoolIndices<R>>,
    options: MaxUnpoolOptions<D>,
) -> Tensor<R, K> {
    let (indices, request) = or_panic(request_for(&options, indices.into()));
    let plan = or_panic(op::forward_plan(&x, &indices, &request));
    op::unpool(x, indices, plan)
}

/// The gradient of `x` of [`max_unpool`] for the output gradient `grad`.
///
/// `dx[p] = grad[indices[p]]` if element `p` won the write at `indices[p]`, else `0`.
/// ```
/// use burn::tensor::{Device, Int, Tensor, TensorData};
/// use burn_unpool::{MaxUnpoolOptions, max_unpool_backward};
///
/// let device = Device::flex();
/// // Both elements point at position 1; the second one won the forward.
/// let indices = Tensor::<3, Int>::from_ints([[[1, 1]]], &device);
/// let grad = Tensor::<3>::from_floats([[[10.0, 20.0, 30.0, 40.0]]], &device);
/// let dx = max_unpool_backward(grad, indices, MaxUnpoolOptions::<1>::new([2]));
/// dx.into_data().assert_eq(&TensorData::from([[[0.0f32, 20.0]]]), false);
/// ```
/// # Panics
/// As [`max_unpool`], and when `grad` does not have the output's shape.
#[track_caller]
pub fn max_unpool_backward<const D: usize, const R: usize>(
    grad: Tensor<R>,
    indices: impl Into<UnpoolIndices<R>>,
    options: MaxUnpoolOptions<D>,
) -> Tensor<R> {
    let (indices, request) = or_panic(request_for(&options, indices.into()));
    let plan = or_panic(op::backward_plan(&grad, &indices, &request));
    op::unpool_backward(grad, indices, plan)
}

fn request_for<const D: usize, const R: usize>(
    options: &MaxUnpoolOptions<D>,
    indices: UnpoolIndices<R>,
) -> Result<(Tensor<R, Int>, UnpoolRequest), UnpoolError> {
    let mut request = UnpoolRequest::new(options);
    match indices.0 {
        Raw(indices) => Ok((indices, request)),
        Pooled(pooled) => {
            let (indices, pool, input_size) = pooled.into_parts();
            checks::pool_geometry_use(&pool, &request.geometry)?;
            request.pool_input = Some(input_size);
            Ok((indices, request))
        }
    }
}
