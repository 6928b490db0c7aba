//! The backend op: one extension trait, implemented per backend family.
//!
//! Flex and NdArray run the CPU kernels of `crate::kernel`; the CubeCL devices (feature `wgpu`:
//! wgpu, vulkan, metal, fused or not) run CubeCL kernels; autodiff wraps any of them with the exact
//! (winner-only) backward. Devices of other backends, and plans the GPU kernels do not address,
//! are served by the tensor functions with a composition of Burn's own ops (`crate::composed`).

// NdArray is deprecated in Burn 0.22 but still shipped, and supported here.
#![allow(deprecated)]

mod autodiff;
#[cfg(feature = "wgpu")]
pub(crate) mod cube;
mod flex;
mod ndarray;

use burn::backend::tensor::{FloatTensor, IntTensor};
use burn::backend::{Backend, TensorMetadata, backend_extension};
use burn::tensor::{Shape, TensorData, read_sync};

use crate::kernel::host::{self, HostTensor};
use crate::kernel::pool as pool_kernel;
use crate::plan::Direction;
use crate::{PoolPlan, UnpoolPlan};

/// Backends with their own unpooling kernels: Flex, NdArray and the CubeCL devices (feature
/// `wgpu`), with and without Fusion and Autodiff.
///
/// Users call the functions of the crate root, which check the arguments, choose between these
/// kernels and the portable composition, and report bad indices. The trait is the layer below,
/// for code that already holds a checked [`UnpoolPlan`]:
///
/// ```
/// use burn::backend::Dispatch;
/// use burn::tensor::{Device, Int, Tensor};
/// use burn_unpool::{MaxUnpoolOptions, UnpoolBackend, UnpoolPlan};
///
/// let device = Device::flex();
/// let x = Tensor::<3>::from_floats([[[1.0, 2.0]]], &device);
/// let indices = Tensor::<3, Int>::from_ints([[[1, 2]]], &device);
/// let plan = UnpoolPlan::new(&x.dims(), &indices.dims(), &MaxUnpoolOptions::new([2])).unwrap();
/// let y = Tensor::<3>::from_dispatch(<Dispatch as UnpoolBackend>::max_unpool(
///     x.into_dispatch(),
///     indices.into_dispatch(),
///     plan,
/// ));
/// assert_eq!(y.dims(), [1, 1, 4]);
/// ```
///
/// Every implementation panics, before it touches memory, when the tensors are not those the plan
/// was made for. An index outside its range is never written: the CPU kernels report it when
/// [`UnpoolPlan::reports_invalid_indices`] says so (a panic naming it), the GPU kernels skip it, so
/// a caller who wants it reported there reads
/// [`max_unpool_invalid_index_flag`](UnpoolBackend::max_unpool_invalid_index_flag) first, as the
/// tensor functions do. The GPU kernels address up to `u32::MAX - 1` elements with indices read
/// in the output plane; they panic on other plans, which the tensor functions route elsewhere.
#[backend_extension(
    Flex,
    NdArray,
    Autodiff,
    Cube: cfg(feature = "wgpu"),
    Fusion: cfg(feature = "wgpu")
)]
pub trait UnpoolBackend: Backend {
    /// Writes every value of `x` into a zero-filled output of shape `plan.output_shape()` at the
    /// position its index gives; with duplicate indices the last in row-major order of `x` wins.
    #[fusion(dtype = x, shape = plan.checked_result_shape(Direction::Forward, x, indices))]
    fn max_unpool(
        x: FloatTensor<Self>,
        indices: IntTensor<Self>,
        plan: UnpoolPlan,
    ) -> FloatTensor<Self>;

    /// [`max_unpool`](UnpoolBackend::max_unpool) for integer values (no gradient).
    #[fusion(dtype = x, shape = plan.checked_result_shape(Direction::Forward, x, indices))]
    fn max_unpool_int(
        x: IntTensor<Self>,
        indices: IntTensor<Self>,
        plan: UnpoolPlan,
    ) -> IntTensor<Self>;

    /// The gradient of `x` for the output gradient `grad`: `grad[indices[p]]` where element `p`
    /// won the write at `indices[p]`, zero elsewhere. It is also the adjoint of [`max_unpool`].
    ///
    /// [`max_unpool`]: UnpoolBackend::max_unpool
    #[fusion(dtype = grad, shape = plan.checked_result_shape(Direction::Backward, grad, indices))]
    fn max_unpool_backward(
        grad: FloatTensor<Self>,
        indices: IntTensor<Self>,
        plan: UnpoolPlan,
    ) -> FloatTensor<Self>;

