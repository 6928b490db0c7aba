//! The public tensor functions: check the arguments, then hand a plan to the backend.

use burn::backend::Dispatch;
use burn::tensor::{Device, Int, Tensor};

use crate::backend::UnpoolBackend;
use crate::checks::{self, UnpoolError, or_panic};
use crate::{MaxUnpoolOptions, UnpoolPlan};

/// 1-d max unpooling of `x` `[N, C, L]` with the indices of the pool that produced it.
///
/// See [`max_unpool`] for the rules and the panics.
///
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
pub fn max_unpool1d(
    x: Tensor<3>,
    indices: Tensor<3, Int>,
    options: MaxUnpoolOptions<1>,
) -> Tensor<3> {
    max_unpool(x, indices, options)
}

/// 2-d max unpooling of `x` `[N, C, H, W]` with the indices of the pool that produced it.
///
/// See [`max_unpool`] for the rules and the panics.
///
/// ```
/// use burn::tensor::module::max_pool2d_with_indices;
/// use burn::tensor::ops::MaxPoolOptions;
/// use burn::tensor::{Device, Tensor, TensorData};
/// use burn_unpool::{MaxUnpoolOptions, max_unpool2d};
///
/// let device = Device::flex();
/// let image = Tensor::<4>::from_floats([[[[1.0, 5.0], [3.0, 2.0]]]], &device);
/// let pool = MaxPoolOptions::new([2, 2]);
/// let (pooled, indices) = max_pool2d_with_indices(image, pool.clone());
/// let restored = max_unpool2d(pooled, indices, MaxUnpoolOptions::from_pool(&pool));
/// restored.into_data().assert_eq(&TensorData::from([[[[0.0f32, 5.0], [0.0, 0.0]]]]), false);
/// ```
pub fn max_unpool2d(
    x: Tensor<4>,
    indices: Tensor<4, Int>,
    options: MaxUnpoolOptions<2>,
) -> Tensor<4> {
    max_unpool(x, indices, options)
}

/// 3-d max unpooling of `x` `[N, C, D, H, W]` with the indices of the pool that produced it.
///
/// See [`max_unpool`] for the rules and the panics.
///
/// ```
/// use burn::tensor::{Device, Int, Tensor};
/// use burn_unpool::{MaxUnpoolOptions, max_unpool3d};
///
/// let device = Device::flex();
/// let x = Tensor::<5>::ones([1, 2, 1, 1, 1], &device);
/// let indices = Tensor::<5, Int>::from_ints([[[[[7]]], [[[0]]]]], &device);
/// let y = max_unpool3d(x, indices, MaxUnpoolOptions::new([2, 2, 2]));
/// assert_eq!(y.dims(), [1, 2, 2, 2, 2]);
/// assert_eq!(y.sum().into_scalar::<f32>(), 2.0);
/// ```
pub fn max_unpool3d(
    x: Tensor<5>,
    indices: Tensor<5, Int>,
    options: MaxUnpoolOptions<3>,
) -> Tensor<5> {
    max_unpool(x, indices, options)
}

/// `D`-dimensional max unpooling of `x` `[N, C, D1..Dk]` (`R = D + 2`).
///
/// Writes every value of `x` into a zero-filled output `[N, C, O1..Ok]` at the position its index
/// gives. The output size defaults to the pool's input size,
/// `O = (I - 1) * stride - (pad_begin + pad_end) + dilation * (kernel - 1) + 1`; an explicit size
/// may be set in `options`. Per-plane indices are read in the final output plane. With duplicate
/// indices the last value in row-major order of `x` wins, on every backend and every run.
/// Values are copied bit for bit.
///
/// # Panics
/// With a message naming the problem and the values, when the ranks or shapes do not fit, a kernel
/// size, stride or dilation is zero, the padding leaves no output, a full output size has another
/// `N` or `C`, the indices are not i32/i64 or too narrow, or an index is out of range (the first
/// such index, its position and the valid range).
///
/// Float indices are refused by the type system:
///
/// ```compile_fail
/// use burn::tensor::{Device, Tensor};
/// use burn_unpool::{MaxUnpoolOptions, max_unpool1d};
///
/// let device = Device::flex();
/// let x = Tensor::<3>::ones([1, 1, 2], &device);
/// let float_indices = Tensor::<3>::zeros([1, 1, 2], &device);
/// let _ = max_unpool1d(x, float_indices, MaxUnpoolOptions::new([2]));
/// ```
pub fn max_unpool<const D: usize, const R: usize>(
    x: Tensor<R>,
    indices: Tensor<R, Int>,
    options: MaxUnpoolOptions<D>,
) -> Tensor<R> {
    let plan = or_panic(checked_plan(&x, &indices, &options));
    or_panic(check_index_values_on_device(&indices, &plan));
    unpool_with_plan(x, indices, plan)
}

