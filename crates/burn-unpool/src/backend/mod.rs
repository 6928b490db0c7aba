//! The backend op: an extension trait defaulting to the composition, and its kernels.

// Burn 0.22 deprecates NdArray but still ships it: the macro names it.
#![cfg_attr(feature = "ndarray", allow(deprecated))]
// Without a backend feature the dispatch calls no backend: every device runs the composition.
#![cfg_attr(
    not(any(
        feature = "flex",
        feature = "ndarray",
        feature = "wgpu",
        feature = "vulkan",
        feature = "metal"
    )),
    allow(unused_variables)
)]

mod autodiff;
pub mod composition;
#[cfg(any(feature = "flex", feature = "ndarray"))]
mod cpu;
#[cfg(feature = "cube")]
mod cube;
mod route;

#[cfg(any(feature = "wgpu", feature = "vulkan", feature = "metal"))]
use burn::backend::fusion::custom::TensorSpec;
use burn::backend::tensor::{FloatTensor, IntTensor};
use burn::backend::{Backend, backend_extension};
use burn::tensor::Shape;

pub use composition::{INDEX_MAY_SHARE_TARGET, INDEX_OUT_OF_RANGE};
pub use route::{DeviceLimits, Route, device_limits, route};

use crate::plan::{Direction, PoolPlan, UnpoolPlan};

/// Whether `route` runs `plan` on kernels that read its indices as 32-bit words (an i64 or u64
/// index as two), which devices without 64-bit integers run too.
pub(crate) fn reads_index_words(route: Route, plan: &UnpoolPlan) -> bool {
    match route {
        #[cfg(any(feature = "wgpu", feature = "vulkan", feature = "metal"))]
        Route::CubeKernels => cube::reads_index_words(plan),
        _ => false,
    }
}

/// This crate's ops on a backend, each defaulting to the [`composition`] of Burn's ops; Flex,
/// NdArray and CubeCL run kernels, autodiff adds the exact backward ([guide](crate::guide)).
/// Implementations panic before touching memory when the tensors are not the plan's, and never
/// write an out-of-range index (the CPU kernels report it where the plan checks indices).
#[cfg_attr(not(burn_next), backend_extension(
    Flex: cfg(feature = "flex"),
    NdArray: cfg(feature = "ndarray"),
    Autodiff,
    Cube: cfg(any(feature = "wgpu", feature = "vulkan", feature = "metal")),
    Fusion: cfg(any(feature = "wgpu", feature = "vulkan", feature = "metal"))
))]
// Burn 0.23 has no NdArray, and its macro refuses the name even behind a `cfg`.
#[cfg_attr(burn_next, backend_extension(
    Flex: cfg(feature = "flex"),
    Autodiff,
    Cube: cfg(any(feature = "wgpu", feature = "vulkan", feature = "metal")),
    Fusion: cfg(any(feature = "wgpu", feature = "vulkan", feature = "metal"))
))]
pub trait UnpoolBackend: Backend {
    /// Writes `x` into zeros at its indices; with duplicates the last in row-major order wins.
    #[fusion(dtype = x, shape = plan.checked_result_shape(Direction::Forward, x, indices))]
    fn max_unpool(
        x: FloatTensor<Self>,
        indices: IntTensor<Self>,
        plan: UnpoolPlan,
    ) -> FloatTensor<Self> {
        composition::max_unpool::<Self>(x, indices, plan)
    }

    /// [`max_unpool`](UnpoolBackend::max_unpool) for integer values (no gradient).
    #[fusion(dtype = x, shape = plan.checked_result_shape(Direction::Forward, x, indices))]
    fn max_unpool_int(
        x: IntTensor<Self>,
        indices: IntTensor<Self>,
        plan: UnpoolPlan,
    ) -> IntTensor<Self> {
        composition::max_unpool_int::<Self>(x, indices, plan)
    }

    /// The gradient of `x`: `grad[indices[p]]` where element `p` won the write there, else zero.
    #[fusion(dtype = grad, shape = plan.checked_result_shape(Direction::Backward, grad, indices))]
    fn max_unpool_backward(
        grad: FloatTensor<Self>,
        indices: IntTensor<Self>,
        plan: UnpoolPlan,
    ) -> FloatTensor<Self> {
        composition::max_unpool_backward::<Self>(grad, indices, plan)
    }

    /// Max-pools `x`: each window's first maximum (or last NaN) and its row-major position in the
    /// unpadded plane (global for ONNX's indices), of dtype `plan.index_dtype()`.
    #[fusion(meta = pool_outputs)]
    fn max_pool_with_indices(
        x: FloatTensor<Self>,
        plan: PoolPlan,
    ) -> (FloatTensor<Self>, IntTensor<Self>) {
        composition::max_pool_with_indices::<Self>(x, plan)
    }

    /// [`max_pool_with_indices`](UnpoolBackend::max_pool_with_indices) for integer values.
    #[fusion(meta = pool_outputs)]
    fn max_pool_with_indices_int(
        x: IntTensor<Self>,
        plan: PoolPlan,
    ) -> (IntTensor<Self>, IntTensor<Self>) {
        composition::max_pool_with_indices_int::<Self>(x, plan)
    }

    /// The gradient of the pool's `x`, summed in a fixed order so every run gives the same bits.
    #[fusion(dtype = grad, shape = plan.checked_pool_input_shape(grad, indices))]
    fn max_pool_with_indices_backward(
        grad: FloatTensor<Self>,
        indices: IntTensor<Self>,
        plan: PoolPlan,
    ) -> FloatTensor<Self> {
        composition::max_pool_with_indices_backward::<Self>(grad, indices, plan)
    }

    /// A `[1]` `U32` tensor: bit [`INDEX_OUT_OF_RANGE`] if some index is out of range, and
    /// [`INDEX_MAY_SHARE_TARGET`] unless every index lies in its own cell (set if unchecked).
    #[fusion(dtype = burn::tensor::DType::U32, shape = plan.checked_flag_shape(indices))]
    fn max_unpool_index_check(indices: IntTensor<Self>, plan: UnpoolPlan) -> IntTensor<Self> {
        composition::max_unpool_index_check::<Self>(indices, plan)
    }
}

/// The pool's outputs as Fusion registers them: the values, of `x`'s dtype, and the indices.
#[cfg(any(feature = "wgpu", feature = "vulkan", feature = "metal"))]
fn pool_outputs(x: &TensorSpec, plan: &PoolPlan) -> (TensorSpec, TensorSpec) {
    plan.assert_input("max_pool_with_indices", &x.shape);
    let shape = Shape::from(plan.output_shape());
    (
        TensorSpec::new(shape.clone(), x.dtype),
        TensorSpec::new(shape, plan.index_dtype()),
    )
}

impl PoolPlan {
    #[track_caller]
    pub(crate) fn checked_pool_input_shape(&self, grad: &[usize], indices: &[usize]) -> Shape {
        self.assert_pooled("max_pool_with_indices_backward", grad, indices);
        Shape::from(self.input_shape())
    }
}

impl UnpoolPlan {
    #[track_caller]
    pub(crate) fn checked_result_shape(
        &self,
        direction: Direction,
        input: &[usize],
        indices: &[usize],
    ) -> Shape {
        let op = match direction {
            Direction::Forward => "max_unpool",
            Direction::Backward => "max_unpool_backward",
        };
        self.assert_inputs(op, input, indices, direction);
        Shape::from(self.result_shape(direction))
    }

    #[track_caller]
    pub(crate) fn checked_flag_shape(&self, indices: &[usize]) -> Shape {
        self.assert_indices("max_unpool_index_check", indices);
        Shape::new([1])
    }
}