    /// Max-pools `x` as `plan` says: the pooled values and, per `(n, c)` plane, the row-major
    /// position of each in the unpadded input (of dtype `plan.index_dtype()`).
    ///
    /// Each window's first maximum in scan order, or its last NaN where it holds NaNs; every
    /// index lies inside its own window, so padding never wins.
    #[fusion(meta = pool_outputs)]
    fn max_pool_with_indices(
        x: FloatTensor<Self>,
        plan: PoolPlan,
    ) -> (FloatTensor<Self>, IntTensor<Self>);

    /// The gradient of the pool's `x` for the pooled values' gradient `grad`: each window's
    /// gradient added at its index (written once where the windows are disjoint), in a fixed
    /// order, so every run gives the same bits.
    #[fusion(dtype = grad, shape = plan.checked_pool_input_shape(grad, indices))]
    fn max_pool_with_indices_backward(
        grad: FloatTensor<Self>,
        indices: IntTensor<Self>,
        plan: PoolPlan,
    ) -> FloatTensor<Self>;

    /// A `[1]` tensor of dtype `U32`: 1 when some index is outside its valid range, else 0.
    ///
    /// The default body reads the indices to the host; the GPU devices answer on the device, so
    /// only one word travels.
    #[fusion(dtype = burn::tensor::DType::U32, shape = plan.checked_flag_shape(indices))]
    fn max_unpool_invalid_index_flag(
        indices: IntTensor<Self>,
        plan: UnpoolPlan,
    ) -> IntTensor<Self> {
        plan.checked_flag_shape(&indices.shape());
        let device = indices.device();
        let data = read_sync(Self::int_into_data(indices)).expect("reading the indices");
        let host = HostTensor {
            bytes: data.as_bytes(),
            dtype: data.dtype(),
        };
        let invalid = host::check_index_values(host, &plan).is_err();
        Self::int_from_data(TensorData::new(vec![u32::from(invalid)], [1]), &device)
    }
}

/// `B`'s op in `direction`: [`UnpoolBackend::max_unpool`] or [`UnpoolBackend::max_unpool_backward`].
pub(crate) fn run<B: UnpoolBackend>(
    direction: Direction,
    input: FloatTensor<B>,
    indices: IntTensor<B>,
    plan: UnpoolPlan,
) -> FloatTensor<B> {
    match direction {
        Direction::Forward => B::max_unpool(input, indices, plan),
        Direction::Backward => B::max_unpool_backward(input, indices, plan),
    }
}

/// The pool's outputs as Fusion registers them: the values, of `x`'s dtype, and the indices.
#[cfg(feature = "wgpu")]
fn pool_outputs(
    x: &burn::backend::fusion::custom::TensorSpec,
    plan: &PoolPlan,
) -> (
    burn::backend::fusion::custom::TensorSpec,
    burn::backend::fusion::custom::TensorSpec,
) {
    use burn::backend::fusion::custom::TensorSpec;
    plan.assert_input("max_pool_with_indices", &x.shape);
    let shape = Shape::from(plan.output_shape());
    (
        TensorSpec::new(shape.clone(), x.dtype),
        TensorSpec::new(shape, plan.index_dtype()),
    )
}

impl PoolPlan {
    /// `x`'s shape, after checking the gradient and the indices against this plan.
    #[track_caller]
    pub(crate) fn checked_pool_input_shape(&self, grad: &[usize], indices: &[usize]) -> Shape {
        self.assert_pooled("max_pool_with_indices_backward", grad, indices);
        Shape::from(self.input_shape())
    }
}

impl UnpoolPlan {
    /// The shape of what `direction` computes, after checking its inputs against this plan.
    #[track_caller]
    pub(crate) fn checked_result_shape(
        &self,
        direction: Direction,
        input: &[usize],
        indices: &[usize],
    ) -> Shape {
        self.assert_inputs(op_name(direction), input, indices, direction);
        Shape::from(self.result_shape(direction))
    }

    /// The flag's shape `[1]`, after checking that `indices` are those of this plan.
    #[track_caller]
    pub(crate) fn checked_flag_shape(&self, indices: &[usize]) -> Shape {
        self.assert_indices("max_unpool_invalid_index_flag", indices);
        Shape::new([1])
    }
}