/// [`max_unpool`] without the device-side index check, for indices the caller vouches for (those
/// of the matching max pool).
///
/// On GPU devices the checked call reads one word back from the device before it runs the op,
/// which waits for the queued work to finish; this call does not. Every other check still runs, and
/// CPU devices check index values anyway (while they read them, at no extra cost). An
/// out-of-range index on a GPU device is skipped: it is never written, and the output is as if that
/// element of `x` were missing.
///
/// ```
/// use burn::tensor::{Device, Int, Tensor, TensorData};
/// use burn_unpool::{MaxUnpoolOptions, max_unpool_unchecked};
///
/// let device = Device::flex();
/// let x = Tensor::<3>::from_floats([[[7.0, 9.0]]], &device);
/// let indices = Tensor::<3, Int>::from_ints([[[1, 2]]], &device);
/// let y = max_unpool_unchecked(x, indices, MaxUnpoolOptions::new([2]));
/// y.into_data().assert_eq(&TensorData::from([[[0.0f32, 7.0, 9.0, 0.0]]]), false);
/// ```
pub fn max_unpool_unchecked<const D: usize, const R: usize>(
    x: Tensor<R>,
    indices: Tensor<R, Int>,
    options: MaxUnpoolOptions<D>,
) -> Tensor<R> {
    let plan = or_panic(checked_plan(&x, &indices, &options));
    unpool_with_plan(x, indices, plan)
}

/// The gradient of `x` of [`max_unpool`] for the output gradient `grad`.
///
/// `dx[p] = grad[indices[p]]` if element `p` won the write at `indices[p]`, else `0`: the exact
/// derivative of the forward. (PyTorch gives every duplicate writer the gradient.)
///
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
///
/// # Panics
/// As [`max_unpool`], and when `grad` does not have the output's shape.
pub fn max_unpool_backward<const D: usize, const R: usize>(
    grad: Tensor<R>,
    indices: Tensor<R, Int>,
    options: MaxUnpoolOptions<D>,
) -> Tensor<R> {
    let plan = or_panic(checks::plan(&indices.dims(), &indices.dims(), &options));
    or_panic(checks::index_dtype(indices.dtype(), &plan));
    or_panic(checks::gradient_shape(&grad.dims(), &plan));
    or_panic(check_index_values_on_device(&indices, &plan));
    Tensor::from_dispatch(<Dispatch as UnpoolBackend>::max_unpool_backward(
        grad.into_dispatch(),
        indices.into_dispatch(),
        plan,
    ))
}

/// Every check of [`max_unpool`] that needs no index values, and the resulting plan.
pub(crate) fn checked_plan<const D: usize, const R: usize>(
    x: &Tensor<R>,
    indices: &Tensor<R, Int>,
    options: &MaxUnpoolOptions<D>,
) -> Result<UnpoolPlan, UnpoolError> {
    let plan = checks::plan(&x.dims(), &indices.dims(), options)?;
    checks::index_dtype(indices.dtype(), &plan)?;
    Ok(plan)
}

/// Runs a checked plan on the backend of `x`.
pub(crate) fn unpool_with_plan<const R: usize>(
    x: Tensor<R>,
    indices: Tensor<R, Int>,
    plan: UnpoolPlan,
) -> Tensor<R> {
    Tensor::from_dispatch(<Dispatch as UnpoolBackend>::max_unpool(
        x.into_dispatch(),
        indices.into_dispatch(),
        plan,
    ))
}

/// Reports out-of-range index values before the op runs on devices whose kernels skip them (the
/// GPU devices): one word is read back, and the indices only when it says some are bad.
pub(crate) fn check_index_values_on_device<const R: usize>(
    indices: &Tensor<R, Int>,
    plan: &UnpoolPlan,
) -> Result<(), UnpoolError> {
    if !kernels_skip_invalid_indices(&indices.device()) {
        return Ok(());
    }
    let flag = Tensor::<1, Int>::from_dispatch(
        <Dispatch as UnpoolBackend>::max_unpool_invalid_index_flag(
            indices.clone().into_dispatch(),
            plan.clone(),
        ),
    );
    if flag.into_data().iter::<u32>().all(|word| word == 0) {
        return Ok(());
    }
    checks::index_values(&indices.clone().into_data(), plan)
}

/// Whether `device` runs kernels that skip invalid indices instead of reporting them.
fn kernels_skip_invalid_indices(device: &Device) -> bool {
    #[cfg(feature = "wgpu")]
    {
        matches!(
            device.as_dispatch().clone().inner(),
            burn::backend::DispatchDevice::Cube(_)
        )
    }
    #[cfg(not(feature = "wgpu"))]
    {
        let _ = device;
        false
    }
}
