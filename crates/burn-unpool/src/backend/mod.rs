//! The backend op: one extension trait, implemented per backend family.
//!
//! Flex and NdArray run the CPU kernels of `crate::kernel`; the CubeCL devices (feature `wgpu`:
//! wgpu, vulkan, metal, fused or not) run CubeCL kernels; autodiff wraps any of them with the exact
//! (winner-only) backward. Devices of other backends, and plans the GPU kernels do not address,
//! are served by the tensor functions with a composition of Burn's own ops (`crate::composed`).

// NdArray is deprecated in Burn 0.22 but still shipped, and supported here.
#![allow(deprecated)]
// With no backend feature, the trait's dispatch has no backend to call and the plan checks that
// the backends run have no caller: every device then runs the composition.
#![cfg_attr(
    not(any(feature = "flex", feature = "ndarray", feature = "wgpu")),
    allow(unused_variables, dead_code)
)]

mod autodiff;
#[cfg(feature = "wgpu")]
pub(crate) mod cube;
#[cfg(feature = "flex")]
mod flex;
#[cfg(any(feature = "flex", feature = "ndarray"))]
mod host;
#[cfg(feature = "ndarray")]
mod ndarray;

use burn::backend::tensor::{FloatTensor, IntTensor};
use burn::backend::{Backend, TensorMetadata, backend_extension};
use burn::tensor::{Shape, TensorData, read_sync};

use crate::kernel::host::{HostTensor, check_index_values};
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
/// was made for. An index outside its range is never written: the CPU kernels report it when the
/// options asked for the index check (a panic naming it), the GPU kernels skip it, so a caller who
/// wants it reported there reads
/// [`max_unpool_index_check`](UnpoolBackend::max_unpool_index_check) first, as the tensor
/// functions do. The GPU unpooling kernels address up to `u32::MAX - 1` elements with indices
/// read in the output plane, the GPU pool kernels pools of 1 to 3 axes whose positions stay below
/// 2^31; they panic on other plans, which the tensor functions route elsewhere.
#[backend_extension(
    Flex: cfg(feature = "flex"),
    NdArray: cfg(feature = "ndarray"),
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
    /// position of each in the unpadded input (of dtype `plan.index_dtype()`); for a plan with
    /// global indices (ONNX's), that position plus the elements of the planes before it.
    ///
    /// Each window's first maximum in scan order, or its last NaN where it holds NaNs; every
    /// index lies inside its own window, so padding never wins.
    #[fusion(meta = pool_outputs)]
    fn max_pool_with_indices(
        x: FloatTensor<Self>,
        plan: PoolPlan,
    ) -> (FloatTensor<Self>, IntTensor<Self>);

    /// [`max_pool_with_indices`](UnpoolBackend::max_pool_with_indices) for integer values (no
    /// gradient): the first maximum of each window in scan order.
    #[fusion(meta = pool_outputs)]
    fn max_pool_with_indices_int(
        x: IntTensor<Self>,
        plan: PoolPlan,
    ) -> (IntTensor<Self>, IntTensor<Self>);

    /// The gradient of the pool's `x` for the pooled values' gradient `grad`: each window's
    /// gradient added at its index (written once where the windows are disjoint), in a fixed
    /// order, so every run gives the same bits.
    #[fusion(dtype = grad, shape = plan.checked_pool_input_shape(grad, indices))]
    fn max_pool_with_indices_backward(
        grad: FloatTensor<Self>,
        indices: IntTensor<Self>,
        plan: PoolPlan,
    ) -> FloatTensor<Self>;

    /// A `[1]` tensor of dtype `U32` that says what a pass over the indices found, one bit each:
    ///
    /// - [`INDEX_OUT_OF_RANGE`] (bit 0): some index is outside its valid range.
    /// - [`INDEX_MAY_SHARE_TARGET`] (bit 1): some index may lie outside its own pool cell, so two
    ///   indices may target one output position. Set whenever the backend does not look: only
    ///   its absence is a promise, which lets the GPU kernels write every position once.
    ///
    /// The default body reads the indices to the host and sets bit 1; the GPU devices answer on
    /// the device, so only one word travels.
    #[fusion(dtype = burn::tensor::DType::U32, shape = plan.checked_flag_shape(indices))]
    fn max_unpool_index_check(indices: IntTensor<Self>, plan: UnpoolPlan) -> IntTensor<Self> {
        plan.checked_flag_shape(&indices.shape());
        let device = indices.device();
        let data = read_sync(Self::int_into_data(indices)).expect("reading the indices");
        let host = HostTensor {
            bytes: data.as_bytes(),
            dtype: data.dtype(),
        };
        let mut word = INDEX_MAY_SHARE_TARGET;
        if check_index_values(host, &plan).is_err() {
            word |= INDEX_OUT_OF_RANGE;
        }
        Self::int_from_data(TensorData::new(vec![word], [1]), &device)
    }
}

/// Bit of [`UnpoolBackend::max_unpool_index_check`]'s word: some index is outside its valid range.
pub const INDEX_OUT_OF_RANGE: u32 = 1;

/// Bit of [`UnpoolBackend::max_unpool_index_check`]'s word: some index may share its output
/// position with another (it may lie outside its own pool cell, or the backend did not look).
pub const INDEX_MAY_SHARE_TARGET: u32 = 2;

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
        self.assert_indices("max_unpool_index_check", indices);
        Shape::new([1])
    }
}

/// The trait method that runs `direction`.
fn op_name(direction: Direction) -> &'static str {
    match direction {
        Direction::Forward => "max_unpool",
        Direction::Backward => "max_unpool_backward",
    }
}