/// A contiguous row-major view of a host tensor, borrowed or (for a strided one) copied.
pub(crate) enum HostView<'a> {
    Borrowed(HostTensor<'a>),
    Copied(TensorData),
}

impl HostView<'_> {
    fn tensor(&self) -> HostTensor<'_> {
        match self {
            Self::Borrowed(tensor) => *tensor,
            Self::Copied(data) => HostTensor {
                bytes: data.as_bytes(),
                dtype: data.dtype(),
            },
        }
    }
}

/// Implements [`UnpoolBackend`] for a backend whose tensors are in host memory with the CPU
/// kernels: `$view` gives a tensor's [`HostView`], `$wrap` turns the kernels' data into a tensor.
/// Bad indices panic with the kernels' message.
macro_rules! host_backend {
    ($backend:ty, $tensor:ty, view: $view:expr, wrap: $wrap:expr) => {
        impl $crate::backend::UnpoolBackend for $backend {
            fn max_unpool(x: $tensor, indices: $tensor, plan: $crate::UnpoolPlan) -> $tensor {
                use $crate::plan::Direction::Forward;
                $crate::backend::run_on_host(Forward, x, indices, plan, $view, $wrap)
            }

            fn max_unpool_int(x: $tensor, indices: $tensor, plan: $crate::UnpoolPlan) -> $tensor {
                use $crate::plan::Direction::Forward;
                $crate::backend::run_on_host(Forward, x, indices, plan, $view, $wrap)
            }

            fn max_unpool_backward(
                grad: $tensor,
                indices: $tensor,
                plan: $crate::UnpoolPlan,
            ) -> $tensor {
                use $crate::plan::Direction::Backward;
                $crate::backend::run_on_host(Backward, grad, indices, plan, $view, $wrap)
            }

            fn max_pool_with_indices(x: $tensor, plan: $crate::PoolPlan) -> ($tensor, $tensor) {
                $crate::backend::pool_on_host(x, plan, $view, $wrap)
            }

            fn max_pool_with_indices_backward(
                grad: $tensor,
                indices: $tensor,
                plan: $crate::PoolPlan,
            ) -> $tensor {
                $crate::backend::pool_backward_on_host(grad, indices, plan, $view, $wrap)
            }
        }
    };
}
pub(crate) use host_backend;

/// The body of [`host_backend`]'s methods.
pub(crate) fn run_on_host<T: TensorMetadata>(
    direction: Direction,
    input: T,
    indices: T,
    plan: UnpoolPlan,
    view: for<'a> fn(&'a T) -> HostView<'a>,
    wrap: fn(TensorData) -> T,
) -> T {
    plan.checked_result_shape(direction, &input.shape(), &indices.shape());
    let (input, indices) = (view(&input), view(&indices));
    let data = host::run(direction, input.tensor(), indices.tensor(), &plan);
    wrap(crate::error::or_panic(data))
}

/// [`UnpoolBackend::max_pool_with_indices`] on the host kernels.
pub(crate) fn pool_on_host<T: TensorMetadata>(
    x: T,
    plan: PoolPlan,
    view: for<'a> fn(&'a T) -> HostView<'a>,
    wrap: fn(TensorData) -> T,
) -> (T, T) {
    plan.assert_input("max_pool_with_indices", &x.shape());
    let (values, indices) = pool_kernel::run_pool(view(&x).tensor(), &plan);
    (wrap(values), wrap(indices))
}

/// [`UnpoolBackend::max_pool_with_indices_backward`] on the host kernels.
pub(crate) fn pool_backward_on_host<T: TensorMetadata>(
    grad: T,
    indices: T,
    plan: PoolPlan,
    view: for<'a> fn(&'a T) -> HostView<'a>,
    wrap: fn(TensorData) -> T,
) -> T {
    plan.checked_pool_input_shape(&grad.shape(), &indices.shape());
    let (grad, indices) = (view(&grad), view(&indices));
    wrap(pool_kernel::run_pool_backward(
        grad.tensor(),
        indices.tensor(),
        &plan,
    ))
}

/// The trait method that runs `direction`.
fn op_name(direction: Direction) -> &'static str {
    match direction {
        Direction::Forward => "max_unpool",
        Direction::Backward => "max_unpool_backward",
    }
}
