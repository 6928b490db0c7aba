//! The public tensor functions: check the arguments, then run the plan where it runs best.

use burn::backend::Dispatch;
use burn::tensor::{Device, DispatchTensor, Int, Tensor};

use crate::backend::{INDEX_MAY_SHARE_TARGET, INDEX_OUT_OF_RANGE, UnpoolBackend};
use crate::checks;
use crate::composed;
use crate::diagnostics::{self, Path};
use crate::error::{UnpoolError, or_panic};
use crate::kernel::host::{self, HostTensor};
use crate::kind::UnpoolKind;
use crate::plan::{Direction, Request};
use crate::pool::IndexSource::{Pooled, Raw};
use crate::pool::UnpoolIndices;
use crate::route::Kernels;
use crate::{MaxUnpoolOptions, UnpoolPlan};

/// Defines `max_unpool{1,2,3}d`: [`max_unpool`] at one rank, for type inference.
macro_rules! max_unpool_nd {
    ($name:ident, $dims:literal, $rank:literal, $shape:literal, $example:literal) => {
        #[doc = concat!($dims, "-d max unpooling of `x` `", $shape, "` with the indices of the pool that produced it.")]
        ///
        /// See [`max_unpool`] for the rules and the panics.
        ///
        /// ```
        #[doc = $example]
        /// ```
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

max_unpool_nd!(
    max_unpool1d,
    1,
    3,
    "[N, C, L]",
    r#"
use burn::tensor::{Device, Int, Tensor, TensorData};
use burn_unpool::{MaxUnpoolOptions, max_unpool1d};

let device = Device::flex();
let x = Tensor::<3>::from_floats([[[7.0, 9.0]]], &device);
let indices = Tensor::<3, Int>::from_ints([[[1, 2]]], &device);
let y = max_unpool1d(x, indices, MaxUnpoolOptions::new([2]));
y.into_data().assert_eq(&TensorData::from([[[0.0f32, 7.0, 9.0, 0.0]]]), false);
"#
);

max_unpool_nd!(
    max_unpool2d,
    2,
    4,
    "[N, C, H, W]",
    r#"
use burn::tensor::module::max_pool2d_with_indices;
use burn::tensor::ops::MaxPoolOptions;
use burn::tensor::{Device, Tensor, TensorData};
use burn_unpool::{MaxUnpoolOptions, max_unpool2d};

let device = Device::flex();
let image = Tensor::<4>::from_floats([[[[1.0, 5.0], [3.0, 2.0]]]], &device);
let pool = MaxPoolOptions::new([2, 2]);
let (pooled, indices) = max_pool2d_with_indices(image, pool.clone());
let restored = max_unpool2d(pooled, indices, MaxUnpoolOptions::from_pool(&pool));
restored.into_data().assert_eq(&TensorData::from([[[[0.0f32, 5.0], [0.0, 0.0]]]]), false);
"#
);

max_unpool_nd!(
    max_unpool3d,
    3,
    5,
    "[N, C, D, H, W]",
    r#"
use burn::tensor::{Device, Int, Tensor};
use burn_unpool::{MaxUnpoolOptions, max_unpool3d};

let device = Device::flex();
let x = Tensor::<5>::ones([1, 2, 1, 1, 1], &device);
let indices = Tensor::<5, Int>::from_ints([[[[[7]]], [[[0]]]]], &device);
let y = max_unpool3d(x, indices, MaxUnpoolOptions::new([2, 2, 2]));
assert_eq!(y.dims(), [1, 2, 2, 2, 2]);
assert_eq!(y.sum().into_scalar::<f32>(), 2.0);
"#
);

/// `D`-dimensional max unpooling of `x` `[N, C, D1..Dk]` (`R = D + 2`).
///
/// Writes every value of `x` into a zero-filled output `[N, C, O1..Ok]` at the position its index
/// gives. The indices are a raw tensor, or the [`PoolIndices`](crate::PoolIndices) of this crate's
/// pools, which bring the pool's input size as the output size and need no index check. For raw
/// indices the output size defaults to
/// `O = (I - 1) * stride - (pad_begin + pad_end) + dilation * (kernel - 1) + 1`; an explicit size
/// may be set in `options`. Per-plane indices are read in the final output plane. With duplicate
/// indices the last value in row-major order of `x` wins, on every device and every run.
/// Values are float or integer ([`UnpoolKind`]) and copied bit for bit; indices may be of any
/// integer dtype, signed or unsigned.
///
/// # Panics
/// With a message naming the problem and the values, when the ranks or shapes do not fit, a kernel
/// size, stride or dilation is zero, the padding leaves no output, a full output size has another
/// `N` or `C`, `x` and the indices are on different devices, the device cannot compute with the
/// values' or the indices' dtype, the index dtype cannot hold every output position, or an index is out of range (the first such index,
/// its position and the valid range; see [`MaxUnpoolOptions::without_index_check`]).
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
#[track_caller]
pub fn max_unpool<const D: usize, const R: usize, K: UnpoolKind>(
    x: Tensor<R, K>,
    indices: impl Into<UnpoolIndices<R>>,
    options: MaxUnpoolOptions<D>,
) -> Tensor<R, K> {
    let (indices, request) = or_panic(request_for(&options, indices.into()));
    let plan = or_panic(plan_for(&x, &indices, request));
    unpool(x, indices, plan)
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
#[track_caller]
pub fn max_unpool_backward<const D: usize, const R: usize>(
    grad: Tensor<R>,
    indices: impl Into<UnpoolIndices<R>>,
    options: MaxUnpoolOptions<D>,
) -> Tensor<R> {
    let (indices, request) = or_panic(request_for(&options, indices.into()));
    let plan = or_panic(backward_plan(&grad, &indices, request));
    let on_backend = <Dispatch as UnpoolBackend>::max_unpool_backward;
    run(Direction::Backward, grad, indices, plan, on_backend)
}

/// The index tensor of `indices`, and the request of `options` for it: the indices of this
/// crate's pools bring the pool's input size, and options of another geometry contradict them.
fn request_for<const D: usize, const R: usize>(
    options: &MaxUnpoolOptions<D>,
    indices: UnpoolIndices<R>,
) -> Result<(Tensor<R, Int>, Request), UnpoolError> {
    let mut request = Request::new(options);
    match indices.0 {
        Raw(indices) => Ok((indices, request)),
        Pooled(pooled) => {
            let (indices, geometry, ceil_mode, input_size) = pooled.into_parts();
            checks::pool_geometry_use(
                (&geometry, ceil_mode),
                (&request.geometry, request.ceil_mode),
            )?;
            request.pool_input = Some(input_size);
            Ok((indices, request))
        }
    }
}

/// Every check of the forward that needs no index values, and the resulting plan.
pub(crate) fn plan_for<const R: usize, K: UnpoolKind>(
    x: &Tensor<R, K>,
    indices: &Tensor<R, Int>,
    request: Request,
) -> Result<UnpoolPlan, UnpoolError> {
    let plan = request.plan(&x.dims(), &indices.dims())?;
    check_tensors(x, indices, &plan, Direction::Forward)?;
    Ok(plan)
}

/// Every check of the backward that needs no index values, and the resulting plan.
fn backward_plan<const R: usize>(
    grad: &Tensor<R>,
    indices: &Tensor<R, Int>,
    request: Request,
) -> Result<UnpoolPlan, UnpoolError> {
    let plan = request.plan(&indices.dims(), &indices.dims())?;
    checks::gradient_shape(&grad.dims(), plan.output_shape())?;
    check_tensors(grad, indices, &plan, Direction::Backward)?;
    Ok(plan)
}

/// The checks on the tensors themselves (devices, dtypes, the result's bytes) for `direction`.
fn check_tensors<const R: usize, K: UnpoolKind>(
    values: &Tensor<R, K>,
    indices: &Tensor<R, Int>,
    plan: &UnpoolPlan,
    direction: Direction,
) -> Result<(), UnpoolError> {
    let device = values.device();
    checks::same_device(&device, &indices.device())?;
    checks::value_dtype(values.dtype(), &device)?;
    // An output no buffer can hold is the problem, whatever the indices' dtype could address.
    let result_shape = plan.result_shape(direction);
    checks::output_bytes(result_shape, values.dtype(), &device, buffer_limit(&device))?;
    checks::index_dtype(indices.dtype(), plan.index_range_end())?;
    checks::index_dtype_on(indices.dtype(), &device)
}

/// Runs a checked forward plan.
pub(crate) fn unpool<const R: usize, K: UnpoolKind>(
    x: Tensor<R, K>,
    indices: Tensor<R, Int>,
    plan: UnpoolPlan,
) -> Tensor<R, K> {
    run(Direction::Forward, x, indices, plan, K::max_unpool)
}

/// The backend op of one direction on the dispatch backend.
type BackendOp = fn(DispatchTensor, DispatchTensor, UnpoolPlan) -> DispatchTensor;

/// Runs a checked plan in `direction` (`input` is `x` or the output gradient) where it runs best;
/// `on_backend` is the backend op of `direction` for `input`'s kind.
fn run<const R: usize, K: UnpoolKind>(
    direction: Direction,
    input: Tensor<R, K>,
    indices: Tensor<R, Int>,
    plan: UnpoolPlan,
    on_backend: BackendOp,
) -> Tensor<R, K> {
    match PlanRoute::of(&input.device(), &plan) {
        PlanRoute::Composed => composed::run(direction, input, indices, &plan),
        route => {
            let plan = route.check_index_values(&indices, plan);
            let (input, indices) = (input.into_dispatch(), indices.into_dispatch());
            Tensor::from_dispatch(on_backend(input, indices, plan))
        }
    }
}

/// The most bytes one buffer may hold on `device`, where the device says (a GPU's largest
/// allocation); `None` on the CPU.
fn buffer_limit(device: &Device) -> Option<u64> {
    crate::bin_support::device_limits(device).map(|(largest_allocation, _)| largest_allocation)
}

/// What runs a plan on a device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PlanRoute {
    /// The CPU kernels (Flex, NdArray): they check index values while they read them.
    HostKernels,
    /// The GPU kernels: they skip bad indices, so a checked call asks the device first.
    DeviceKernels,
    /// The portable composition: devices of other backends, plans the GPU kernels do not address.
    Composed,
}

impl PlanRoute {
    // Only the GPU route depends on the plan.
    #[cfg_attr(not(feature = "wgpu"), allow(unused_variables))]
    fn of(device: &Device, plan: &UnpoolPlan) -> Self {
        match Kernels::of(device) {
            Kernels::Host => Self::HostKernels,
            #[cfg(feature = "wgpu")]
            Kernels::Cube if crate::backend::cube::addresses(plan) => Self::DeviceKernels,
            _ => Self::Composed,
        }
    }

    /// Reports an out-of-range index before the GPU kernels skip it, for a plan that checks its
    /// indices: one word is read back from the device, and the indices only when it says some
    /// are bad. The same word tells whether every index lies in its own cell, which lets the
    /// kernels take their one-pass form.
    #[track_caller]
    fn check_index_values<const R: usize>(
        self,
        indices: &Tensor<R, Int>,
        plan: UnpoolPlan,
    ) -> UnpoolPlan {
        if self != Self::DeviceKernels || !plan.reports_invalid_indices() {
            return plan;
        }
        diagnostics::record(Path::DeviceIndexCheck);
        let flag =
            Tensor::<1, Int>::from_dispatch(<Dispatch as UnpoolBackend>::max_unpool_index_check(
                indices.clone().into_dispatch(),
                plan.clone(),
            ));
        let word = flag.into_data().iter::<u32>().next().unwrap_or(0);
        if word & INDEX_OUT_OF_RANGE != 0 {
            let data = indices.clone().into_data();
            let host = HostTensor {
                bytes: data.as_bytes(),
                dtype: data.dtype(),
            };
            or_panic(host::check_index_values(host, &plan));
        }
        if word & INDEX_MAY_SHARE_TARGET == 0 {
            plan.with_indices_in_cells()
        } else {
            plan
        }
    }
}
